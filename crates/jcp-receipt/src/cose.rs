//! The JCR-1 envelope: canonical det-CBOR core inside a tagged (18)
//! `COSE_Sign1` (RFC 9052), EdDSA (-8), `kid` = the steward's `did:key` (UTF-8),
//! built and parsed with `coset`. Verification recomputes the
//! `Sig_structure` from the protected header's **original bytes**
//! (`ProtectedHeader::original_data`), never from a re-encoding.
//!
//! Two private protected-header labels place a signed record in its stream:
//! `"jcp-seq"` (the writer's record sequence number) and `"jcp-known-through"`
//! (the enforcement point's revocation-knowledge marker, §4.3). Both are
//! signed; neither is part of the `jcp/2` core, whose field list stays exactly
//! §8's (docs/decisions.md, "JCR-1 stream position").

use coset::cbor::value::Value as CborValue;
use coset::iana::{self, EnumI64};
use coset::{CoseSign1, CoseSign1Builder, HeaderBuilder, Label, TaggedCborSerializable};
use jcp::cbor::{self, ContentId, Value};
use jcp::identity::{Did, Keypair};

use crate::error::ReceiptError;

/// Protected-header label of the stream sequence number.
pub const SEQ_LABEL: &str = "jcp-seq";
/// Protected-header label of the revocation-knowledge marker (§4.3).
pub const KNOWN_THROUGH_LABEL: &str = "jcp-known-through";

/// Where a signed record stands: its sequence number in the writer's stream
/// and the writer's revocation-knowledge marker when it was sealed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    /// The writer's record sequence number (absent in published legacy receipts).
    pub seq: Option<u64>,
    /// `known_through`: how current the writer's revocation knowledge was.
    /// Absent = the point did not say (§4.3: not the same as current).
    pub known_through: Option<u64>,
}

/// A caching `did:key` parser: parsing decompresses a curve point, which costs
/// as much as a quarter of a signature check, and a stream names few keys.
#[derive(Debug, Default)]
pub struct DidCache {
    /// Keyed by the `did:key` string's bytes, so a lookup needs no UTF-8
    /// check (a hit equals a string that parsed).
    map: std::collections::HashMap<Box<[u8]>, Did, std::hash::BuildHasherDefault<TextHasher>>,
}

/// A small non-cryptographic hasher for the did cache (keys are `did:key`
/// strings we parsed; collisions only cost a comparison). Hand-written to
/// avoid a dependency for one map; SipHash dominated the lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct TextHasher(u64);

impl std::hash::Hasher for TextHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0 ^ 0x9e37_79b9_7f4a_7c15;
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7cc1_b727_220a_95);
        }
        self.0 = h;
    }
}

impl DidCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`DidCache::parse`] over raw bytes: a recalled key is found by its
    /// bytes; anything else must be UTF-8 and a valid `did:key`.
    pub fn parse_bytes(&mut self, b: &[u8]) -> Result<Did, jcp::identity::IdentityError> {
        if let Some(d) = self.map.get(b) {
            return Ok(*d);
        }
        // Not UTF-8, so not `did:key:…` either.
        let s = std::str::from_utf8(b).map_err(|_| jcp::identity::IdentityError::NotDidKey)?;
        let d = Did::parse(s)?;
        if self.map.len() < 4096 {
            self.map.insert(b.into(), d);
        }
        Ok(d)
    }

    /// Parses (or recalls) a `did:key`.
    pub fn parse(&mut self, s: &str) -> Result<Did, jcp::identity::IdentityError> {
        self.parse_bytes(s.as_bytes())
    }
}

/// A JCR-1 envelope opened but whose signature is not yet checked.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The steward named by the COSE `kid`.
    pub steward: Did,
    /// Stream position from the protected header.
    pub position: Position,
    /// The `Sig_structure` bytes (`ToBeSigned`), built over the protected
    /// header's original bytes.
    pub tbs: Vec<u8>,
    /// The Ed25519 signature.
    pub signature: [u8; 64],
    /// The record's id: blake3 of the whole envelope bytes.
    pub id: ContentId,
}

