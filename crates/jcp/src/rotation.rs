//! Spec §2.1: identity continuity by pre-committed rotation (C12).
//!
//! A long-lived actor's identity is its **inception DID** (seq 0), forever;
//! the key that controls it rotates through a signed event log. Every event
//! commits to the *next* key by hash (`next_hash` = blake3 of its 32 public
//! bytes), and rotation N is signed by its new `current` key, which must hash
//! to event N−1's commitment: possession of the pre-committed key is the proof
//! of control. A thief holding only the current key cannot rotate the identity
//! away; an owner who lost the current key still can.
//!
//! [`KeyLog::verify`] is the only way to a [`KeyState`] (the identity, its
//! current key, the head event): code that needs "the key that controls this
//! identity" takes a `KeyState`, so a log nobody verified cannot stand in for
//! one. A grant issued in the identity's name is checked against it with
//! [`verify_grant_signature`] (one grant) or [`verify_chain_with_key_logs`]
//! (a §4.2 chain). A grant signed by a key the log has rotated away is refused
//! `rotation-superseded-key` (docs/decisions.md, "§2.1 superseded keys").
//!
//! On disk a key log is one canonical det-CBOR map
//! `{format: "jcp-keylog/1", events: [{event, sig}, …]}`, read strictly
//! ([`KeyLog::from_bytes`]).

use serde::Serialize;

use crate::cbor::{self, ContentId, Fields, Value};
use crate::chain::{check_structure, ChainFault};
use crate::error::{Error, Refusal};
use crate::grant::{Grant, SignedGrant};
use crate::identity::{Did, Keypair};

#[cfg(feature = "vectors")]
pub mod vectors;

/// The key log file's format string.
pub const KEYLOG_FORMAT: &str = "jcp-keylog/1";

/// File name extension of a key log file.
pub const KEYLOG_EXTENSION: &str = "jcpkeys";

/// The commitment to a next key (§2.1): blake3 of its 32 public bytes.
pub fn next_hash_of(next: &Did) -> ContentId {
    ContentId::of_bytes(next.public_bytes())
}

fn ser_hex16<S: serde::Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(b))
}

// ------------------------------------------------------------------ event

/// A key event (§2.1), unsigned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyEvent {
    /// The inception (seq-0) DID, stable for life.
    pub identity: Did,
    /// 0 = inception, N = the Nth rotation.
    pub seq: u64,
    /// The controlling key from this event on.
    pub current: Did,
    /// blake3 of the NEXT key's 32 public bytes.
    pub next_hash: ContentId,
    /// The previous event's id; absent at inception.
    pub parent: Option<ContentId>,
    /// 16 random bytes.
    #[serde(serialize_with = "ser_hex16")]
    pub nonce: [u8; 16],
}

impl KeyEvent {
    /// Canonical CBOR form (§3): `parent` omitted at inception.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("identity", Some(Value::text(self.identity.to_did_string()))),
            ("seq", Some(Value::Uint(self.seq))),
            ("current", Some(Value::text(self.current.to_did_string()))),
            ("next_hash", Some(Value::text(self.next_hash.to_hex()))),
            ("parent", self.parent.map(|p| Value::text(p.to_hex()))),
            ("nonce", Some(Value::Bytes(self.nonce.to_vec()))),
        ])
    }

    /// Reads the canonical form (closed world).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("KeyEvent", v)?;
        let identity = Did::parse(f.text("identity")?)?;
        let seq = f.uint("seq")?;
        let current = Did::parse(f.text("current")?)?;
        let next_hash = f.cid("next_hash")?;
        let parent = f.opt_cid("parent")?;
        let nonce = f.bytes_n::<16>("nonce")?;
        f.finish()?;
        Ok(Self { identity, seq, current, next_hash, parent, nonce })
    }

    /// The event's content id: blake3 of its canonical bytes.
    pub fn id(&self) -> ContentId {
        ContentId::of(&self.to_value())
    }

    /// Signs the event as given with `key`, checking nothing (the verifier
    /// judges it; [`KeyLog::incept`] and [`KeyLog::rotate`] are the checked
    /// authoring routines).
    pub fn sign(self, key: &Keypair) -> SignedKeyEvent {
        let bytes = self.to_value().encode();
        let signature = key.sign(&bytes);
        SignedKeyEvent { event: self, bytes, signature }
    }
}

