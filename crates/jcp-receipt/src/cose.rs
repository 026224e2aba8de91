//! The JCR-1 envelope: canonical det-CBOR core inside a tagged (18)
//! `COSE_Sign1` (RFC 9052), `EdDSA` (-8), `kid` = the steward's `did:key` (UTF-8),
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
use coset::{CoseSign1, Label, TaggedCborSerializable};
use jcp::cbor::{self, ContentId, Value};
use jcp::identity::{Did, Keypair};

use crate::error::Error;

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
#[derive(Debug)]
pub struct DidCache {
    /// Keyed by the `did:key` string's bytes, so a lookup needs no UTF-8
    /// check (a hit equals a string that parsed); values index `keys`.
    map: std::collections::HashMap<Box<[u8]>, usize, std::hash::BuildHasherDefault<TextHasher>>,
    /// Shared, so an opened envelope names its steward without copying
    /// the parsed key (a `Did` is 224 bytes; envelopes move a few times).
    keys: Vec<(Box<[u8]>, std::sync::Arc<Did>)>,
    /// Direct-mapped recall before the map: slot (a hash of the text's
    /// last eight bytes, base58 digits of the key) → 1 + index into `keys`,
    /// 0 = empty. A hit is one comparison with text that parsed before; a
    /// stream names few keys, so the map is rarely reached.
    slots: [u16; DID_SLOTS],
    /// Recently parsed content ids by their hex text, direct-mapped
    /// ([`DidCache::content_id`]).
    cids: Vec<Option<([u8; 64], ContentId)>>,
    /// A key parsed once the table is full (returned by reference).
    spill: Option<std::sync::Arc<Did>>,
}

impl Default for DidCache {
    fn default() -> Self {
        Self {
            map: std::collections::HashMap::default(),
            keys: Vec::new(),
            slots: [0; DID_SLOTS],
            cids: Vec::new(),
            spill: None,
        }
    }
}

/// Slots of the direct-mapped did table (the top eight bits of a hash pick one).
const DID_SLOTS: usize = 256;
const MAX_KEYS: usize = 4096;

/// A small non-cryptographic hasher for the did cache (keys are `did:key`
/// strings we parsed; collisions only cost a comparison). Hand-written to
/// avoid a dependency for one map; `SipHash` dominated the lookup.
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
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
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
        self.recall(b).map(|d| **d)
    }

    /// [`DidCache::parse_bytes`] without copying the parsed key out: the
    /// public-key bytes, for callers that key maps by them or compare.
    pub fn key_bytes(&mut self, b: &[u8]) -> Result<[u8; 32], jcp::identity::IdentityError> {
        self.recall(b).map(|d| *d.public_bytes())
    }

    /// [`DidCache::parse_bytes`], shared with the cache (no copy of the key).
    pub fn shared(&mut self, b: &[u8]) -> Result<std::sync::Arc<Did>, jcp::identity::IdentityError> {
        self.recall(b).cloned()
    }

    fn recall(&mut self, b: &[u8]) -> Result<&std::sync::Arc<Did>, jcp::identity::IdentityError> {
        let slot = did_slot(b);
        let hit = self.slots[slot].checked_sub(1).map(usize::from);
        let i = if let Some(i) = hit.filter(|&i| self.keys.get(i).is_some_and(|(k, _)| crate::raw::same_bytes(k, b))) {
            i
        } else if let Some(&i) = self.map.get(b) {
            i
        } else {
            // Not UTF-8, so not `did:key:…` either.
            let s = std::str::from_utf8(b).map_err(|_| jcp::identity::IdentityError::NotDidKey)?;
            let d = std::sync::Arc::new(Did::parse(s)?);
            if self.keys.len() >= MAX_KEYS {
                return Ok(self.spill.insert(d));
            }
            self.map.insert(b.into(), self.keys.len());
            self.keys.push((b.into(), d));
            self.keys.len() - 1
        };
        // Below MAX_KEYS (4 096), so the index fits the slot's u16.
        self.slots[slot] = u16::try_from(i + 1).unwrap_or(0);
        Ok(&self.keys[i].1)
    }

    /// Parses (or recalls) a `did:key`.
    pub fn parse(&mut self, s: &str) -> Result<Did, jcp::identity::IdentityError> {
        self.parse_bytes(s.as_bytes())
    }

    /// [`ContentId::parse_bytes`], recalling the last id parsed in the same
    /// slot of a small direct-mapped table: a hit is a 64-byte comparison
    /// with text that parsed before (parsing is a function of the text, so
    /// a hit returns exactly what parsing would); a miss parses.
    pub fn content_id(&mut self, b: &[u8]) -> Option<ContentId> {
        let Ok(text) = <&[u8; 64]>::try_from(b) else {
            return None;
        };
        if self.cids.is_empty() {
            self.cids = vec![None; CID_SLOTS];
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&text[..8]);
        let slot = (u64::from_le_bytes(w).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % CID_SLOTS;
        if let Some((t, id)) = &self.cids[slot] {
            if crate::raw::same_bytes(t, text) {
                return Some(*id);
            }
        }
        let id = ContentId::parse_bytes(b)?;
        self.cids[slot] = Some((*text, id));
        Some(id)
    }
}

