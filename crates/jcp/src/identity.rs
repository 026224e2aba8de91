//! Spec §2: every actor is an Ed25519 key expressed as a W3C `did:key`
//! (multibase base58btc `z` of the `0xed01` multicodec varint ‖ the 32-byte
//! public key). Parsing is strict (a non-canonical or small-order key is
//! refused); a signature is checked by the one Ed25519 predicate
//! ([`ed25519`]: canonical encodings, no small-order `R` or key, canonical
//! `S`, the cofactored equation), alone or many at once ([`batch`], the
//! audit's and the endpoint's callers'), with the same verdict either way
//! (docs/decisions.md, "§2 one Ed25519 predicate").

pub mod batch;
pub mod ed25519;

use std::fmt;

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

/// The multicodec prefix of an Ed25519 public key (varint of 0xed = `ed 01`).
const ED25519_MULTICODEC: [u8; 2] = [0xed, 0x01];
const DID_KEY_PREFIX: &str = "did:key:";

/// Why a `did:key` string is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// Not of the form `did:key:…`.
    #[error("not a did:key (expected the prefix `did:key:`)")]
    NotDidKey,
    /// A multibase other than base58btc (`z`).
    #[error("unsupported multibase prefix {0:?} (only base58btc `z`)")]
    WrongBase(char),
    /// Not valid base58btc, or not its one canonical spelling.
    #[error("invalid base58btc payload")]
    BadBase58,
    /// A multicodec varint in a longer form than its minimal encoding.
    #[error("non-minimal multicodec varint")]
    NonMinimalVarint,
    /// A multicodec other than Ed25519 public key (0xed).
    #[error("multicodec 0x{0:x} is not an Ed25519 public key (0xed)")]
    WrongCodec(u64),
    /// The key is not exactly 32 bytes.
    #[error("Ed25519 public key must be 32 bytes, got {0}")]
    WrongLength(usize),
    /// The bytes do not decode to a curve point.
    #[error("public key is not a valid Ed25519 point")]
    InvalidPoint,
    /// A small-order (weak) key, refused.
    #[error("small-order Ed25519 public key refused")]
    SmallOrder,
}

impl IdentityError {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotDidKey => "did-not-did-key",
            Self::WrongBase(_) => "did-wrong-base",
            Self::BadBase58 => "did-bad-base58",
            Self::NonMinimalVarint => "did-non-minimal-varint",
            Self::WrongCodec(_) => "did-wrong-codec",
            Self::WrongLength(_) => "did-wrong-length",
            Self::InvalidPoint => "did-invalid-point",
            Self::SmallOrder => "did-small-order",
        }
    }
}

/// An actor's identity: an Ed25519 verifying key, spelled as `did:key`.
///
/// The verifying key is decompressed once, when the identity is parsed, so
/// a signature check costs one `verify_strict` and nothing more.
#[derive(Clone, Copy)]
pub struct Did {
    key: [u8; 32],
    vk: VerifyingKey,
}

impl PartialEq for Did {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Did {}

impl std::hash::Hash for Did {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl PartialOrd for Did {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// How many parsed dids a thread recalls ([`Did::parse`]).
pub const PARSED_RECALL: usize = 256;

thread_local! {
    static PARSED: std::cell::RefCell<std::collections::HashMap<String, Did>> = std::cell::RefCell::new(std::collections::HashMap::new());
    static SPELLED: std::cell::RefCell<std::collections::HashMap<[u8; 32], String>> = std::cell::RefCell::new(std::collections::HashMap::new());
}

impl Ord for Did {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl Did {
    /// Parses a `did:key`, refusing every form but the canonical one.
    ///
    /// Parsing decompresses a curve point (a quarter of a signature
    /// check); a process meets few keys, so each thread recalls the last
    /// [`PARSED_RECALL`] it parsed by their exact text. A recalled did is
    /// the one that text parsed to: a string that failed is never recalled.
    pub fn parse(s: &str) -> Result<Self, IdentityError> {
        if let Some(d) = PARSED.with(|m| m.borrow().get(s).copied()) {
            return Ok(d);
        }
        let d = Self::parse_uncached(s)?;
        PARSED.with(|m| recall(&mut m.borrow_mut(), s.to_owned(), d));
        Ok(d)
    }

