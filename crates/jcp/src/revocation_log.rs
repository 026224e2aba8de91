//! The issuer's revocation log (§4.3; issue 34): the revocations an issuer
//! sent down its revocation feed, each at the marker it was issued at,
//! signed by the feed key so that the marker is covered.
//!
//! §4.3 judges a point's allow against "a revocation issued at marker `M`".
//! The points record the revocations they hear, with the marker they heard
//! them at; an auditor who has only those records cannot tell a point that
//! recorded a revocation at the wrong marker from one that recorded it
//! right. The issuer's own log is the other side: `jcp audit
//! --revocation-log` judges every allow against the marker the issuer
//! issued each revocation at, and names every point whose notice states
//! another marker, and every recorded revocation the issuer never logged.
//!
//! Each entry's signature is the signature of the signed feed message the
//! issuer sent (`jcp feed revoke --key K --log FILE` writes both at once):
//! Ed25519 by the feed key over the canonical bytes of
//! `{msg: "revocation", revocation, grant, marker}` ([`signed_bytes`]).
//!
//! ```text
//! {"format":"jcp-revocation-log/1"}
//! {"marker":10,"by":"did:key:…","sig":"<128 hex>","revocation":"<hex CBOR>","grant":"<hex CBOR>"}
//! …
//! ```
//! One JSON object a line, the header first. Reading is strict: no other
//! member, markers never going back, no revocation twice, every signature
//! and every revocation's authority checked, the signer one of the keys
//! the auditor trusts.

use std::collections::HashMap;

use crate::cbor::{self, ContentId, Value};
use crate::grant::SignedGrant;
use crate::identity::{Did, Keypair};
use crate::revocation::SignedRevocation;
use crate::Error;

/// The header line's format name.
pub const FORMAT: &str = "jcp-revocation-log/1";

/// The most bytes a log may hold (a line is a grant and a revocation: a
/// few kilobytes).
pub const MAX_LOG_BYTES: usize = 256 << 20;

/// The bytes a feed key signs for a revocation at `marker`: those of the
/// signed revocation feed message (`jcp_wire`'s `Feed::Revocation`).
pub fn signed_bytes(revocation: &SignedRevocation, grant: &SignedGrant, marker: u64) -> Vec<u8> {
    feed_value(revocation, grant, marker).encode()
}

/// The revocation feed message `{msg: "revocation", revocation, grant,
/// marker}` as a canonical value (the wire's message, defined once here).
pub fn feed_value(revocation: &SignedRevocation, grant: &SignedGrant, marker: u64) -> Value {
    cbor::map([
        ("msg", Some(Value::text("revocation"))),
        ("revocation", Some(revocation.to_value())),
        ("grant", Some(grant.to_value())),
        ("marker", Some(Value::Uint(marker))),
    ])
}

/// One logged revocation, its signature checked when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The marker it was issued at.
    pub marker: u64,
    /// The signed revocation.
    pub revocation: SignedRevocation,
    /// The grant it revokes (its authority is checked against it).
    pub grant: SignedGrant,
    /// The feed key that signed the entry.
    pub by: Did,
    /// Ed25519 by `by` over [`signed_bytes`].
    pub sig: [u8; 64],
    /// Its line in the file (1-based; 0 for an entry not read from one).
    pub line: usize,
}

impl Entry {
    /// Signs `revocation` of `grant` at `marker` with the feed key.
    pub fn sign(revocation: SignedRevocation, grant: SignedGrant, marker: u64, key: &Keypair) -> Self {
        let sig = key.sign(&signed_bytes(&revocation, &grant, marker));
        Self { marker, revocation, grant, by: key.did(), sig, line: 0 }
    }

    /// The entry as one line of the log (no line end).
    pub fn to_line(&self) -> String {
        serde_json::json!({
            "marker": self.marker,
            "by": self.by.to_did_string(),
            "sig": hex::encode(self.sig),
            "revocation": hex::encode(self.revocation.to_bytes()),
            "grant": hex::encode(self.grant.to_bytes()),
        })
        .to_string()
    }

    /// The key of the revocation it logs: its content and signature (the
    /// same revocation recorded by many points is one).
    pub fn key(&self) -> (ContentId, [u8; 64]) {
        (self.revocation.id(), *self.revocation.signature())
    }
}