/// A key event with the signature of its `current` key: `{event, sig}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedKeyEvent {
    event: KeyEvent,
    bytes: Vec<u8>,
    signature: [u8; 64],
}

impl SignedKeyEvent {
    /// The event (not yet verified).
    pub fn event(&self) -> &KeyEvent {
        &self.event
    }

    /// The event's content id (what the next event's `parent` names).
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.bytes)
    }

    /// The signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }

    /// Whether the signature verifies under the event's `current` key.
    pub fn verify_signature(&self) -> bool {
        self.event.current.verify(&self.bytes, &self.signature)
    }

    /// The wire form.
    pub fn to_value(&self) -> Value {
        cbor::map([("event", Some(self.event.to_value())), ("sig", Some(Value::Bytes(self.signature.to_vec())))])
    }

    /// Canonical bytes of the wire form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the wire form (the signature is checked by the verifier).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SignedKeyEvent", v)?;
        let ev = f.req("event")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        Ok(Self { event: KeyEvent::from_value(ev)?, bytes: ev.encode(), signature })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

// ------------------------------------------------------------------ state

/// What a verified key log establishes: who the identity is and which key
/// controls it now. Only [`KeyLog::verify`] builds one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyState {
    identity: Did,
    current: Did,
    seq: u64,
    next_hash: ContentId,
    head: ContentId,
    superseded: Vec<Did>,
}

impl KeyState {
    /// The inception DID: the identity, stable across rotations.
    pub fn identity(&self) -> &Did {
        &self.identity
    }

    /// The key that controls the identity now.
    pub fn current(&self) -> &Did {
        &self.current
    }

    /// The head event's sequence number (= rotations so far).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The commitment to the next key.
    pub fn next_hash(&self) -> &ContentId {
        &self.next_hash
    }

    /// The head event's id (the next rotation's `parent`).
    pub fn head(&self) -> &ContentId {
        &self.head
    }

    /// The keys that controlled the identity before, in order (index = the
    /// seq of the event they controlled from; each stopped at the next one).
    pub fn superseded(&self) -> &[Did] {
        &self.superseded
    }
}

/// Checks one event against the state before it (`None` at inception) and
/// returns the state after it. Structure first (sequence, identity, parent,
/// the pre-committed hash), the signature last, as a chain is checked.
fn step(prev: Option<&KeyState>, index: usize, e: &SignedKeyEvent) -> Result<KeyState, Error> {
    let ev = e.event();
    let expected_seq = match prev {
        None => 0,
        Some(p) => p.seq.checked_add(1).ok_or(Error::RotationSequenceGap { index, expected: u64::MAX, got: ev.seq })?,
    };
    if ev.seq != expected_seq {
        return Err(Error::RotationSequenceGap { index, expected: expected_seq, got: ev.seq });
    }
    let expected_parent = prev.map(|p| p.head);
    match prev {
        None if ev.current != ev.identity => {
            return Err(Error::RotationWrongIdentity {
                seq: ev.seq,
                what: "the inception's current key must be its identity",
                expected: ev.identity.to_string(),
                got: ev.current.to_string(),
            })
        }
        Some(p) if ev.identity != p.identity => {
            return Err(Error::RotationWrongIdentity {
                seq: ev.seq,
                what: "a rotation names another identity than the log's inception DID",
                expected: p.identity.to_string(),
                got: ev.identity.to_string(),
            })
        }
        _ => {}
    }
    if ev.parent != expected_parent {
        let show = |c: Option<ContentId>| c.map_or_else(|| "none".to_owned(), |c| c.to_hex());
        return Err(Error::RotationParentMismatch {
            seq: ev.seq,
            expected: show(expected_parent),
            got: show(ev.parent),
        });
    }
    if let Some(p) = prev {
        if next_hash_of(&ev.current) != p.next_hash {
            return Err(Error::RotationHashMismatch {
                seq: ev.seq,
                current: ev.current.to_string(),
                expected: p.next_hash,
            });
        }
    }
    if !e.verify_signature() {
        return Err(Error::BadSignature { object: "KeyEvent", signer: ev.current.to_string() });
    }
    let mut superseded = prev.map(|p| p.superseded.clone()).unwrap_or_default();
    if let Some(p) = prev {
        superseded.push(p.current);
    }
    Ok(KeyState {
        identity: ev.identity,
        current: ev.current,
        seq: ev.seq,
        next_hash: ev.next_hash,
        head: e.id(),
        superseded,
    })
}

