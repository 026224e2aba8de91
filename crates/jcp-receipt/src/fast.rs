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

use crate::cose::{DidCache, Position, Sealed, Unsealed, KNOWN_THROUGH_LABEL, SEQ_LABEL};
use crate::receipt::{slot_of, CoreView, FVal, OpenedReceipt, ReceiptCore, SlottedCore, TextItems, FIELDS, RANK};
use crate::record::{Outcome, OutcomeStatus};

struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// A head in its shortest form: (major, argument).
    fn head(&mut self) -> Option<(u8, u64)> {
        let ib = self.byte()?;
        let (major, ai) = (ib >> 5, ib & 0x1f);
        let v = match ai {
            0..=23 => u64::from(ai),
            24 => {
                let v = u64::from(self.byte()?);
                (v >= 24).then_some(v)?
            }
            25 => {
                let s = self.take(2)?;
                let v = u64::from(u16::from_be_bytes([s[0], s[1]]));
                (v > 0xff).then_some(v)?
            }
            26 => {
                let s = self.take(4)?;
                let v = u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]]));
                (v > 0xffff).then_some(v)?
            }
            27 => {
                let s = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                let v = u64::from_be_bytes(a);
                (v > 0xffff_ffff).then_some(v)?
            }
            _ => return None,
        };
        Some((major, v))
    }

    fn len_of(&mut self, major: u8) -> Option<usize> {
        let (m, n) = self.head()?;
        if m != major {
            return None;
        }
        usize::try_from(n).ok()
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len_of(2)?;
        self.take(n)
    }

    /// A text string's bytes, UTF-8 unchecked (see [`FVal::Text`]).
    fn text_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len_of(3)?;
        self.take(n)
    }

    fn uint(&mut self) -> Option<u64> {
        let (m, n) = self.head()?;
        (m == 0).then_some(n)
    }

    /// A core value as the profile reads it: uint, text, or array of text.
    fn value(&mut self) -> Option<FVal<'a>> {
        Some(match *self.b.get(self.pos)? >> 5 {
            0 => FVal::Uint(self.uint()?),
            3 => FVal::Text(self.text_bytes()?),
            4 => {
                let n = self.len_of(4)?;
                let start = self.pos;
                for _ in 0..n {
                    self.text_bytes()?;
                }
                FVal::Texts(TextItems::Cbor { enc: &self.b[start..self.pos], n })
            }
            _ => return None,
        })
    }

    fn done(&self) -> bool {
        self.pos == self.b.len()
    }
}

/// The text strings of a [`TextItems::Cbor`] array, in order (checked when
/// the array was read; walking stops at anything else).
pub(crate) fn text_items(enc: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut c = Cur { b: enc, pos: 0 };
    std::iter::from_fn(move || if c.done() { None } else { c.text_bytes() })
}

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

/// A receipt core straight into its slots: a strict canonical map whose
/// every key is a field the profile knows, each at most once, in canonical
/// order (checked by rank, [`RANK`]); anything else is `None` (the `coset`
/// path then names it). No allocation (an array's items stay in place).
fn receipt_core<'a>(b: &'a [u8], out: &mut SlottedCore<'a>) -> Option<()> {
    let mut c = Cur { b, pos: 0 };
    let n = c.len_of(5)?;
    if n > FIELDS {
        return None;
    }
    out.n = n;
    let mut prev: Option<u8> = None;
    for (i, entry) in out.entries.iter_mut().enumerate().take(n) {
        let k = c.text_bytes()?;
        let slot = slot_of(k)?;
        let rank = RANK[slot];
        // RFC 8949 §4.2.1: strictly increasing key order (a repeat is equal).
        if prev.is_some_and(|p| rank <= p) {
            return None;
        }
        prev = Some(rank);
        *entry = (k, c.value()?);
        out.slots[slot] = Some(i);
    }
    c.done().then_some(())
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
    let steward = dids.parse_bytes(kid).ok()?;
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
    let mut slotted = SlottedCore { entries: [(&[][..], FVal::Other); FIELDS], n: 0, slots: [None; FIELDS] };
    receipt_core(payload, &mut slotted)?;
    let view = CoreView::from_slotted(&slotted, dids).ok()?;
    (view.steward_key == *unsealed.steward.public_bytes()).then_some((view, unsealed))
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
    (o.steward == unsealed.steward).then_some((o, unsealed))
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
        demo::write_demo(&p, &DemoOptions { receipts: 120, seed: 5, durability: Durability::GeneratorOnly, ..DemoOptions::default() }).unwrap();
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
    fn s8_canonical_rank_table_matches_the_key_order() {
        let names = [
            "action", "breach", "budget_remaining_uj", "budget_uj", "chain_ids", "cost_currency", "cost_minor", "cost_uj",
            "deny_reason", "energy_coverage", "energy_provenance", "flow", "frame_kind", "grant_id", "issuer", "jcp_receipt",
            "payload_hash", "resource", "steward", "subject", "trust", "verdict",
        ];
        assert_eq!(names.len(), FIELDS);
        for a in names {
            for b in names {
                let (sa, sb) = (slot_of(a.as_bytes()).unwrap(), slot_of(b.as_bytes()).unwrap());
                // RFC 8949 §4.2.1 over the encoded keys: the text head orders by length first.
                let canonical = (a.len(), a).cmp(&(b.len(), b));
                assert_eq!(RANK[sa].cmp(&RANK[sb]), canonical, "{a} vs {b}");
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
        demo::write_demo(&p, &DemoOptions { receipts: 40, seed: 6, durability: Durability::GeneratorOnly, ..DemoOptions::default() }).unwrap();
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
        let rs = receipts();
        let mut dids = DidCache::new();
        let (mut accepted, mut checked) = (0, 0);
        for r in rs.iter().take(3) {
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