    fn parse_uncached(s: &str) -> Result<Self, IdentityError> {
        let rest = s.strip_prefix(DID_KEY_PREFIX).ok_or(IdentityError::NotDidKey)?;
        let mut chars = rest.chars();
        match chars.next() {
            Some('z') => {}
            Some(c) => return Err(IdentityError::WrongBase(c)),
            None => return Err(IdentityError::BadBase58),
        }
        let payload = chars.as_str();
        let raw = bs58::decode(payload).into_vec().map_err(|_| IdentityError::BadBase58)?;
        if bs58::encode(&raw).into_string() != payload {
            return Err(IdentityError::BadBase58);
        }
        let (codec, used) = read_varint(&raw)?;
        if codec != 0xed {
            return Err(IdentityError::WrongCodec(codec));
        }
        let key = &raw[used..];
        if key.len() != 32 {
            return Err(IdentityError::WrongLength(key.len()));
        }
        let mut k = [0u8; 32];
        k.copy_from_slice(key);
        Self::from_public_bytes(k)
    }

    /// Wraps 32 public-key bytes, refusing invalid and small-order points.
    pub fn from_public_bytes(key: [u8; 32]) -> Result<Self, IdentityError> {
        let vk = VerifyingKey::from_bytes(&key).map_err(|_| IdentityError::InvalidPoint)?;
        if vk.is_weak() {
            return Err(IdentityError::SmallOrder);
        }
        // RFC 8032 §5.1.3: an encoding of y ≥ p (or of x = 0 with the sign bit) is refused.
        if ed25519::point(&key).is_none() {
            return Err(IdentityError::InvalidPoint);
        }
        Ok(Self { key, vk })
    }

    /// The 32 public-key bytes.
    pub fn public_bytes(&self) -> &[u8; 32] {
        &self.key
    }

    /// The verifying key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.vk
    }

    /// The one Ed25519 predicate ([`ed25519::verify`]) of `sig` over `msg`
    /// by this key: the verdict a batch gives it too.
    pub fn verify(&self, msg: &[u8], sig: &[u8; 64]) -> bool {
        ed25519::verify_at(&self.vk.to_edwards(), &self.key, &[msg], sig)
    }

    /// The canonical `did:key:z…` spelling.
    pub fn to_did_string(&self) -> String {
        did_string_of(&self.key)
    }
}

/// The canonical `did:key:z…` spelling of 32 public-key bytes (for keys a
/// caller has already parsed as a [`Did`] and kept only the bytes of).
///
/// Base58 is quadratic in the length and a sealed receipt spells its
/// steward and subject every time, so each thread recalls the last
/// [`PARSED_RECALL`] spellings by key (the spelling is a function of the
/// key: a recalled one is the one computed).
pub fn did_string_of(key: &[u8; 32]) -> String {
    if let Some(s) = SPELLED.with(|m| m.borrow().get(key).cloned()) {
        return s;
    }
    let s = spell(key);
    SPELLED.with(|m| recall(&mut m.borrow_mut(), *key, s.clone()));
    s
}

/// Keeps `v` under `k` in a thread's recall table, starting the table over
/// once it holds [`PARSED_RECALL`] entries.
fn recall<K: std::hash::Hash + Eq, V>(m: &mut std::collections::HashMap<K, V>, k: K, v: V) {
    if m.len() >= PARSED_RECALL {
        m.clear();
    }
    m.insert(k, v);
}

fn spell(key: &[u8; 32]) -> String {
    let mut raw = Vec::with_capacity(34);
    raw.extend_from_slice(&ED25519_MULTICODEC);
    raw.extend_from_slice(key);
    format!("{DID_KEY_PREFIX}z{}", bs58::encode(raw).into_string())
}

/// Reads an unsigned LEB128 varint (multiformats unsigned-varint), refusing
/// non-minimal encodings and more than 9 bytes.
fn read_varint(raw: &[u8]) -> Result<(u64, usize), IdentityError> {
    let mut value: u64 = 0;
    for (i, &b) in raw.iter().enumerate().take(9) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err(IdentityError::NonMinimalVarint);
            }
            return Ok((value, i + 1));
        }
    }
    Err(IdentityError::BadBase58)
}

impl fmt::Display for Did {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_did_string())
    }
}

impl fmt::Debug for Did {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Did({})", self.to_did_string())
    }
}

impl serde::Serialize for Did {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_did_string())
    }
}