// ------------------------------------------------------------------ log

/// A key log: signed key events, inception first. Holding one proves
/// nothing; [`KeyLog::verify`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLog {
    events: Vec<SignedKeyEvent>,
}

impl KeyLog {
    /// Starts an identity (§2.1): the inception event, signed by the
    /// identity key (its `current`), committing to `next`.
    pub fn incept(identity: &Keypair, next: &Did, nonce: Option<[u8; 16]>) -> Self {
        let ev = KeyEvent {
            identity: identity.did(),
            seq: 0,
            current: identity.did(),
            next_hash: next_hash_of(next),
            parent: None,
            nonce: nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        Self { events: vec![ev.sign(identity)] }
    }

    /// A log of the given events, unchecked (a verifier judges it).
    pub fn from_events(events: Vec<SignedKeyEvent>) -> Self {
        Self { events }
    }

    /// The events, inception first.
    pub fn events(&self) -> &[SignedKeyEvent] {
        &self.events
    }

    /// Verifies the whole log (§2.1): inception signed by the identity key
    /// with `current == identity`; every rotation N signed by its new
    /// `current`, which hashes to event N−1's `next_hash`, with `seq` N, the
    /// same identity and `parent` = event N−1's id. The first refusal wins.
    pub fn verify(&self) -> Result<KeyState, Error> {
        let mut state: Option<KeyState> = None;
        for (index, e) in self.events.iter().enumerate() {
            state = Some(step(state.as_ref(), index, e)?);
        }
        state.ok_or(Error::RotationEmptyLog)
    }

    /// Rotates the identity (§2.1): `new_current` — the pre-committed key —
    /// signs an event committing to `next`. Refuses, before signing, a log
    /// that does not verify and a key that is not the pre-committed one (a
    /// thief holding only the current key ends here). Returns the new state.
    pub fn rotate(&mut self, new_current: &Keypair, next: &Did, nonce: Option<[u8; 16]>) -> Result<KeyState, Error> {
        let state = self.verify()?;
        let ev = KeyEvent {
            identity: state.identity,
            seq: state.seq.saturating_add(1),
            current: new_current.did(),
            next_hash: next_hash_of(next),
            parent: Some(state.head),
            nonce: nonce.unwrap_or_else(crate::identity::fresh_nonce),
        };
        let signed = ev.sign(new_current);
        let after = step(Some(&state), self.events.len(), &signed)?;
        self.events.push(signed);
        Ok(after)
    }

    /// The file form `{format, events}`.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("format", Some(Value::text(KEYLOG_FORMAT))),
            ("events", Some(Value::Array(self.events.iter().map(SignedKeyEvent::to_value).collect()))),
        ])
    }

    /// Canonical bytes of the file form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }

    /// Reads the file form: the `jcp-keylog/1` format, then at least one
    /// event; an event that does not decode is refused with its index.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("KeyLog", v)?;
        let format = f.text("format")?;
        if format != KEYLOG_FORMAT {
            return Err(f.error("format", format!("{format:?} is not {KEYLOG_FORMAT:?}")).into());
        }
        let Value::Array(items) = f.req("events")? else {
            return Err(f.error("events", "expected an array").into());
        };
        f.finish()?;
        if items.is_empty() {
            return Err(Error::RotationEmptyLog);
        }
        let events = items
            .iter()
            .enumerate()
            .map(|(index, v)| {
                SignedKeyEvent::from_value(v).map_err(|e| Error::KeyLogEvent { index, source: Box::new(e) })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { events })
    }

    /// Decodes strict canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }

    /// Whether a decoded canonical value looks like a key log file (for
    /// `jcp inspect`, which then decodes it strictly).
    pub fn is_key_log(v: &Value) -> bool {
        matches!(v.get("format"), Some(Value::Text(f)) if f == KEYLOG_FORMAT)
    }

    /// A serializable view: every event with its id and signature status,
    /// and the verified state or the refusal.
    pub fn view(&self) -> KeyLogView {
        let events = self
            .events
            .iter()
            .enumerate()
            .map(|(index, e)| KeyEventRow {
                index,
                id: e.id(),
                event: e.event().clone(),
                signature_valid: e.verify_signature(),
            })
            .collect();
        let (state, refusal) = match self.verify() {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(Refusal::from(&e))),
        };
        KeyLogView { events, state, refusal }
    }
}

