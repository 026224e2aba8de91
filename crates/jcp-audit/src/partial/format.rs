//! The partial file's format (`jcp-audit-partial/1`): a stream's checked
//! records as entries naming 32-byte values and actions by index into the
//! stream's tables, bytes as lowercase hex, record kinds and framing faults
//! by their codes.

use jcp::energy::{Coverage, Provenance};
use jcp::identity::Did;
use jcp_receipt::stream::{FaultCode, RecordKind};
use serde::{Deserialize, Serialize};

use crate::{AuditOptions, Verification};

/// A partial audit: some streams' checked records, mergeable with others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partial {
    /// [`PARTIAL_FORMAT`](super::PARTIAL_FORMAT).
    pub format: String,
    /// The spec applied (`jcp-v0.3`).
    pub spec: String,
    /// The options that change a report; every merged partial states the same.
    pub options: PartialOptions,
    /// The streams, ordered by path.
    pub streams: Vec<PartialStream>,
}

/// The audit options a report depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialOptions {
    /// Expected stewards (C5), as dids, sorted, each once; empty: any.
    pub expected_stewards: Vec<String>,
    /// `batch` or `strict` signature checking.
    pub verification: String,
    /// Findings kept in detail.
    pub max_findings: u64,
}

/// One stream's checked records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialStream {
    /// The path as the audit was given it (the report's stream line).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// 32-byte values the records name by index: public keys (stewards,
    /// subjects) and content ids (grants, chain links).
    pub keys: Vec<Hex<32>>,
    /// Action names the allows name by index.
    pub actions: Vec<String>,
    /// Every record and fault, in stream order.
    pub records: Vec<Entry>,
    /// The verified settlement notes beside the stream (§4.11), as bytes.
    pub settlement_notes: Vec<HexBytes>,
    /// Notes beside it that did not verify.
    pub settlement_notes_refused: u64,
}

/// One checked record (or framing fault) of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Entry {
    /// A framing fault: its code (`torn-tail`, …) and the bytes skipped.
    Fault {
        /// Byte offset.
        at: u64,
        /// The fault's code.
        code: String,
        /// Bytes skipped.
        len: u64,
    },
    /// A record refused: its kind, the refusal's code and sentence.
    Refused {
        /// Byte offset.
        at: u64,
        /// The record kind (`receipt`, `outcome`, …).
        kind: String,
        /// The refusal's code.
        code: String,
        /// What was wrong.
        message: String,
        /// A refused receipt's record id (its outcome is then not an orphan).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Hex<32>>,
    },
    /// A wire request record (§11).
    Request {
        /// Byte offset.
        at: u64,
        /// Whether its caller signature verified (an allow right behind one
        /// that did not is a finding). Required: a partial that does not say
        /// is refused, never read as verified.
        signed: bool,
    },
    /// A record carried whole (grant, revocation/amendment/statement notice,
    /// closing, settlement): decoded again at the merge, its signature as
    /// the partial found it (verified).
    Whole {
        /// Byte offset.
        at: u64,
        /// The record kind.
        kind: String,
        /// The record's bytes.
        bytes: HexBytes,
    },
    /// A verified receipt.
    Receipt(Box<ReceiptEntry>),
    /// A verified outcome.
    Outcome {
        /// Byte offset.
        at: u64,
        /// Its sealing facts.
        meta: MetaEntry,
        /// The receipt it names.
        receipt: Hex<32>,
    },
}

/// A sealed record's stream facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaEntry {
    /// The steward: an index into `keys`.
    pub steward: u32,
    /// The duplicate key (the first 16 bytes of the signature's `R`).
    pub dedup: Hex<16>,
    /// The record id (allows only: their outcomes name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Hex<32>>,
    /// Stream sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The point's `known_through` marker (§4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_through: Option<u64>,
}

