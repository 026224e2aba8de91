//! A zero-copy reader for the one canonical JCR-1 receipt layout this crate
//! mints, used on the audit's hot path. It only ever **accepts** a subset of
//! what the `coset` path ([`crate::cose::open`] + [`ReceiptCore::from_value`])
//! accepts: on any deviation it returns `None` and the caller takes the
//! `coset` path, which then accepts or names the error. So error codes are
//! the `coset` path's, and acceptance is never wider. The unit tests below
//! hold the two paths equal on every record of a generated stream and on
//! every single-bit mutation of a receipt.
//!
//! Hand-written (rather than a second pass through `coset`/`ciborium` value
//! trees) because decoding cost the audit a third of its time next to batch
//! signature verification (docs/performance.md).

use jcp::cbor::ContentId;
use jcp::decision::{Reason, Verdict};
use jcp::energy::{Coverage, Provenance};
use jcp::frame::{FrameKind, Trust};

use crate::cose::{DidCache, Position, Sealed, Unsealed, KNOWN_THROUGH_LABEL, SEQ_LABEL};
use crate::fields::{Field, BY_RANK, FIELDS};
use crate::raw::{same_bytes, Cur};
use crate::receipt::{CoreView, OpenedReceipt, Profile, ReceiptCore, TextItems};
use crate::record::{Outcome, OutcomeStatus};

/// The protected header exactly as minted: `{1: -8, 4: kid, ?"jcp-seq": uint,
/// ?"jcp-known-through": uint}` in canonical order.
/// The kid is returned as bytes: the did cache compares bytes and checks
/// UTF-8 only on a miss (a `did:key` is ASCII), and the labels are matched
/// as bytes, so nothing here is validated twice.
fn protected(b: &[u8]) -> Option<(&[u8], Position)> {
    let mut c = Cur { b, pos: 0 };
    let n = c.len_of(5)?;
    if !(2..=4).contains(&n) || c.byte()? != 0x01 || c.byte()? != 0x27 || c.byte()? != 0x04 {
        return None;
    }
    let kid = c.bytes()?;
    let mut pos = Position::default();
    for _ in 2..n {
        let label = c.text_bytes()?;
        let v = c.uint()?;
        if label == SEQ_LABEL.as_bytes() && pos.seq.is_none() && pos.known_through.is_none() {
            pos.seq = Some(v);
        } else if label == KNOWN_THROUGH_LABEL.as_bytes() && pos.known_through.is_none() {
            pos.known_through = Some(v);
        } else {
            return None;
        }
    }
    (c.done() && !kid.is_empty()).then_some((kid, pos))
}

/// The envelope in its canonical minted layout: (steward, position, tbs,
/// signature) and the core's bytes. No record id (see [`Unsealed`]).
fn envelope_parts<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Option<(Unsealed<'a>, &'a [u8])> {
    let mut c = Cur { b: bytes, pos: 0 };
    if c.byte()? != 0xd2 || c.byte()? != 0x84 {
        return None;
    }
    let prot = c.bytes()?;
    if c.byte()? != 0xa0 {
        return None;
    }
    let payload = c.bytes()?;
    let sig = c.bytes()?;
    if !c.done() || sig.len() != 64 {
        return None;
    }
    let (kid, position) = protected(prot)?;
    let steward = dids.shared(kid).ok()?;
    let mut signature = [0u8; 64];
    signature.copy_from_slice(sig);
    Some((Unsealed::from_parts(steward, position, signature, prot, payload), payload))
}

/// Opens a receipt in its canonical minted layout, without its record id;
/// `None` means "take the `coset` path".
pub(crate) fn open_receipt_unsealed<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Option<(ReceiptCore, Unsealed<'a>)> {
    let (view, unsealed) = open_receipt_view(bytes, dids)?;
    let core = ReceiptCore::from_view(&view, dids).ok()?;
    Some((core, unsealed))
}

/// Opens a receipt in its canonical minted layout as a checked view (no
/// copy, no allocation); `None` means "take the `coset` path".
pub(crate) fn open_receipt_view<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Option<(CoreView<'a>, Unsealed<'a>)> {
    let (unsealed, payload) = envelope_parts(bytes, dids)?;
    let view = receipt_view(payload, dids)?;
    (view.steward_key == *unsealed.steward.public_bytes()).then_some((view, unsealed))
}