impl<'de> serde::Deserialize<'de> for Did {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// An actor that can sign: an Ed25519 signing key and its `did:key`.
#[derive(Clone)]
pub struct Keypair {
    signing: SigningKey,
    did: Did,
}

/// Its signing key wipes itself when dropped (ed25519-dalek's `zeroize`
/// feature, which this crate turns on); the did is public.
impl zeroize::ZeroizeOnDrop for Keypair {}

impl fmt::Debug for Keypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keypair").field("did", &self.did).finish_non_exhaustive()
    }
}

impl Keypair {
    /// A keypair from a 32-byte seed (deterministic: vectors use fixed seeds).
    pub fn from_seed(seed: [u8; 32]) -> Result<Self, IdentityError> {
        let signing = SigningKey::from_bytes(&seed);
        let did = Did::from_public_bytes(signing.verifying_key().to_bytes())?;
        Ok(Self { signing, did })
    }

    /// A fresh keypair from the operating system's randomness.
    pub fn generate() -> Self {
        loop {
            let signing = SigningKey::generate(&mut rand_core::OsRng);
            if let Ok(did) = Did::from_public_bytes(signing.verifying_key().to_bytes()) {
                return Self { signing, did };
            }
        }
    }

    /// The 32-byte seed (secret).
    pub fn seed(&self) -> zeroize::Zeroizing<[u8; 32]> {
        zeroize::Zeroizing::new(self.signing.to_bytes())
    }

    /// The actor's identity.
    pub fn did(&self) -> Did {
        self.did
    }

    /// Ed25519 signature over `msg`.
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.signing.sign(msg).to_bytes()
    }

    /// A signature over `msg` only this key's holder can make and
    /// `verify_strict` refuses: `R = [r]B + T` with `T` the small-order
    /// point `EIGHT_TORSION[torsion % 8]` (`r = 0`, `torsion = 0`: `R` is the
    /// identity, itself of small order), `S = r + k·a` as usual, so RFC 8032
    /// §5.1.7's cofactored group equation holds. For tests of batch
    /// verification (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn sign_with_small_order_r_for_tests(&self, msg: &[u8], r: u64, torsion: usize) -> [u8; 64] {
        use curve25519_dalek::constants::EIGHT_TORSION;
        use curve25519_dalek::{EdwardsPoint, Scalar};
        use sha2::{Digest, Sha512};
        let big_r = (EdwardsPoint::mul_base(&Scalar::from(r)) + EIGHT_TORSION[torsion % 8]).compress().to_bytes();
        let k = Scalar::from_bytes_mod_order_wide(
            &Sha512::new()
                .chain_update(big_r)
                .chain_update(self.did.public_bytes())
                .chain_update(msg)
                .finalize()
                .into(),
        );
        let s = Scalar::from(r) + k * self.signing.to_scalar();
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&big_r);
        sig[32..].copy_from_slice(s.as_bytes());
        sig
    }
}

/// The plain key file: JSON `{"did": "did:key:…", "seed": "<64 hex digits>"}`,
/// as `jcp key new` writes it (owner-only; the format is this type's alone).
/// Reading is strict: no other member, a seed of exactly 32 bytes in hex,
/// and a did that is the seed's.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    /// The key's did (checked against the seed when read).
    pub did: String,
    /// The 32-byte seed, hex.
    pub seed: String,
}

/// The seed's text is wiped when a key file is dropped (issue 34, keys at rest).
impl Drop for KeyFile {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.seed);
    }
}

impl fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyFile").field("did", &self.did).finish_non_exhaustive()
    }
}

impl KeyFile {
    /// The file's text for `key` (pretty JSON, two-space indent, no final
    /// newline), wiped from memory when dropped: it holds the seed.
    pub fn encode(key: &Keypair) -> zeroize::Zeroizing<String> {
        let seed = zeroize::Zeroizing::new(hex::encode(*key.seed()));
        // The seed is 64 hex digits: written as it is, no JSON escaping (and no copy) needed.
        zeroize::Zeroizing::new(format!(
            "{{\n  \"did\": {},\n  \"seed\": \"{}\"\n}}",
            serde_json::Value::from(key.did().to_did_string()),
            seed.as_str()
        ))
    }

