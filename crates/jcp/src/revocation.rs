//! Spec §4.3: revocation by the grant's issuer, killing the subtree.

use crate::cbor::{self, ContentId, Fields, Value};
use crate::error::Error;
use crate::grant::SignedGrant;
use crate::identity::{Did, Keypair};

/// A revocation (§4.3), unsigned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Revocation {
    /// The grant being revoked.
    pub grant_id: ContentId,
    /// Must equal that grant's issuer.
    pub revoked_by: Did,
    /// 16 random bytes.
    #[serde(serialize_with = "ser_nonce")]
    pub nonce: [u8; 16],
}

fn ser_nonce<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

impl Revocation {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("grant_id", Some(Value::text(self.grant_id.to_hex()))),
            ("revoked_by", Some(Value::text(self.revoked_by.to_did_string()))),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Reads the canonical form.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("Revocation", v)?;
        let grant_id = f.cid("grant_id")?;
        let revoked_by = Did::parse(f.text("revoked_by")?)?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self { grant_id, revoked_by, nonce })
    }

    /// Signs with the revoker's key, which must be the grant's issuer.
    pub fn issue(grant: &SignedGrant, issuer: &Keypair, nonce: Option<[u8; 16]>) -> Result<SignedRevocation, Error> {
        if issuer.did() != grant.grant().issuer {
            return Err(Error::RevocationUnauthorized(format!(
                "{} is not the issuer {} of grant {}",
                issuer.did(),
                grant.grant().issuer,
                grant.id()
            )));
        }
        let rev = Self {
            grant_id: grant.id(),
            revoked_by: issuer.did(),
            nonce: nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        let bytes = rev.to_value().encode();
        let signature = issuer.sign(&bytes);
        Ok(SignedRevocation { revocation: rev, bytes, signature })
    }
}

/// A revocation with its signature, as it travels: `{revocation, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRevocation {
    revocation: Revocation,
    bytes: Vec<u8>,
    signature: [u8; 64],
}

impl SignedRevocation {
    /// Joins a revocation and a signature produced elsewhere (a threshold
    /// issuer's aggregate, §2.2), refusing one that does not verify under
    /// `revoked_by` over the revocation's canonical bytes — `bad-signature`.
    /// Authority over the grant is still checked where it is honoured.
    pub fn from_parts(revocation: Revocation, signature: [u8; 64]) -> Result<Self, Error> {
        let bytes = revocation.to_value().encode();
        if !revocation.revoked_by.verify(&bytes, &signature) {
            return Err(Error::BadSignature { object: "Revocation", signer: revocation.revoked_by.to_string() });
        }
        Ok(Self { revocation, bytes, signature })
    }

    /// The revocation (not yet admitted).
    pub fn revocation(&self) -> &Revocation {
        &self.revocation
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// The revocation's content id.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.bytes)
    }

    /// Whether the signature verifies under `revoked_by` (authority over the
    /// grant is a separate check: [`SignedRevocation::check_authority`]).
    pub fn verify_signature(&self) -> bool {
        self.revocation.revoked_by.verify(&self.bytes, &self.signature)
    }

    /// Checks authority before it may be honoured (§4.3): the ids match,
    /// the revoker is the grant's issuer, the signature verifies.
    pub fn check_authority(&self, grant: &SignedGrant) -> Result<(), Error> {
        let r = &self.revocation;
        if r.grant_id != grant.id() {
            return Err(Error::RevocationUnauthorized(format!(
                "revocation names grant {} but was presented with {}",
                r.grant_id,
                grant.id()
            )));
        }
        if r.revoked_by != grant.grant().issuer {
            return Err(Error::RevocationUnauthorized(format!(
                "revoked_by {} is not the grant's issuer {}",
                r.revoked_by,
                grant.grant().issuer
            )));
        }
        if !self.verify_signature() {
            return Err(Error::BadSignature { object: "Revocation", signer: r.revoked_by.to_string() });
        }
        Ok(())
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("revocation", Some(self.revocation.to_value())),
            ("sig", Some(Value::Bytes(self.signature.to_vec()))),
        ])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (signature checked later, against the grant).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedRevocation", v)?;
        let rv = f.req("revocation")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        Ok(Self { revocation: Revocation::from_value(rv)?, bytes: rv.encode(), signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}