/// A text value as UTF-8 (what reading it as text checks).
fn utf8_text<'a>(c: &mut Cur<'a>) -> Option<&'a str> {
    std::str::from_utf8(c.text_bytes()?).ok()
}

/// A `did:key`'s text and public-key bytes (through the cache).
fn did<'a>(c: &mut Cur<'a>, dids: &mut DidCache) -> Option<(&'a [u8], [u8; 32])> {
    let t = c.text_bytes()?;
    Some((t, dids.key_bytes(t).ok()?))
}

/// A reason code's text.
fn reason(c: &mut Cur<'_>) -> Option<Reason> {
    Reason::parse(utf8_text(c)?)
}

/// A receipt core read straight into a checked view in one pass: the
/// profile's rules ([`CoreView`]'s reading, the one that names errors)
/// applied as each entry is read, for the canonical layout only (every key
/// known, in canonical order, each at most once); `None` on anything else,
/// valid or not (the caller then takes the general path). Never accepts
/// what that reading refuses, and reads the same values: the tests below
/// hold the two equal on every generated receipt and every bit flip, and
/// the `cose_open` fuzz target holds them equal on arbitrary bytes.
fn receipt_view<'a>(b: &'a [u8], dids: &mut DidCache) -> Option<CoreView<'a>> {
    let mut c = Cur { b, pos: 0 };
    let n = c.len_of(5)?;
    if n > FIELDS {
        return None;
    }
    let mut scan = Scan::default();
    // RFC 8949 §4.2.1: keys in strictly increasing canonical order (a repeat
    // is equal), so each key is looked for only among the names ranked after
    // the previous one: an unknown, repeated or misplaced key is not found.
    let mut next_rank = 0;
    for _ in 0..n {
        let key = c.text_bytes()?;
        let rank =
            next_rank + BY_RANK.get(next_rank..)?.iter().position(|(name, _)| same_bytes(name.as_bytes(), key))?;
        next_rank = rank + 1;
        scan.entry(BY_RANK[rank].1, &mut c, dids)?;
    }
    if !c.done() {
        return None;
    }
    scan.into_view()
}