/// One event in a [`KeyLogView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyEventRow {
    /// Position in the log.
    pub index: usize,
    /// The event's content id.
    pub id: ContentId,
    /// The event.
    pub event: KeyEvent,
    /// Whether its signature verifies under its own `current` key (whether
    /// that key was the pre-committed one is the log's verdict).
    pub signature_valid: bool,
}

/// A key log as the console and `jcp inspect` show it: `state` when the log
/// verifies, else `refusal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyLogView {
    /// Every event, inception first.
    pub events: Vec<KeyEventRow>,
    /// The verified state (absent when refused).
    pub state: Option<KeyState>,
    /// Why the log does not verify (absent when it does).
    pub refusal: Option<Refusal>,
}

// ------------------------------------------------------------------ grants

/// Issues a grant in a rotated identity's name (§2.1 with §4): `issuer`
/// must be the identity, and `current` the key that controls it now.
pub fn issue_grant(grant: Grant, current: &Keypair, state: &KeyState) -> Result<SignedGrant, Error> {
    check_issuer(&grant, state)?;
    if current.did() != state.current {
        return Err(superseded_or_unknown(state, &current.did()));
    }
    Ok(grant.sign_as_controller(current))
}

fn check_issuer(grant: &Grant, state: &KeyState) -> Result<(), Error> {
    if grant.issuer == state.identity {
        return Ok(());
    }
    Err(Error::RotationWrongIdentity {
        seq: state.seq,
        what: "the grant's issuer is not the key log's identity",
        expected: state.identity.to_string(),
        got: grant.issuer.to_string(),
    })
}

fn superseded_or_unknown(state: &KeyState, signer: &Did) -> Error {
    superseded_or_bad(state, signer, "Grant")
}

fn superseded_or_bad(state: &KeyState, signer: &Did, object: &'static str) -> Error {
    match state.superseded.iter().position(|k| k == signer) {
        Some(i) => Error::RotationSupersededKey {
            identity: state.identity.to_string(),
            signer: signer.to_string(),
            superseded_at: u64::try_from(i).map_or(u64::MAX, |i| i.saturating_add(1)),
            current: state.current.to_string(),
        },
        None => Error::BadSignature { object, signer: state.current.to_string() },
    }
}

/// Verifies a grant issued in a rotated identity's name: its `issuer` is
/// the key log's identity and its signature verifies under the **current**
/// key. A signature by a superseded key is refused `rotation-superseded-key`
/// however old the grant (nothing in a grant dates its signing; the fail-closed
/// reading, docs/decisions.md); any other signature is `bad-signature`.
pub fn verify_grant_signature(grant: &SignedGrant, state: &KeyState) -> Result<(), Error> {
    check_issuer(grant.grant(), state)?;
    verify_under(state, "Grant", grant.grant_bytes(), grant.signature())
}

/// A signature by the identity `state` describes: valid under its current
/// key; by a key the log rotated away, `rotation-superseded-key`; by any
/// other key, `bad-signature` (an object of kind `object`).
fn verify_under(state: &KeyState, object: &'static str, bytes: &[u8], signature: &[u8; 64]) -> Result<(), Error> {
    if state.current.verify(bytes, signature) {
        return Ok(());
    }
    match state.superseded.iter().find(|k| k.verify(bytes, signature)) {
        Some(k) => Err(superseded_or_bad(state, k, object)),
        None => Err(Error::BadSignature { object, signer: state.current.to_string() }),
    }
}