/// A did text's slot in the direct-mapped table: a multiplicative hash of
/// its last eight bytes (of a `did:key`, base58 digits of the key itself).
fn did_slot(b: &[u8]) -> usize {
    let mut w = [0u8; 8];
    let tail = &b[b.len().saturating_sub(8)..];
    w[..tail.len()].copy_from_slice(tail);
    (u64::from_le_bytes(w).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % DID_SLOTS
}

/// Slots of the content-id table (the top six bits of a hash pick one).
const CID_SLOTS: usize = 64;

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
/// its outcome names), and with the `Sig_structure` kept as pieces of the
/// record instead of a copy ([`Unsealed::tbs_pieces`]). [`Unsealed::identify`]
/// adds the id.
#[derive(Debug, Clone)]
pub struct Unsealed<'a> {
    /// The steward named by the COSE `kid`.
    pub steward: std::sync::Arc<Did>,
    /// Stream position from the protected header.
    pub position: Position,
    /// The Ed25519 signature.
    pub signature: [u8; 64],
    tbs: Tbs<'a>,
}

/// The `Sig_structure` bytes, whole or as the four pieces it is made of.
#[derive(Debug, Clone)]
enum Tbs<'a> {
    Whole(Vec<u8>),
    /// `["Signature1", protected, h'', payload]`: `head` is everything up to
    /// and including the protected header's length, `mid` is `h''` and the
    /// payload's length; `protected` and `payload` are the record's own bytes.
    Pieces {
        head: TbsHead,
        protected: &'a [u8],
        mid: TbsHead,
        payload: &'a [u8],
    },
}

/// A few bytes of CBOR heads kept inline (at most 21).
#[derive(Debug, Clone, Copy)]
struct TbsHead {
    bytes: [u8; 24],
    len: usize,
}

impl TbsHead {
    fn new() -> Self {
        Self { bytes: [0; 24], len: 0 }
    }