/// The core's values as [`receipt_view`] reads them, each checked for its
/// own form as it is read; the rules between fields are [`Scan::into_view`]'s.
/// (Absent, `energy_coverage` is `Whole`: [`Coverage`]'s default.)
#[derive(Default)]
struct Scan<'a> {
    profile: Option<Profile>,
    grant_id: Option<ContentId>,
    resource: Option<ContentId>,
    payload_hash: Option<ContentId>,
    issuer: Option<(&'a [u8], [u8; 32])>,
    subject: Option<(&'a [u8], [u8; 32])>,
    steward: Option<(&'a [u8], [u8; 32])>,
    action: Option<&'a str>,
    frame_kind: Option<FrameKind>,
    trust: Option<Trust>,
    allow: Option<bool>,
    deny_reason: Option<Reason>,
    cost_uj: Option<u64>,
    provenance: Option<Provenance>,
    coverage: Coverage,
    measured: Option<u64>,
    budget_remaining_uj: Option<u64>,
    budget_uj: Option<u64>,
    chain: Option<TextItems<'a>>,
    chain_last: Option<ContentId>,
    breach: Option<Reason>,
    currency: Option<&'a str>,
    minor: Option<u64>,
    tainted: bool,
}

impl<'a> Scan<'a> {
    /// Reads `field`'s value at the cursor; `None` if it is not in the form
    /// the profile gives that field.
    #[inline]
    fn entry(&mut self, field: Field, c: &mut Cur<'a>, dids: &mut DidCache) -> Option<()> {
        match field {
            Field::Action => self.action = Some(utf8_text(c)?),
            Field::Breach => self.breach = Some(reason(c)?),
            Field::BudgetRemainingUj => self.budget_remaining_uj = Some(c.uint()?),
            Field::BudgetUj => self.budget_uj = Some(c.uint()?),
            Field::ChainIds => {
                let items = c.len_of(4)?;
                let start = c.pos;
                for _ in 0..items {
                    self.chain_last = Some(dids.content_id(c.text_bytes()?)?);
                }
                self.chain = Some(TextItems::Cbor { enc: &c.b[start..c.pos], n: items });
            }
            Field::CostCurrency => self.currency = Some(utf8_text(c)?),
            Field::CostMinor => self.minor = Some(c.uint()?),
            Field::CostUj => self.cost_uj = Some(c.uint()?),
            Field::DenyReason => self.deny_reason = Some(reason(c)?),
            Field::EnergyCoverage => {
                (c.text_bytes()? == b"Partial").then_some(())?;
                self.coverage = Coverage::Partial;
            }
            Field::EnergyMeasured => self.measured = Some(c.uint()?),
            Field::EnergyProvenance => self.provenance = Some(Provenance::parse_bytes(c.text_bytes()?)?),
            Field::Flow => {
                (c.text_bytes()? == b"tainted").then_some(())?;
                self.tainted = true;
            }
            Field::FrameKind => self.frame_kind = Some(FrameKind::parse_bytes(c.text_bytes()?)?),
            Field::GrantId => self.grant_id = Some(dids.content_id(c.text_bytes()?)?),
            Field::Issuer => self.issuer = Some(did(c, dids)?),
            Field::JcpReceipt => {
                self.profile = Some(match c.text_bytes()? {
                    b"jcp/2" => Profile::Jcp2,
                    b"jcp/1" => Profile::Jcp1,
                    _ => return None,
                });
            }
            Field::PayloadHash => self.payload_hash = Some(ContentId::parse_bytes(c.text_bytes()?)?),
            Field::Resource => self.resource = Some(dids.content_id(c.text_bytes()?)?),
            Field::Steward => self.steward = Some(did(c, dids)?),
            Field::Subject => self.subject = Some(did(c, dids)?),
            Field::Trust => {
                self.trust = Some(match c.text_bytes()? {
                    b"control" => Trust::Control,
                    b"data" => Trust::Data,
                    _ => return None,
                });
            }
            Field::Verdict => {
                self.allow = Some(match c.text_bytes()? {
                    b"allow" => true,
                    b"deny" => false,
                    _ => return None,
                });
            }
        }
        Some(())
    }

    /// The rules between fields (§8, §8.1 and the `jcp/2` optional fields):
    /// every required field present, a deny with its reason and an allow
    /// without, `jcp/2` with its payload hash and `jcp/1` with none of
    /// `jcp/2`'s fields, a chain of two or more ending at the leaf, a breach
    /// and a taint only on an allow, currency and minor units together.
    #[inline]
    fn into_view(self) -> Option<CoreView<'a>> {
        let profile = self.profile?;
        let verdict = match (self.allow?, self.deny_reason) {
            (true, None) => Verdict::Allow,
            (false, Some(r)) => Verdict::Deny(r),
            _ => return None,
        };
        let allowed = verdict == Verdict::Allow;
        match profile {
            // `jcp/2` carries what decided it; `jcp/1` none of `jcp/2`'s fields.
            Profile::Jcp2 => {
                self.payload_hash?;
            }
            Profile::Jcp1 => {
                let jcp2_only = self.payload_hash.is_some()
                    || self.chain.is_some()
                    || self.breach.is_some()
                    || self.measured.is_some();
                if jcp2_only || self.currency.is_some() || self.minor.is_some() || self.tainted {
                    return None;
                }
            }
        }
        // §8.1: a chain of two or more, ending at the leaf.
        if let Some(TextItems::Cbor { n, .. }) = self.chain {
            if n < 2 || self.chain_last != self.grant_id {
                return None;
            }
        }
        if (self.breach.is_some() || self.tainted) && !allowed {
            return None;
        }
        if let Some(m) = self.measured {
            if !crate::receipt::view::measured_fits(m, self.cost_uj?, self.provenance?) {
                return None;
            }
        }
        let money = match (self.currency, self.minor) {
            (None, None) => None,
            (Some(cur), Some(m)) if !cur.is_empty() => Some((cur, m)),
            _ => return None,
        };
        let ((issuer, _), (subject, subject_key), (steward, steward_key)) =
            (self.issuer?, self.subject?, self.steward?);
        Some(CoreView {
            profile,
            grant_id: self.grant_id?,
            issuer,
            subject,
            subject_key,
            resource: self.resource?,
            action: self.action?,
            payload_hash: self.payload_hash,
            frame_kind: self.frame_kind?,
            trust: self.trust?,
            verdict,
            cost_uj: self.cost_uj?,
            provenance: self.provenance?,
            coverage: self.coverage,
            measured: self.measured,
            budget_remaining_uj: self.budget_remaining_uj?,
            budget_uj: self.budget_uj?,
            steward,
            steward_key,
            chain: self.chain,
            breach: self.breach,
            money,
            tainted: self.tainted,
        })
    }
}

/// Opens a receipt in its canonical minted layout without copying; `None`
/// means "take the `coset` path".
pub(crate) fn open_receipt(bytes: &[u8], dids: &mut DidCache) -> Option<OpenedReceipt> {
    let (core, unsealed) = open_receipt_unsealed(bytes, dids)?;
    Some(OpenedReceipt { core, sealed: unsealed.identify(bytes) })
}

/// Opens an outcome record the same way, without its record id; `None`
/// means "take the `coset` path".
pub(crate) fn open_outcome_unsealed<'a>(bytes: &'a [u8], dids: &mut DidCache) -> Option<(Outcome, Unsealed<'a>)> {
    let (unsealed, payload) = envelope_parts(bytes, dids)?;
    // Exactly four text entries, read in the one canonical key order
    // (RFC 8949 §4.2.1: shorter encoded keys first, then bytewise); any
    // other shape is the `coset` path's to read or name.
    let mut c = Cur { b: payload, pos: 0 };
    if c.len_of(5)? != 4 {
        return None;
    }
    let mut field = |key: &[u8]| if c.text_bytes()? == key { c.text_bytes() } else { None };
    let status = field(b"status")?;
    let receipt = field(b"receipt")?;
    let steward = field(b"steward")?;
    let tag = field(b"jcp_outcome")?;
    if !c.done() || tag != crate::record::OUTCOME_PROFILE.as_bytes() {
        return None;
    }
    let status = match status {
        b"completed" => OutcomeStatus::Completed,
        b"failed" => OutcomeStatus::Failed,
        _ => return None,
    };
    let o = Outcome { receipt: ContentId::parse_bytes(receipt)?, status, steward: dids.parse_bytes(steward).ok()? };
    (o.steward == *unsealed.steward).then_some((o, unsealed))
}