/// A verified receipt's facts (§8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptEntry {
    /// Byte offset.
    pub at: u64,
    /// Its sealing facts.
    pub meta: MetaEntry,
    /// `jcp/1` or `jcp/2`.
    pub profile: ProfileTag,
    /// The leaf grant: an index into `keys`.
    pub grant: u32,
    /// The subject's key: an index into `keys`.
    pub subject: u32,
    /// `allow` or `deny`.
    pub verdict: VerdictTag,
    /// A deny's reason code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cost, µJ.
    pub cost_uj: u64,
    /// `HwShunt`, `ModelBased` or `Estimator`.
    pub provenance: Provenance,
    /// `Whole` or `Partial`.
    pub coverage: Coverage,
    /// The cost rests on a measurement (§5: a hardware grade carrying its
    /// measured figure); written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub measured: bool,
    /// The remainder the receipt states.
    pub remaining_uj: u64,
    /// The leaf's budget the receipt states.
    pub budget_uj: u64,
    /// Chain ids, root first (indices into `keys`); empty for one grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<u32>,
    /// A debit-point breach's reason code (§4.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<String>,
    /// A priced decision's money, minor units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money_minor: Option<u64>,
    /// An allow's action: an index into `actions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<u32>,
}

/// A receipt's profile tag (§8 profile versioning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileTag {
    /// The retired predecessor.
    #[serde(rename = "jcp/1")]
    Jcp1,
    /// The current profile.
    #[serde(rename = "jcp/2")]
    Jcp2,
}

/// A receipt's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictTag {
    /// Allowed (and debited).
    Allow,
    /// Denied, with a reason.
    Deny,
}

/// `N` bytes as exactly `2N` lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hex<const N: usize>(pub [u8; N]);

/// Bytes as lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

/// Only lowercase hex digits (a partial has one spelling).
fn lower_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl<const N: usize> Serialize for Hex<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(self.0))
    }
}

impl<'de, const N: usize> Deserialize<'de> for Hex<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let mut out = [0u8; N];
        if s.len() != 2 * N || !lower_hex(&s) || hex::decode_to_slice(&s, &mut out).is_err() {
            return Err(serde::de::Error::custom(format!("expected {} lowercase hex digits", 2 * N)));
        }
        Ok(Self(out))
    }
}

impl Serialize for HexBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match hex::decode(&s) {
            Ok(b) if lower_hex(&s) => Ok(Self(b)),
            _ => Err(serde::de::Error::custom("expected lowercase hex digits, an even number of them")),
        }
    }
}

impl PartialOptions {
    /// The options of `opts` a report depends on.
    pub fn of(opts: &AuditOptions) -> Self {
        let mut stewards: Vec<String> = opts.expected_stewards.iter().map(Did::to_did_string).collect();
        stewards.sort();
        stewards.dedup();
        Self {
            expected_stewards: stewards,
            verification: verification_name(opts.verification).into(),
            max_findings: opts.max_findings as u64,
        }
    }
}

/// A verification mode as a partial names it.
fn verification_name(v: Verification) -> &'static str {
    match v {
        Verification::Batch => "batch",
        Verification::Strict => "strict",
    }
}

/// The record kinds a partial names, by their names.
const KINDS: [(RecordKind, &str); 8] = [
    (RecordKind::Receipt, "receipt"),
    (RecordKind::Outcome, "outcome"),
    (RecordKind::Grant, "grant"),
    (RecordKind::Revocation, "revocation"),
    (RecordKind::Request, "request"),
    (RecordKind::Amendment, "amendment"),
    (RecordKind::Closing, "closing"),
    (RecordKind::Statement, "statement"),
];

/// A record kind's name in a partial.
pub(super) fn kind_name(k: RecordKind) -> &'static str {
    KINDS.iter().find(|(x, _)| *x == k).map_or("record", |(_, n)| n)
}

/// The record kind a partial names `s`.
pub(super) fn kind_of(s: &str) -> Option<RecordKind> {
    KINDS.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
}

/// The framing faults a partial can carry.
pub(super) const FAULTS: [FaultCode; 5] = [
    FaultCode::Garbage,
    FaultCode::Oversized,
    FaultCode::ChecksumMismatch,
    FaultCode::UnknownKind,
    FaultCode::TornTail,
];