/// A JCR-1 envelope opened on the audit's hot path: like [`Sealed`] but
/// without the record id, which costs a blake3 pass over the whole record
/// and is needed only for records that something refers to (an allow, which
/// its outcome names). [`Unsealed::identify`] adds it.
#[derive(Debug, Clone)]
pub struct Unsealed {
    /// The steward named by the COSE `kid`.
    pub steward: Did,
    /// Stream position from the protected header.
    pub position: Position,
    /// The `Sig_structure` bytes (`ToBeSigned`).
    pub tbs: Vec<u8>,
    /// The Ed25519 signature.
    pub signature: [u8; 64],
}

impl Unsealed {
    /// Adds the record id: blake3 of the whole envelope `bytes` this was
    /// opened from.
    pub fn identify(self, bytes: &[u8]) -> Sealed {
        Sealed {
            steward: self.steward,
            position: self.position,
            tbs: self.tbs,
            signature: self.signature,
            id: ContentId::of_bytes(bytes),
        }
    }

    /// Checks the signature under the `kid` (`verify_strict`).
    pub fn verify_signature(&self) -> Result<(), ReceiptError> {
        if self.steward.verify(&self.tbs, &self.signature) {
            Ok(())
        } else {
            Err(ReceiptError::BadSignature(self.steward.to_did_string()))
        }
    }
}

impl From<Sealed> for Unsealed {
    fn from(s: Sealed) -> Self {
        Self { steward: s.steward, position: s.position, tbs: s.tbs, signature: s.signature }
    }
}

impl Sealed {
    /// Checks the signature under the `kid` (`verify_strict`).
    pub fn verify_signature(&self) -> Result<(), ReceiptError> {
        if self.steward.verify(&self.tbs, &self.signature) {
            Ok(())
        } else {
            Err(ReceiptError::BadSignature(self.steward.to_did_string()))
        }
    }
}