/// Opens an outcome record the same way; `None` means "take the `coset` path".
pub(crate) fn open_outcome(bytes: &[u8], dids: &mut DidCache) -> Option<(Outcome, Sealed)> {
    let (o, unsealed) = open_outcome_unsealed(bytes, dids)?;
    Some((o, unsealed.identify(bytes)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::demo::{self, DemoOptions};
    use crate::stream::{Item, Reader, RecordKind};
    use crate::writer::Durability;

    fn slow(bytes: &[u8]) -> Option<OpenedReceipt> {
        let mut dids = DidCache::new();
        let (sealed, v) = crate::cose::open(bytes, &mut dids).ok()?;
        let core = ReceiptCore::from_value(&v, &mut dids).ok()?;
        (core.steward == sealed.steward).then_some(OpenedReceipt { core, sealed })
    }

    fn same(a: &OpenedReceipt, b: &OpenedReceipt) -> bool {
        a.core == b.core
            && a.sealed.tbs == b.sealed.tbs
            && a.sealed.position == b.sealed.position
            && a.sealed.id == b.sealed.id
            && a.sealed.signature == b.sealed.signature
            && a.sealed.steward == b.sealed.steward
    }

    fn receipts() -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jcps");
        demo::write_demo(
            &p,
            &DemoOptions { receipts: 120, seed: 5, durability: Durability::GeneratorOnly, ..DemoOptions::default() },
        )
        .unwrap();
        Reader::new(std::fs::File::open(&p).unwrap())
            .unwrap()
            .filter_map(|i| match i {
                Item::Record(r) if r.kind == RecordKind::Receipt => Some(r.payload),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn s3_content_id_cache_returns_what_parsing_returns() {
        // 500 ids over 64 slots: hits, misses and evictions, interleaved
        // with texts that must not parse (upper case, a stray byte, short).
        let ids: Vec<ContentId> = (0u32..500).map(|i| ContentId::of_bytes(&i.to_le_bytes())).collect();
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let t = id.to_hex().into_bytes();
            texts.push(t.clone());
            if i % 7 == 0 {
                let mut bad = t.clone();
                bad[i % 64] = bad[i % 64].to_ascii_uppercase();
                texts.push(bad);
                let mut stray = t.clone();
                stray[63 - i % 64] = b'g';
                texts.push(stray);
                texts.push(t[..63].to_vec());
            }
        }
        let mut dids = DidCache::new();
        for round in 0..3 {
            for (j, t) in texts.iter().enumerate() {
                let k = (j * 31 + round * 17) % texts.len();
                for x in [t, &texts[k], t] {
                    assert_eq!(dids.content_id(x), ContentId::parse_bytes(x), "{}", String::from_utf8_lossy(x));
                }
            }
        }
    }

    #[test]
    fn s8_fast_path_equals_the_coset_path_on_every_generated_receipt() {
        let mut dids = DidCache::new();
        for r in receipts() {
            let f = open_receipt(&r, &mut dids).expect("the minted layout takes the fast path");
            let s = slow(&r).unwrap();
            assert!(same(&f, &s));
            // The hot path's ToBeSigned, kept in pieces, is the same bytes.
            let (core, u) = open_receipt_unsealed(&r, &mut dids).unwrap();
            assert_eq!(core, s.core);
            assert_eq!(u.tbs(), s.sealed.tbs);
            assert_eq!(u.tbs_pieces().concat(), s.sealed.tbs);
            assert!(u.verify_signature().is_ok());
        }
    }

    /// A view reads what the typed core holds, field by field.
    fn view_matches(v: &CoreView<'_>, c: &ReceiptCore, dids: &mut DidCache) -> bool {
        v.profile == c.profile
            && v.grant_id == c.grant_id
            && v.subject_key == *c.subject.public_bytes()
            && v.steward_key == *c.steward.public_bytes()
            && v.resource == c.resource
            && v.action == c.action
            && v.payload_hash == c.payload_hash
            && (v.frame_kind, v.trust, v.verdict) == (c.frame_kind, c.trust, c.verdict)
            && (v.cost_uj, v.budget_remaining_uj, v.budget_uj) == (c.cost_uj, c.budget_remaining_uj, c.budget_uj)
            && (v.provenance, v.coverage, v.breach, v.tainted) == (c.provenance, c.coverage, c.breach, c.tainted)
            && v.money.map(|(cur, m)| (cur.to_owned(), m)) == c.money.as_ref().map(|m| (m.currency.clone(), m.minor))
            && v.chain_ids(dids).collect::<Vec<_>>() == c.chain_ids
            && ReceiptCore::from_view(v, dids).as_ref() == Ok(c)
    }

    #[test]
    fn s8_view_reads_what_the_coset_path_reads_on_every_generated_receipt() {
        let mut dids = DidCache::new();
        let (mut chained, mut denies) = (0, 0);
        for r in receipts() {
            let (v, u) = OpenedReceipt::open_view(&r, &mut dids).expect("the minted layout has a view");
            let s = slow(&r).unwrap();
            assert!(view_matches(&v, &s.core, &mut dids));
            assert_eq!(u.tbs(), s.sealed.tbs);
            chained += usize::from(!s.core.chain_ids.is_empty());
            denies += usize::from(s.core.verdict != jcp::decision::Verdict::Allow);
        }
        assert!(chained > 0 && denies > 0);
    }

    #[test]
    fn s8_fast_outcome_path_equals_the_coset_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.jcps");
        demo::write_demo(
            &p,
            &DemoOptions { receipts: 40, seed: 6, durability: Durability::GeneratorOnly, ..DemoOptions::default() },
        )
        .unwrap();
        let mut dids = DidCache::new();
        let mut n = 0;
        for i in Reader::new(std::fs::File::open(&p).unwrap()).unwrap() {
            if let Item::Record(r) = i {
                if r.kind == RecordKind::Outcome {
                    let (fo, fs) = open_outcome(&r.payload, &mut dids).expect("fast");
                    let (so, ss) = crate::record::open_outcome_coset(&r.payload, &mut dids).unwrap();
                    assert_eq!((fo, fs.tbs, fs.id, fs.position), (so, ss.tbs, ss.id, ss.position));
                    // A flipped byte anywhere never makes the fast path wider.
                    for j in 0..r.payload.len() {
                        let mut m = r.payload.clone();
                        m[j] ^= 0x04;
                        if let Some((o, _)) = open_outcome(&m, &mut dids) {
                            assert_eq!(crate::record::open_outcome_coset(&m, &mut dids).unwrap().0, o);
                        }
                    }
                    n += 1;
                }
            }
        }
        assert!(n > 10);
    }

    #[test]
    fn s3_fast_path_never_accepts_what_the_coset_path_refuses() {
        // One receipt of each shape the generator mints (allow or deny,
        // chained or not, priced, partial coverage, tainted, breached).
        let mut shapes = std::collections::HashSet::new();
        let rs: Vec<Vec<u8>> = receipts()
            .into_iter()
            .filter(|r| {
                let c = slow(r).unwrap().core;
                let shape = (
                    c.verdict == jcp::decision::Verdict::Allow,
                    c.chain_ids.len(),
                    c.money.is_some(),
                    c.coverage,
                    c.tainted,
                    c.breach.is_some(),
                );
                shapes.insert(shape)
            })
            .collect();
        assert!(rs.len() >= 3, "{} shapes", rs.len());
        // And the optional fields the generator does not mint: a priced,
        // tainted, breached chained allow; a priced single-grant allow; a
        // priced deny (re-sealed by a steward of the test's own).
        let mut rs = rs;
        let kp = jcp::identity::Keypair::from_seed([7; 32]).unwrap();
        let cores: Vec<ReceiptCore> = rs.iter().map(|r| slow(r).unwrap().core).collect();
        let money = Some(jcp::grant::Funds { currency: "EUR".into(), minor: 1234 });
        for (c, allow, chained) in
            cores.iter().map(|c| (c, c.verdict == jcp::decision::Verdict::Allow, !c.chain_ids.is_empty()))
        {
            let mut c = c.clone();
            c.steward = kp.did();
            c.money = money.clone();
            if allow && chained {
                c.tainted = true;
                c.breach = Some(jcp::decision::Reason::BudgetExceeded);
            }
            if allow || !chained {
                rs.push(c.seal(crate::cose::Position { seq: Some(9), known_through: Some(3) }, &kp).unwrap());
            }
        }
        let mut dids = DidCache::new();
        let (mut accepted, mut checked) = (0, 0);
        for r in &rs {
            let (v, _) = OpenedReceipt::open_view(r, &mut dids).expect("every minted shape has a view");
            assert!(view_matches(&v, &slow(r).unwrap().core, &mut dids));
            for i in 0..r.len() {
                for bit in 0..8 {
                    let mut m = r.clone();
                    m[i] ^= 1 << bit;
                    checked += 1;
                    if let Some(f) = open_receipt(&m, &mut dids) {
                        accepted += 1;
                        let s = slow(&m).unwrap_or_else(|| panic!("fast accepted byte {i} bit {bit}; coset refused"));
                        assert!(same(&f, &s));
                    }
                    // The view accepts exactly what the fast path does, and reads the same.
                    match (OpenedReceipt::open_view(&m, &mut dids), slow(&m)) {
                        (Some((v, _)), Some(s)) => assert!(view_matches(&v, &s.core, &mut dids), "byte {i} bit {bit}"),
                        (Some(_), None) => panic!("view accepted byte {i} bit {bit}; coset refused"),
                        (None, _) => assert!(open_receipt(&m, &mut dids).is_none(), "byte {i} bit {bit}"),
                    }
                }
            }
        }
        assert!(checked > 10_000);
        // Flips inside text values (action, dids' base58 …) stay well-formed.
        assert!(accepted > 0);
    }
}