    /// Reads a key file's bytes into its keypair.
    pub fn decode(bytes: &[u8]) -> Result<Keypair, crate::Error> {
        let bad = |problem: String| crate::Error::KeyFileInvalid { problem };
        let kf: Self = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("not a jcp key file ({{\"did\", \"seed\"}}): {e}")))?;
        let bytes = zeroize::Zeroizing::new(hex::decode(&kf.seed).unwrap_or_default());
        let seed: zeroize::Zeroizing<[u8; 32]> =
            zeroize::Zeroizing::new(bytes.as_slice().try_into().map_err(|_| bad("seed must be 64 hex digits".into()))?);
        let key = Keypair::from_seed(*seed)?;
        if key.did().to_did_string() != kf.did {
            return Err(bad(format!("the did {} is not the seed's ({})", kf.did, key.did())));
        }
        Ok(key)
    }
}

/// 16 bytes of fresh randomness for a nonce.
pub fn fresh_nonce() -> [u8; 16] {
    let mut n = [0u8; 16];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s2_a_recalled_did_is_the_parsed_one_and_refusals_are_never_recalled() {
        let kp = Keypair::from_seed([7; 32]).unwrap();
        let text = kp.did().to_did_string();
        assert_eq!(Did::parse(&text).unwrap(), kp.did());
        assert_eq!(Did::parse(&text).unwrap(), kp.did());
        // A non-canonical spelling of the same key is still refused.
        let bad = format!("{text} ");
        assert!(Did::parse(&bad).is_err());
        assert!(Did::parse(&bad).is_err());
        // Past the recall bound the table starts over; parsing stays right.
        for n in 0..u16::try_from(PARSED_RECALL + 10).unwrap() {
            let mut seed = [1u8; 32];
            seed[..2].copy_from_slice(&n.to_le_bytes());
            let k = Keypair::from_seed(seed).unwrap();
            assert_eq!(Did::parse(&k.did().to_did_string()).unwrap(), k.did());
        }
    }

    #[test]
    fn s2_a_recalled_spelling_is_the_computed_one() {
        // Past the recall bound the table starts over; every spelling stays
        // the computed one, the first time and when recalled.
        for _ in 0..2 {
            for n in 0..u16::try_from(PARSED_RECALL + 10).unwrap() {
                let mut seed = [3u8; 32];
                seed[..2].copy_from_slice(&n.to_le_bytes());
                let k = Keypair::from_seed(seed).unwrap();
                let key = k.did().public_bytes().to_owned();
                assert_eq!(did_string_of(&key), spell(&key));
                assert_eq!(Did::parse(&did_string_of(&key)).unwrap(), k.did());
            }
        }
    }

    #[test]
    fn s2_did_key_round_trips() {
        let kp = Keypair::from_seed([7; 32]).unwrap();
        let s = kp.did().to_did_string();
        assert!(s.starts_with("did:key:z6Mk"));
        assert_eq!(Did::parse(&s).unwrap(), kp.did());
    }

    #[test]
    fn s2_wrong_base_refused() {
        let kp = Keypair::from_seed([7; 32]).unwrap();
        let s = kp.did().to_did_string().replacen(":z", ":f", 1);
        assert_eq!(Did::parse(&s), Err(IdentityError::WrongBase('f')));
    }

    #[test]
    fn s2_non_minimal_varint_refused() {
        let kp = Keypair::from_seed([7; 32]).unwrap();
        // 0xed encoded as ed 81 00 (non-minimal three-byte varint).
        let mut raw = vec![0xed, 0x81, 0x00];
        raw.extend_from_slice(kp.did().public_bytes());
        let s = format!("did:key:z{}", bs58::encode(raw).into_string());
        assert_eq!(Did::parse(&s), Err(IdentityError::NonMinimalVarint));
    }

    #[test]
    fn s2_other_codec_and_wrong_length_refused() {
        let mut raw = vec![0xec, 0x01];
        raw.extend_from_slice(&[9; 32]);
        let s = format!("did:key:z{}", bs58::encode(&raw).into_string());
        assert_eq!(Did::parse(&s), Err(IdentityError::WrongCodec(0xec)));
        let mut raw = vec![0xed, 0x01];
        raw.extend_from_slice(&[9; 31]);
        let s = format!("did:key:z{}", bs58::encode(&raw).into_string());
        assert_eq!(Did::parse(&s), Err(IdentityError::WrongLength(31)));
    }

    #[test]
    fn s2_small_order_key_refused() {
        // The identity point (y = 1) has order 1.
        let mut k = [0u8; 32];
        k[0] = 1;
        assert_eq!(Did::from_public_bytes(k), Err(IdentityError::SmallOrder));
    }
}