/// The log's header line.
pub fn header_line() -> String {
    serde_json::json!({ "format": FORMAT }).to_string()
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    marker: u64,
    by: String,
    sig: String,
    revocation: String,
    grant: String,
}

/// An issuer's revocation log, read and checked: every entry signed by a
/// trusted feed key, every revocation with authority over its grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssuerLog {
    entries: Vec<Entry>,
    index: HashMap<(ContentId, [u8; 64]), usize>,
}

impl IssuerLog {
    /// Reads a log's bytes, trusting entries signed by `keys` only.
    ///
    /// # Errors
    /// [`Error::RevocationLogInvalid`] naming the line and what is wrong.
    pub fn read(bytes: &[u8], keys: &[Did]) -> Result<Self, Error> {
        let bad = |line: usize, problem: String| Error::RevocationLogInvalid { line, problem };
        if bytes.len() > MAX_LOG_BYTES {
            return Err(bad(0, format!("{} bytes, more than the {MAX_LOG_BYTES} a log may hold", bytes.len())));
        }
        if keys.is_empty() {
            return Err(bad(0, "no feed key is trusted: name the key whose signature covers the markers".into()));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = 1 + bytes[..e.valid_up_to()].split(|b| *b == b'\n').count() - 1;
            bad(line, "not UTF-8 text".into())
        })?;
        let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
        let (_, first) = lines.next().unwrap_or((1, ""));
        let h: Header = serde_json::from_str(first)
            .map_err(|e| bad(1, format!("the header {{\"format\": \"{FORMAT}\"}} is expected: {e}")))?;
        if h.format != FORMAT {
            return Err(bad(1, format!("format {:?}, this reads {FORMAT:?}", h.format)));
        }
        let mut log = Self::default();
        let mut last: Option<u64> = None;
        for (n, l) in lines {
            if l.is_empty() {
                continue;
            }
            let e = entry_of(n, l, keys)?;
            if let Some(prev) = last.filter(|p| e.marker < *p) {
                return Err(bad(n, format!("marker {} after {prev}: a feed's markers never go back (§4.3)", e.marker)));
            }
            last = Some(e.marker);
            let key = e.key();
            if let Some(&i) = log.index.get(&key) {
                return Err(bad(n, format!("revocation {} is logged already, on line {}", key.0, log.entries[i].line)));
            }
            log.index.insert(key, log.entries.len());
            log.entries.push(e);
        }
        Ok(log)
    }

    /// Its entries, in the order logged.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry of a signed revocation, by its content id and signature.
    pub fn get(&self, key: &(ContentId, [u8; 64])) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.entries[i])
    }
}

fn entry_of(n: usize, l: &str, keys: &[Did]) -> Result<Entry, Error> {
    let bad = |problem: String| Error::RevocationLogInvalid { line: n, problem };
    let raw: Line = serde_json::from_str(l).map_err(|e| bad(format!("not an entry: {e}")))?;
    let by = Did::parse(&raw.by).map_err(|e| bad(format!("by: {e}")))?;
    if !keys.contains(&by) {
        return Err(bad(format!("signed by {by}, which is not a feed key this audit trusts")));
    }
    let hex_of = |field: &str, s: &str| hex::decode(s).map_err(|e| bad(format!("{field}: not hex: {e}")));
    let sig: [u8; 64] =
        hex_of("sig", &raw.sig)?.try_into().map_err(|v: Vec<u8>| bad(format!("sig: {} bytes, not 64", v.len())))?;
    let revocation = SignedRevocation::from_bytes(&hex_of("revocation", &raw.revocation)?)
        .map_err(|e| bad(format!("revocation: {e}")))?;
    let grant = SignedGrant::from_bytes(&hex_of("grant", &raw.grant)?).map_err(|e| bad(format!("grant: {e}")))?;
    if !by.verify(&signed_bytes(&revocation, &grant, raw.marker), &sig) {
        return Err(bad(format!("the signature does not verify under {by}: its marker or contents were changed")));
    }
    revocation
        .check_authority(&grant)
        .map_err(|e| bad(format!("the revocation has no authority over its grant: {e}")))?;
    Ok(Entry { marker: raw.marker, revocation, grant, by, sig, line: n })
}