/// §4.2 chain verification where issuers may be rotated identities: the
/// structure and narrowing of [`check_structure`], then each link's
/// signature — under the current key of its issuer's verified key log when
/// `key_state` resolves one ([`verify_grant_signature`]), else under the
/// issuer DID itself, as [`crate::chain::verify_chain`] checks it.
pub fn verify_chain_with_key_logs<'a>(
    chain: &[SignedGrant],
    key_state: impl Fn(&Did) -> Option<&'a KeyState>,
) -> Result<(), Error> {
    check_structure(chain).map_err(|f| match f {
        ChainFault::Attenuation { why, .. } => Error::AttenuationViolation(why),
        other => Error::ChainBroken(other.to_string()),
    })?;
    for g in chain {
        match key_state(&g.grant().issuer) {
            Some(state) => verify_grant_signature(g, state)?,
            None if g.verify_signature() => {}
            None => return Err(Error::BadSignature { object: "Grant", signer: g.grant().issuer.to_string() }),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- key ring

/// One identity in a [`KeyRing`]: its verified state and the event ids that
/// led there, or the fork that makes it unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RingEntry {
    events: Vec<ContentId>,
    state: KeyState,
    forked_at: Option<u64>,
}

/// The verified key logs a verifier knows, by identity: where a signer may
/// be a rotated identity (a steward's grants and amendments, §2.1 with
/// §4.7), each signature is checked under the identity's **current** key
/// when the ring holds its log, and under the DID itself otherwise — so an
/// identity whose log is not presented stays refused on its signature (fail
/// closed). Two logs of one identity where one extends the other keep the
/// longer; two that diverge make the identity `rotation-forked`: no key is
/// taken to control it (docs/decisions.md, "§2.1 forked key logs").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRing {
    entries: Vec<RingEntry>,
}

impl KeyRing {
    /// An empty ring: every signature is checked under its signer's DID.
    pub fn new() -> Self {
        Self::default()
    }

    /// Verifies `log` and adds its identity; returns the state the ring now
    /// holds for it (the longer log's, when one extends the other), or the
    /// log's refusal, or `rotation-forked`.
    pub fn add(&mut self, log: &KeyLog) -> Result<KeyState, Error> {
        let state = log.verify()?;
        let events: Vec<ContentId> = log.events.iter().map(SignedKeyEvent::id).collect();
        let Some(e) = self.entries.iter_mut().find(|e| e.state.identity == state.identity) else {
            self.entries.push(RingEntry { events, state: state.clone(), forked_at: None });
            return Ok(state);
        };
        let common = e.events.iter().zip(&events).take_while(|(a, b)| a == b).count();
        if common < e.events.len().min(events.len()) {
            let seq = u64::try_from(common).unwrap_or(u64::MAX);
            e.forked_at = Some(e.forked_at.map_or(seq, |f| f.min(seq)));
        } else if events.len() > e.events.len() {
            e.events = events;
            e.state = state;
        }
        match e.forked_at {
            Some(seq) => Err(Error::RotationForked { identity: e.state.identity.to_string(), seq }),
            None => Ok(e.state.clone()),
        }
    }

    /// The state held for `identity` (absent when no log of it was added or
    /// its logs fork).
    pub fn get(&self, identity: &Did) -> Option<&KeyState> {
        self.entries.iter().find(|e| e.state.identity == *identity && e.forked_at.is_none()).map(|e| &e.state)
    }

    /// Where the ring stands on `identity`: `None` when no log of it was
    /// added, the state held, or `rotation-forked`.
    pub fn state(&self, identity: &Did) -> Option<Result<&KeyState, Error>> {
        self.entries.iter().find(|e| e.state.identity == *identity).map(|e| match e.forked_at {
            Some(seq) => Err(Error::RotationForked { identity: identity.to_string(), seq }),
            None => Ok(&e.state),
        })
    }

    /// Whether no identity is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks `signature` over `bytes` as made by `signer` (an object of
    /// kind `object`, for the error): under the current key of `signer`'s
    /// log when the ring holds one — a superseded key is
    /// `rotation-superseded-key` — under `signer` itself otherwise; a forked
    /// identity is `rotation-forked`.
    pub fn verify(&self, signer: &Did, object: &'static str, bytes: &[u8], signature: &[u8; 64]) -> Result<(), Error> {
        match self.entries.iter().find(|e| e.state.identity == *signer) {
            Some(RingEntry { forked_at: Some(seq), .. }) => {
                Err(Error::RotationForked { identity: signer.to_string(), seq: *seq })
            }
            Some(RingEntry { state, .. }) => verify_under(state, object, bytes, signature),
            None if signer.verify(bytes, signature) => Ok(()),
            None => Err(Error::BadSignature { object, signer: signer.to_string() }),
        }
    }

    /// Checks a grant's issuer signature ([`KeyRing::verify`] for the issuer).
    pub fn verify_grant(&self, grant: &SignedGrant) -> Result<(), Error> {
        self.verify(&grant.grant().issuer, "Grant", grant.grant_bytes(), grant.signature())
    }
}