    fn push(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    fn push_bstr_head(&mut self, n: usize) {
        let (h, len) = bstr_head(n);
        self.push(&h[..len]);
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<'a> Unsealed<'a> {
    /// The envelope of a record in its canonical layout, over its own bytes.
    pub(crate) fn from_parts(
        steward: std::sync::Arc<Did>,
        position: Position,
        signature: [u8; 64],
        protected: &'a [u8],
        payload: &'a [u8],
    ) -> Self {
        let (head, mid) = sig_structure_heads(protected.len(), payload.len());
        Self { steward, position, signature, tbs: Tbs::Pieces { head, protected, mid, payload } }
    }

    /// The `Sig_structure` (`ToBeSigned`) as consecutive pieces: hashing them
    /// in order is hashing [`Unsealed::tbs`].
    pub fn tbs_pieces(&self) -> [&[u8]; 4] {
        match &self.tbs {
            Tbs::Whole(v) => [v.as_slice(), &[], &[], &[]],
            Tbs::Pieces { head, protected, mid, payload } => [head.as_slice(), protected, mid.as_slice(), payload],
        }
    }

    /// The `Sig_structure` (`ToBeSigned`) in one piece.
    pub fn tbs(&self) -> Vec<u8> {
        match &self.tbs {
            Tbs::Whole(v) => v.clone(),
            Tbs::Pieces { .. } => self.tbs_pieces().concat(),
        }
    }

    /// Adds the record id: blake3 of the whole envelope `bytes` this was
    /// opened from.
    pub fn identify(self, bytes: &[u8]) -> Sealed {
        let tbs = match self.tbs {
            Tbs::Whole(v) => v,
            Tbs::Pieces { .. } => self.tbs(),
        };
        Sealed {
            steward: *self.steward,
            position: self.position,
            tbs,
            signature: self.signature,
            id: ContentId::of_bytes(bytes),
        }
    }

    /// Checks the signature under the `kid` (the one Ed25519 predicate, `jcp::identity::ed25519`).
    pub fn verify_signature(&self) -> Result<(), Error> {
        if self.steward.verify(&self.tbs(), &self.signature) {
            Ok(())
        } else {
            Err(Error::BadSignature(self.steward.to_did_string()))
        }
    }
}

impl From<Sealed> for Unsealed<'static> {
    fn from(s: Sealed) -> Self {
        Self {
            steward: std::sync::Arc::new(s.steward),
            position: s.position,
            signature: s.signature,
            tbs: Tbs::Whole(s.tbs),
        }
    }
}

impl Sealed {
    /// Checks the signature under the `kid` (the one Ed25519 predicate, `jcp::identity::ed25519`).
    pub fn verify_signature(&self) -> Result<(), Error> {
        if self.steward.verify(&self.tbs, &self.signature) {
            Ok(())
        } else {
            Err(Error::BadSignature(self.steward.to_did_string()))
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
///
/// Written directly in the one canonical layout [`open`] accepts (tag 18,
/// `[bstr protected, {}, bstr payload, bstr(64) signature]`) rather than
/// through `coset`'s builder, which builds and clones value trees around
/// the signature: sealing runs once per decision on the endpoint's core
/// thread. The test `s8_the_direct_seal_is_cosets_byte_for_byte` holds the
/// two byte-identical ([`seal_with_coset`] stays as the reference).
pub(crate) fn seal(core: &Value, position: Position, steward: &Keypair) -> Vec<u8> {
    seal_payload(&core.encode(), position, steward)
}

/// [`seal`] of a core already written as its canonical bytes.
pub(crate) fn seal_payload(payload: &[u8], position: Position, steward: &Keypair) -> Vec<u8> {
    let protected = protected_header(steward.did().to_did_string().as_bytes(), position);
    let signature = steward.sign(&sig_structure(&protected, payload));
    let mut out = Vec::with_capacity(2 + 9 + protected.len() + 1 + 9 + payload.len() + 2 + 64);
    out.extend_from_slice(&[0xd2, 0x84]);
    for (i, bstr) in [&protected[..], payload, &signature[..]].into_iter().enumerate() {
        if i == 1 {
            // The unprotected header, empty in JCR-1, sits between the two.
            out.push(0xa0);
        }
        let (head, len) = bstr_head(bstr.len());
        out.extend_from_slice(&head[..len]);
        out.extend_from_slice(bstr);
    }
    out
}

/// The protected header as minted: `{1: -8 (EdDSA), 4: kid, ?"jcp-seq":
/// uint, ?"jcp-known-through": uint}`, canonical (the order `coset` writes
/// these labels in is also their canonical order).
fn protected_header(kid: &[u8], position: Position) -> Vec<u8> {
    // Label 1 (alg) is -8, EdDSA: CBOR's negative 7 (`-1 - 7`).
    let mut entries = vec![(Value::Uint(1), Value::Nint(7)), (Value::Uint(4), Value::Bytes(kid.to_vec()))];
    if let Some(seq) = position.seq {
        entries.push((Value::text(SEQ_LABEL), Value::Uint(seq)));
    }
    if let Some(k) = position.known_through {
        entries.push((Value::text(KNOWN_THROUGH_LABEL), Value::Uint(k)));
    }
    Value::Map(entries).encode()
}

/// [`seal`] through `coset`'s builder: the reference the direct seal is
/// held byte-identical to.
#[cfg(test)]
pub(crate) fn seal_with_coset(core: &Value, position: Position, steward: &Keypair) -> Result<Vec<u8>, Error> {
    use coset::{CoseSign1Builder, HeaderBuilder};
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
    sign1.to_tagged_vec().map_err(|e| Error::CoseMalformed(format!("encoding failed: {e:?}")))
}

fn cose_err(e: &coset::CoseError) -> Error {
    Error::CoseMalformed(format!("{e:?}"))
}

fn read_uint(v: &CborValue, what: &str) -> Result<u64, Error> {
    match v {
        CborValue::Integer(i) => {
            u64::try_from(*i).map_err(|_| Error::CoseMalformed(format!("{what} must be an unsigned integer")))
        }
        _ => Err(Error::CoseMalformed(format!("{what} must be an unsigned integer"))),
    }
}

/// The shortest CBOR head of a byte string of `len` bytes, and its length.
fn bstr_head(len: usize) -> ([u8; 9], usize) {
    let n = len as u64;
    let be = n.to_be_bytes();
    let mut h = [0u8; 9];
    let used = match len {
        0..=23 => {
            h[0] = 0x40 | be[7];
            1
        }
        24..=0xff => {
            h[0] = 0x58;
            h[1] = be[7];
            2
        }
        0x100..=0xffff => {
            h[0] = 0x59;
            h[1..3].copy_from_slice(&be[6..]);
            3
        }
        0x1_0000..=0xffff_ffff => {
            h[0] = 0x5a;
            h[1..5].copy_from_slice(&be[4..]);
            5
        }
        _ => {
            h[0] = 0x5b;
            h[1..9].copy_from_slice(&be);
            9
        }
    };
    (h, used)
}

/// The bytes of a `Sig_structure` around its two byte strings: everything up
/// to and including the protected header's length, and `h''` with the
/// payload's length. The one place that layout is written.
fn sig_structure_heads(protected_len: usize, payload_len: usize) -> (TbsHead, TbsHead) {
    let mut head = TbsHead::new();
    head.push(&[0x84, 0x6a]);
    head.push(b"Signature1");
    head.push_bstr_head(protected_len);
    let mut mid = TbsHead::new();
    mid.push(&[0x40]);
    mid.push_bstr_head(payload_len);
    (head, mid)
}

/// The RFC 9052 §4.4 `Sig_structure` for a `COSE_Sign1` with empty external
/// AAD, over the protected header's **original bytes**:
/// `["Signature1", protected, h'', payload]`. Written directly rather than
/// through `CoseSign1::tbs_data` (which clones the header and re-serialises
/// through a value tree) because the audit builds one per record; the test
/// `s8_verification_uses_the_protected_headers_original_bytes` holds the two
/// byte-identical.
pub fn sig_structure(protected_original: &[u8], payload: &[u8]) -> Vec<u8> {
    let (head, mid) = sig_structure_heads(protected_original.len(), payload.len());
    [head.as_slice(), protected_original, mid.as_slice(), payload].concat()
}

/// Opens a JCR-1 envelope: tag 18, canonical layout, `EdDSA`, a `did:key` `kid`,
/// an inline payload that is canonical det-CBOR. Returns the envelope and the
/// decoded core. Does not check the signature.
pub fn open(bytes: &[u8], dids: &mut DidCache) -> Result<(Sealed, Value), Error> {
    // Tag 18 is required: an untagged `COSE_Sign1` is not a JCR-1 record.
    if bytes.first() != Some(&0xd2) {
        return Err(Error::CoseMalformed("missing COSE_Sign1 tag 18".into()));
    }
    let sign1 = CoseSign1::from_tagged_slice(bytes).map_err(|e| cose_err(&e))?;
    let Some(payload) = sign1.payload.as_deref() else {
        return Err(Error::DetachedPayload);
    };
    let Some(protected_bytes) = sign1.protected.original_data.as_deref() else {
        return Err(Error::CoseMalformed("protected header bytes unavailable".into()));
    };
    if !sign1.unprotected.is_empty() {
        return Err(Error::CoseNonCanonical("the unprotected header must be empty in JCR-1".into()));
    }
    if sign1.signature.len() != 64 {
        return Err(Error::CoseMalformed(format!("signature is {} bytes, not 64", sign1.signature.len())));
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
        return Err(Error::CoseNonCanonical("envelope is not in its shortest definite-length form".into()));
    }
    if let Err(e) = cbor::decode(protected_bytes, cbor::Profile::Deterministic) {
        return Err(Error::CoseNonCanonical(format!("protected header: {e}")));
    }
    let h = &sign1.protected.header;
    match &h.alg {
        Some(coset::RegisteredLabelWithPrivate::Assigned(iana::Algorithm::EdDSA)) => {}
        other => return Err(Error::WrongAlgorithm(format!("{other:?}"))),
    }
    if !h.crit.is_empty() || h.content_type.is_some() || !h.iv.is_empty() || !h.partial_iv.is_empty() {
        return Err(Error::CoseMalformed("unexpected protected header parameters".into()));
    }
    let kid = std::str::from_utf8(&h.key_id).map_err(|_| Error::BadKid("kid is not UTF-8".into()))?;
    if kid.is_empty() {
        return Err(Error::BadKid("no kid in the protected header".into()));
    }
    let steward = dids.parse(kid).map_err(|e| Error::BadKid(format!("{kid:?}: {e}")))?;
    let mut position = Position::default();
    for (label, v) in &h.rest {
        match label {
            Label::Text(t) if t == SEQ_LABEL => position.seq = Some(read_uint(v, SEQ_LABEL)?),
            Label::Text(t) if t == KNOWN_THROUGH_LABEL => {
                position.known_through = Some(read_uint(v, KNOWN_THROUGH_LABEL)?);
            }
            other => return Err(Error::CoseMalformed(format!("unknown protected header label {other:?}"))),
        }
    }
    let core = cbor::decode_strict(payload)?;
    let mut signature = [0u8; 64];
    signature.copy_from_slice(&sign1.signature);
    let tbs = sig_structure(protected_bytes, payload);
    Ok((Sealed { steward, position, tbs, signature, id: ContentId::of_bytes(bytes) }, core))
}

/// The algorithm id of `EdDSA`, for tests and docs.
pub fn eddsa_alg_id() -> i64 {
    iana::Algorithm::EdDSA.to_i64()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn s8_the_direct_seal_is_cosets_byte_for_byte() {
        assert_eq!(eddsa_alg_id(), -8);
        let k = Keypair::from_seed([7; 32]).unwrap();
        let cores = [
            cbor::map([("v", Some(Value::Uint(2)))]),
            cbor::map([("a", Some(Value::Bytes(vec![1; 300]))), ("b", Some(Value::text("x")))]),
            cbor::map([("big", Some(Value::Bytes(vec![9; 70_000])))]),
        ];
        let at = |seq, known_through| Position { seq, known_through };
        let positions = [
            at(None, None),
            at(Some(0), None),
            at(None, Some(23)),
            at(Some(24), Some(u64::from(u32::MAX) + 1)),
            at(Some(u64::MAX), Some(u64::MAX)),
        ];
        let mut dids = DidCache::new();
        for core in &cores {
            for p in positions {
                let direct = seal(core, p, &k);
                assert_eq!(direct, seal_with_coset(core, p, &k).unwrap(), "{p:?}");
                let (sealed, opened) = open(&direct, &mut dids).unwrap();
                assert_eq!((sealed.position, &opened, sealed.steward), (p, core, k.did()));
                sealed.verify_signature().unwrap();
            }
        }
    }

    #[test]
    fn s2_did_cache_returns_what_parsing_returns() {
        // 600 keys over 256 slots (collisions, evictions, map hits), each
        // looked up again interleaved with others, plus texts that must not
        // parse: a flipped base58 digit, a cut, a stray non-UTF-8 byte.
        let dids: Vec<String> = (0u8..=255)
            .chain(0u8..=255)
            .chain(0u8..88)
            .enumerate()
            .map(|(i, b)| {
                let mut seed = [b; 32];
                seed[0] = u8::try_from(i / 256).unwrap();
                Keypair::from_seed(seed).unwrap().did().to_did_string()
            })
            .collect();
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for (i, d) in dids.iter().enumerate() {
            texts.push(d.clone().into_bytes());
            if i % 9 == 0 {
                let mut bad = d.clone().into_bytes();
                let j = bad.len() - 1 - i % 40;
                bad[j] = if bad[j] == b'z' { b'y' } else { b'z' };
                texts.push(bad);
                texts.push(d.as_bytes()[..d.len() - 1].to_vec());
                let mut stray = d.clone().into_bytes();
                stray[i % d.len()] = 0xff;
                texts.push(stray);
            }
        }
        let mut cache = DidCache::new();
        for round in 0..3 {
            for (j, t) in texts.iter().enumerate() {
                let k = (j * 37 + round * 11) % texts.len();
                for x in [t, &texts[k], t] {
                    let want = std::str::from_utf8(x).ok().and_then(|s| Did::parse(s).ok());
                    assert_eq!(cache.parse_bytes(x).ok(), want, "{}", String::from_utf8_lossy(x));
                    assert_eq!(cache.key_bytes(x).ok(), want.map(|d| *d.public_bytes()));
                }
            }
        }
    }
}