fn head_len(n: usize) -> usize {
    match n {
        0..=23 => 1,
        24..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Seals a canonical core into a tagged `COSE_Sign1` under `steward`.
pub(crate) fn seal(core: &Value, position: Position, steward: &Keypair) -> Result<Vec<u8>, ReceiptError> {
    let kid = steward.did().to_did_string().into_bytes();
    let mut hb = HeaderBuilder::new().algorithm(iana::Algorithm::EdDSA).key_id(kid);
    if let Some(seq) = position.seq {
        hb = hb.text_value(SEQ_LABEL.to_owned(), CborValue::Integer(seq.into()));
    }
    if let Some(k) = position.known_through {
        hb = hb.text_value(KNOWN_THROUGH_LABEL.to_owned(), CborValue::Integer(k.into()));
    }
    let protected = hb.build();
    let sign1 = CoseSign1Builder::new()
        .protected(protected)
        .payload(core.encode())
        .create_signature(b"", |tbs| steward.sign(tbs).to_vec())
        .build();
    sign1.to_tagged_vec().map_err(|e| ReceiptError::CoseMalformed(format!("encoding failed: {e:?}")))
}

fn cose_err(e: &coset::CoseError) -> ReceiptError {
    ReceiptError::CoseMalformed(format!("{e:?}"))
}

fn read_uint(v: &CborValue, what: &str) -> Result<u64, ReceiptError> {
    match v {
        CborValue::Integer(i) => u64::try_from(*i)
            .map_err(|_| ReceiptError::CoseMalformed(format!("{what} must be an unsigned integer"))),
        _ => Err(ReceiptError::CoseMalformed(format!("{what} must be an unsigned integer"))),
    }
}

fn push_bstr(out: &mut Vec<u8>, b: &[u8]) {
    let n = b.len() as u64;
    match b.len() {
        0..=23 => out.push(0x40 | u8::try_from(n).unwrap_or(0)),
        24..=0xff => out.extend_from_slice(&[0x58, u8::try_from(n).unwrap_or(0)]),
        0x100..=0xffff => {
            out.push(0x59);
            out.extend_from_slice(&u16::try_from(n).unwrap_or(0).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0x5a);
            out.extend_from_slice(&u32::try_from(n).unwrap_or(0).to_be_bytes());
        }
        _ => {
            out.push(0x5b);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
    out.extend_from_slice(b);
}

/// The RFC 9052 §4.4 `Sig_structure` for a `COSE_Sign1` with empty external
/// AAD, over the protected header's **original bytes**:
/// `["Signature1", protected, h'', payload]`. Written directly rather than
/// through `CoseSign1::tbs_data` (which clones the header and re-serialises
/// through a value tree) because the audit builds one per record; the test
/// `s8_verification_uses_the_protected_headers_original_bytes` holds the two
/// byte-identical.
pub fn sig_structure(protected_original: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + protected_original.len() + payload.len());
    out.push(0x84);
    out.push(0x6a);
    out.extend_from_slice(b"Signature1");
    push_bstr(&mut out, protected_original);
    out.push(0x40);
    push_bstr(&mut out, payload);
    out
}

/// Opens a JCR-1 envelope: tag 18, canonical layout, EdDSA, a `did:key` `kid`,
/// an inline payload that is canonical det-CBOR. Returns the envelope and the
/// decoded core. Does not check the signature.
pub fn open(bytes: &[u8], dids: &mut DidCache) -> Result<(Sealed, Value), ReceiptError> {
    // Tag 18 is required: an untagged `COSE_Sign1` is not a JCR-1 record.
    if bytes.first() != Some(&0xd2) {
        return Err(ReceiptError::CoseMalformed("missing COSE_Sign1 tag 18".into()));
    }
    let sign1 = CoseSign1::from_tagged_slice(bytes).map_err(|e| cose_err(&e))?;
    let Some(payload) = sign1.payload.as_deref() else {
        return Err(ReceiptError::DetachedPayload);
    };
    let Some(protected_bytes) = sign1.protected.original_data.as_deref() else {
        return Err(ReceiptError::CoseMalformed("protected header bytes unavailable".into()));
    };
    if !sign1.unprotected.is_empty() {
        return Err(ReceiptError::CoseNonCanonical("the unprotected header must be empty in JCR-1".into()));
    }
    if sign1.signature.len() != 64 {
        return Err(ReceiptError::CoseMalformed(format!("signature is {} bytes, not 64", sign1.signature.len())));
    }
    // The one canonical layout: tag, array(4), bstr protected, {} , bstr payload, bstr(64) sig.
    let canonical_len = 2
        + head_len(protected_bytes.len())
        + protected_bytes.len()
        + 1
        + head_len(payload.len())
        + payload.len()
        + 2
        + 64;
    if canonical_len != bytes.len() || bytes[1] != 0x84 {
        return Err(ReceiptError::CoseNonCanonical("envelope is not in its shortest definite-length form".into()));
    }
    if let Err(e) = cbor::decode(protected_bytes, cbor::Profile::Deterministic) {
        return Err(ReceiptError::CoseNonCanonical(format!("protected header: {e}")));
    }
    let h = &sign1.protected.header;
    match &h.alg {
        Some(coset::RegisteredLabelWithPrivate::Assigned(iana::Algorithm::EdDSA)) => {}
        other => return Err(ReceiptError::WrongAlgorithm(format!("{other:?}"))),
    }
    if !h.crit.is_empty() || h.content_type.is_some() || !h.iv.is_empty() || !h.partial_iv.is_empty() {
        return Err(ReceiptError::CoseMalformed("unexpected protected header parameters".into()));
    }
    let kid = std::str::from_utf8(&h.key_id).map_err(|_| ReceiptError::BadKid("kid is not UTF-8".into()))?;
    if kid.is_empty() {
        return Err(ReceiptError::BadKid("no kid in the protected header".into()));
    }
    let steward = dids.parse(kid).map_err(|e| ReceiptError::BadKid(format!("{kid:?}: {e}")))?;
    let mut position = Position::default();
    for (label, v) in &h.rest {
        match label {
            Label::Text(t) if t == SEQ_LABEL => position.seq = Some(read_uint(v, SEQ_LABEL)?),
            Label::Text(t) if t == KNOWN_THROUGH_LABEL => {
                position.known_through = Some(read_uint(v, KNOWN_THROUGH_LABEL)?);
            }
            other => return Err(ReceiptError::CoseMalformed(format!("unknown protected header label {other:?}"))),
        }
    }
    let core = cbor::decode_strict(payload)?;
    let mut signature = [0u8; 64];
    signature.copy_from_slice(&sign1.signature);
    let tbs = sig_structure(protected_bytes, payload);
    Ok((Sealed { steward, position, tbs, signature, id: ContentId::of_bytes(bytes) }, core))
}

/// The algorithm id of EdDSA, for tests and docs.
pub fn eddsa_alg_id() -> i64 {
    iana::Algorithm::EdDSA.to_i64()
}
