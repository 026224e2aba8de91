//! The audit report: what was verified, what failed and why, what the
//! books say. Every type is `serde::Serialize` (the `--json` output and the
//! console payload); [`Report::render_text`] is the human table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jcp::cbor::ContentId;
use jcp_meter::conservation::Basis;
use serde::Serialize;

use crate::codes::{Authority, FindingCode};

/// One named problem at a byte offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Index of the stream in the input list.
    pub stream: usize,
    /// Byte offset in that stream (0 for findings about the whole audit).
    pub offset: u64,
    /// Stable code (`bad-signature`, `torn-tail`, `duplicate-record`, ...).
    pub code: FindingCode,
    /// A sentence saying what was wrong.
    pub message: String,
}

/// One stream's summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamSummary {
    /// Its path.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// Well-framed records read.
    pub records: u64,
    /// Framing faults (each also a finding).
    pub faults: u64,
    /// Where a torn final record starts, if there is one (reported, not read).
    pub torn_tail_at: Option<u64>,
}

/// Receipt counts (§8.2: failures counted, never skipped).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReceiptCounts {
    /// Receipt records seen.
    pub total: u64,
    /// Verified and accounted.
    pub verified: u64,
    /// Refused, by reason code.
    pub failed_by_reason: BTreeMap<FindingCode, u64>,
    /// Refused in total.
    pub failed: u64,
    /// Verified allows.
    pub allows: u64,
    /// Verified denies.
    pub denies: u64,
    /// Verified denies by reason.
    pub deny_reasons: BTreeMap<String, u64>,
    /// Verified receipts under the legacy `jcp/1` profile.
    pub legacy_jcp1: u64,
    /// Other records: outcomes, grants, revocation notices (verified).
    pub outcomes: u64,
    /// Grant records whose issuer signature verified.
    pub grants: u64,
    /// Revocation notices verified.
    pub revocation_notices: u64,
    /// Amendment notices verified and admitted (§4.7).
    pub amendments: u64,
    /// Closing records of continued work verified (§6.1).
    pub closings: u64,
    /// Budget-channel statement records whose statement verified (§4.5).
    pub channel_statements: u64,
    /// Wire request records (§11), each paired with the receipt after it.
    pub wire_requests: u64,
    /// Settlements of the metered path (§4.9, §4.11): each took back its
    /// reservation receipt's debit (that receipt stays counted among the
    /// allows above; its joules, its action and its revocation class do not).
    pub settlements: u64,
    /// Non-receipt records refused, by reason.
    pub other_failed_by_reason: BTreeMap<FindingCode, u64>,
}

/// The money dimension of a grant (§4.8).
#[derive(Debug, Clone, Default, Serialize)]
pub struct MoneyLine {
    /// The ceiling's currency, when the grant record is known and has one.
    pub currency: Option<String>,
    /// The ceiling in minor units.
    pub ceiling_minor: Option<u64>,
    /// Spent, minor units, from verified priced allows.
    pub spent_minor: u64,
}

/// §5.5: the conservation line of a grant, computed by the meter's
/// conservation (one implementation: [`jcp_meter::conservation::ledger`]).
pub use jcp_meter::conservation::LedgerConservation as Conservation;

/// §5.5: the line of a grant with ceiling `budget_uj` whose verified debits
/// rest on hardware readings (`measured_uj`) and on models or estimators
/// (`modelled_uj`); `partial` when any debit covered only part of its work
/// (§5.2). The fast engine and the reference audit both call this.
pub fn conservation_of(budget_uj: u64, measured_uj: u64, modelled_uj: u64, partial: bool) -> Conservation {
    let debits = jcp_meter::conservation::Debits {
        measured_uj,
        modelled_uj,
        coverage: if partial { jcp::energy::Coverage::Partial } else { jcp::energy::Coverage::Whole },
    };
    jcp_meter::conservation::ledger(budget_uj, &debits)
}

/// Per-grant budget replay.
#[derive(Debug, Clone, Serialize)]
pub struct GrantLine {
    /// The grant.
    pub grant_id: ContentId,
    /// Whether its signed grant record was in a stream (and verified).
    pub grant_record: bool,
    /// Its issuer, when known.
    pub issuer: Option<String>,
    /// Its subject, when known.
    pub subject: Option<String>,
    /// Its parent (chain link), when known.
    pub parent: Option<ContentId>,
    /// Its ceiling, from the grant record or, failing that, the receipts.
    pub budget_uj: Option<u64>,
    /// µJ spent (leaf and ancestor debits, §4.2).
    pub spent_uj: u64,
    /// Verified allows that debited it.
    pub allows: u64,
    /// Verified denies decided against it as leaf.
    pub denies: u64,
    /// Debit-point breaches recorded on its allows (§4.9).
    pub breaches: u64,
    /// The money dimension.
    pub money: MoneyLine,
    /// §5.5 conservation (when the budget is known).
    pub conservation: Option<Conservation>,
}

impl GrantLine {
    /// The line of grant `id`: what its record states, when a stream held
    /// it, and its ceiling `budget_uj`; the money line with `spent_minor`;
    /// no allow, deny or spend counted yet.
    pub(crate) fn of_record(
        id: ContentId,
        rec: Option<&jcp::grant::SignedGrant>,
        budget_uj: Option<u64>,
        spent_minor: u64,
        conservation: Option<Conservation>,
    ) -> Self {
        let funds = rec.and_then(|g| g.grant().budget_funds.as_ref());
        Self {
            grant_id: id,
            grant_record: rec.is_some(),
            issuer: rec.map(|g| g.grant().issuer.to_string()),
            subject: rec.map(|g| g.grant().subject.to_string()),
            parent: rec.and_then(|g| g.grant().parent),
            budget_uj,
            spent_uj: 0,
            allows: 0,
            denies: 0,
            breaches: 0,
            money: MoneyLine {
                currency: funds.map(|f| f.currency.clone()),
                ceiling_minor: funds.map(|f| f.minor),
                spent_minor,
            },
            conservation,
        }
    }
}

/// §8.2 group accounting by `(grant_id, subject)`.
#[derive(Debug, Clone, Serialize)]
pub struct GroupLine {
    /// The (leaf) grant.
    pub grant_id: ContentId,
    /// The worker (the grant's subject).
    pub subject: String,
    /// Actions allowed.
    pub allows: u64,
    /// Actions refused for a reason that shows the caller was the subject
    /// (`Reason::establishes_caller`: over budget, not granted, a caveat …).
    pub refusals: u64,
    /// Refusals naming this grant and subject whose reason §7 reaches
    /// before the caller is shown to be the subject (`bad-signature`,
    /// `wrong-subject`, `untrusted-root`, …): a stranger can cause them,
    /// so they are counted here, never in the subject's `refusals` (§8.2).
    pub unattributed: u64,
    /// Joules spent, µJ.
    pub uj: u64,
}

/// The §8.2 group table of the text report (nothing when there are no groups).
fn render_groups(s: &mut String, groups: &[GroupLine]) {
    use std::fmt::Write as _;
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n{:<16} {:<24} {:>8} {:>9} {:>12} {:>16}",
        "grant", "subject", "allows", "refusals", "unattributed", "µJ"
    );
    for g in groups {
        let subj: String = g.subject.chars().skip(8).take(20).collect();
        let _ = writeln!(
            s,
            "{:<16} {:<24} {:>8} {:>9} {:>12} {:>16}",
            &g.grant_id.to_hex()[..16],
            subj,
            g.allows,
            g.refusals,
            g.unattributed,
            g.uj
        );
    }
}

/// How an allow after a revocation is classified (§4.3 propagation).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RevocationClasses {
    /// `known_through < M`: the point had not yet heard.
    pub explicable: u64,
    /// `known_through >= M`: the point had heard and allowed anyway.
    pub violation: u64,
    /// No marker stated: "did not say" is not "was current".
    pub unverifiable: u64,
    /// Offsets (stream, offset) of the first few violations.
    pub violation_at: Vec<(usize, u64)>,
    /// Offsets of the first few unverifiable allows.
    pub unverifiable_at: Vec<(usize, u64)>,
}

/// A revocation and the allows on its subtree.
#[derive(Debug, Clone, Serialize)]
pub struct RevocationLine {
    /// The revoked grant.
    pub grant_id: ContentId,
    /// The feed marker `M` its allows are judged at: the issuer's, when an
    /// issuer's log is given and holds it; otherwise the smallest any notice
    /// of it states.
    pub marker: u64,
    /// The marker the issuer's log issued it at (only with a log that holds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_marker: Option<u64>,
    /// Where the first notice of it was (stream, offset); `(0, 0)` for a
    /// logged revocation no point recorded.
    pub at: (usize, u64),
    /// How many notices recorded this revocation (one per point that
    /// admitted it, usually); the allows are classified once, not per notice.
    pub notices: u64,
    /// `verified` (authority checked against the grant record), `forged`
    /// (authority refused: not applied) or `unverifiable` (grant unknown).
    pub authority: Authority,
    /// The classification of every verified allow whose chain contains it.
    pub allows: RevocationClasses,
}

/// A decision with no recorded outcome (§4.11).
#[derive(Debug, Clone, Serialize)]
pub struct UnresolvedLine {
    /// Stream index.
    pub stream: usize,
    /// Byte offset of the decision receipt.
    pub offset: u64,
    /// The receipt id.
    pub receipt: ContentId,
    /// The grant.
    pub grant_id: ContentId,
    /// The party that held it and ran the action.
    pub holder: String,
    /// The enforcement point that recorded it.
    pub steward: String,
    /// The action.
    pub action: String,
    /// Its debit (stays debited).
    pub cost_uj: u64,
    /// An operator's signed settlement note beside the stream naming this
    /// decision and its holder, if one verifies (§4.11). The decision stays
    /// unresolved in the record and its energy stays debited; the note is
    /// the operator's statement, shown beside it.
    pub settled: Option<SettledLine>,
}

/// An operator's settlement of an unresolved decision (a verified
/// `jcp-settlement-note/1` beside the stream).
#[derive(Debug, Clone, Serialize)]
pub struct SettledLine {
    /// `completed` or `failed`, as the operator states.
    pub status: &'static str,
    /// Who signed the note.
    pub settled_by: String,
    /// When (Unix seconds, as signed).
    pub at: u64,
    /// The operator's words.
    pub text: String,
    /// The note's content id.
    pub note: ContentId,
}

/// Provenance and coverage floors over verified allows (§5, §5.2).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnergyFloors {
    /// The worst provenance of any debit (`none` without debits).
    pub provenance_floor: String,
    /// `Partial` if any debit is partial.
    pub coverage_floor: String,
    /// µJ by provenance.
    pub uj_by_provenance: BTreeMap<String, u64>,
    /// Allows by provenance.
    pub allows_by_provenance: BTreeMap<String, u64>,
    /// Allows whose figure is partial.
    pub partial_allows: u64,
}

impl EnergyFloors {
    /// Takes back one allow of grade `provenance` and `uj` µJ (a settled
    /// reservation, §4.9): a grade with no allow left leaves the counts.
    pub(crate) fn take_back(&mut self, provenance: &str, uj: u64, partial: bool) {
        if let Some(n) = self.uj_by_provenance.get_mut(provenance) {
            *n = n.saturating_sub(uj);
        }
        if let Some(n) = self.allows_by_provenance.get_mut(provenance) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.allows_by_provenance.remove(provenance);
                self.uj_by_provenance.remove(provenance);
            }
        }
        if partial {
            self.partial_allows = self.partial_allows.saturating_sub(1);
        }
    }

    /// Reads the floors off the counts: the worst grade with an allow
    /// counted, `Partial` when any counted allow is (`none` without allows).
    pub(crate) fn read_floors(&mut self) {
        use jcp::energy::{Coverage, Provenance};
        let floor = self.allows_by_provenance.keys().filter_map(|p| Provenance::parse(p)).min();
        self.provenance_floor = floor.map_or("none".into(), |p| p.as_str().to_owned());
        self.coverage_floor = match floor {
            None => "none".into(),
            Some(_) if self.partial_allows > 0 => Coverage::Partial.as_str().to_owned(),
            Some(_) => Coverage::Whole.as_str().to_owned(),
        };
    }
}

/// A steward (enforcement point) seen in the streams.
#[derive(Debug, Clone, Serialize)]
pub struct StewardLine {
    /// Its did.
    pub steward: String,
    /// Verified signed records.
    pub records: u64,
    /// The smallest and largest `known_through` it stated.
    pub known_through: Option<(u64, u64)>,
    /// Verified receipts without a marker.
    pub receipts_without_marker: u64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The spec the audit applies.
    pub spec: &'static str,
    /// One line per stream.
    pub streams: Vec<StreamSummary>,
    /// Receipt counts.
    pub receipts: ReceiptCounts,
    /// Findings in detail (first `max_findings`).
    pub findings: Vec<Finding>,
    /// Findings by code (complete).
    pub findings_by_code: BTreeMap<FindingCode, u64>,
    /// Findings counted but not kept in detail.
    pub findings_omitted: u64,
    /// Per-grant budgets.
    pub grants: Vec<GrantLine>,
    /// Group accounting.
    pub groups: Vec<GroupLine>,
    /// Revocations and their classification.
    pub revocations: Vec<RevocationLine>,
    /// Unresolved decisions.
    pub unresolved: Vec<UnresolvedLine>,
    /// Unresolved decisions in total.
    pub unresolved_total: u64,
    /// Of the listed unresolved decisions, those an operator's verified note settles.
    pub unresolved_settled: u64,
    /// Settlement notes beside the streams that were refused (not verified,
    /// or naming no unresolved decision of that stream and holder).
    pub settlement_notes_refused: u64,
    /// Energy floors.
    pub energy: EnergyFloors,
    /// Stewards.
    pub stewards: Vec<StewardLine>,
    /// Agent-Safe intents recorded with the requests (a gateway's stream),
    /// recomputed: `None` when the streams record none, or when no
    /// recomputation was asked for (see [`Report::add_intents`]).
    pub intents: Option<IntentCheck>,
    /// No findings at all.
    pub clean: bool,
}

/// The recomputation of the Agent-Safe intents a stream records with its
/// requests (Agent-Safe Intent §4, §5, §8; JCP §8): each request's binding
/// must be accepted, canonical, its content id the frame's payload hash,
/// and sealed by a verifying receipt. Each call that fails is a finding
/// (`intent-mismatch`), never skipped.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct IntentCheck {
    /// Requests recorded.
    pub calls: u64,
    /// Of those, the ones whose intent hash recomputed and whose receipt seals it.
    pub recomputed: u64,
}

impl std::fmt::Display for IntentCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {} recomputed and sealed", self.recomputed, self.calls)
    }
}

/// The findings of an audit as they are found: every one counted by its
/// code, the first `max` kept in detail.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    kept: Vec<Finding>,
    by_code: BTreeMap<FindingCode, u64>,
    max: usize,
}

impl Findings {
    /// Keeps at most `max` findings in detail.
    pub(crate) fn new(max: usize) -> Self {
        Self { kept: Vec::new(), by_code: BTreeMap::new(), max }
    }

    /// Counts a finding, and keeps it while there is room.
    pub(crate) fn add(&mut self, stream: usize, offset: u64, code: FindingCode, message: String) {
        *self.by_code.entry(code).or_default() += 1;
        if self.kept.len() < self.max {
            self.kept.push(Finding { stream, offset, code, message });
        }
    }

    /// Counts `n` more findings of `code` without keeping them.
    pub(crate) fn count_more(&mut self, code: FindingCode, n: u64) {
        if n > 0 {
            *self.by_code.entry(code).or_default() += n;
        }
    }
}

/// §4.11: the decisions an audit lists as unresolved.
#[derive(Debug, Default)]
pub(crate) struct Unresolved {
    lines: Vec<UnresolvedLine>,
    total: u64,
}

impl Unresolved {
    /// Lists one stream's allows left with no outcome, in stream order: each
    /// is a finding naming its holder (its energy stays debited); the first
    /// `max` are kept in detail.
    pub(crate) fn list(&mut self, mut lines: Vec<UnresolvedLine>, findings: &mut Findings, max: usize) {
        lines.sort_by_key(|u| u.offset);
        for u in lines {
            self.total += 1;
            findings.add(u.stream, u.offset, crate::words::UNRESOLVED, crate::words::unresolved(&u.holder, u.cost_uj));
            if self.lines.len() < max {
                self.lines.push(u);
            }
        }
    }
}

/// What an audit's accounting hands over to become its [`Report`].
pub(crate) struct Parts {
    pub streams: Vec<StreamSummary>,
    pub receipts: ReceiptCounts,
    pub findings: Findings,
    pub grants: Vec<GrantLine>,
    pub groups: Vec<GroupLine>,
    pub revocations: Vec<RevocationLine>,
    pub unresolved: Unresolved,
    pub energy: EnergyFloors,
    pub stewards: Vec<StewardLine>,
}

impl Report {
    /// The report of `p`: findings in stream order (those at one place in
    /// the order they were found), the energy floors read off the counts;
    /// no settlement note attached yet.
    pub(crate) fn assemble(p: Parts) -> Self {
        let Findings { mut kept, by_code, .. } = p.findings;
        kept.sort_by_key(|f| (f.stream, f.offset));
        let total: u64 = by_code.values().sum();
        let mut energy = p.energy;
        energy.read_floors();
        Self {
            spec: "jcp-v0.3",
            streams: p.streams,
            receipts: p.receipts,
            findings_omitted: total.saturating_sub(kept.len() as u64),
            findings: kept,
            clean: total == 0,
            findings_by_code: by_code,
            grants: p.grants,
            groups: p.groups,
            revocations: p.revocations,
            unresolved: p.unresolved.lines,
            unresolved_total: p.unresolved.total,
            unresolved_settled: 0,
            settlement_notes_refused: 0,
            energy,
            stewards: p.stewards,
            intents: None,
        }
    }

    /// Adds the recomputation of the streams' recorded intents, made by a
    /// tool that reads them (`jcp_gateway::intents`): `failed` are its
    /// findings (stream index, offset, what failed), each counted as
    /// `intent-mismatch`; the report is then clean only if it was and
    /// nothing failed.
    pub fn add_intents(&mut self, check: IntentCheck, failed: Vec<(usize, u64, String)>) {
        let max = self.findings.len() + 64;
        for (stream, offset, message) in failed {
            *self.findings_by_code.entry(FindingCode::IntentMismatch).or_default() += 1;
            if self.findings.len() < max {
                self.findings.push(Finding { stream, offset, code: FindingCode::IntentMismatch, message });
            } else {
                self.findings_omitted += 1;
            }
        }
        self.findings.sort_by_key(|f| (f.stream, f.offset));
        let prior = self.intents.take().unwrap_or_default();
        self.intents =
            Some(IntentCheck { calls: prior.calls + check.calls, recomputed: prior.recomputed + check.recomputed });
        self.clean = self.findings_total() == 0;
    }

    /// 0 when clean, 1 when there is any finding.
    pub fn exit_code(&self) -> i32 {
        i32::from(!self.clean)
    }

    /// Total findings.
    pub fn findings_total(&self) -> u64 {
        self.findings_by_code.values().sum()
    }

    /// The human table.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "JCP audit ({}) — {}", self.spec, if self.clean { "CLEAN" } else { "FINDINGS" });
        for (i, st) in self.streams.iter().enumerate() {
            let _ = writeln!(
                s,
                "  stream {i}: {} ({} bytes, {} records, {} faults{})",
                st.path,
                st.bytes,
                st.records,
                st.faults,
                st.torn_tail_at.map(|o| format!(", torn tail at {o}")).unwrap_or_default()
            );
        }
        let r = &self.receipts;
        let _ = writeln!(
            s,
            "receipts: {} total, {} verified ({} allow, {} deny, {} jcp/1), {} failed",
            r.total, r.verified, r.allows, r.denies, r.legacy_jcp1, r.failed
        );
        for (code, n) in &r.failed_by_reason {
            let _ = writeln!(s, "  failed {code:<28} {n}");
        }
        for (code, n) in &r.deny_reasons {
            let _ = writeln!(s, "  denied {code:<28} {n}");
        }
        let _ = writeln!(
            s,
            "other records: {} outcomes, {} settlements, {} grants, {} revocation notices, {} amendments, {} closing records, {} channel statements, {} wire requests",
            r.outcomes, r.settlements, r.grants, r.revocation_notices, r.amendments, r.closings, r.channel_statements, r.wire_requests
        );
        let e = &self.energy;
        let _ = writeln!(s, "energy: provenance floor {}, coverage floor {}", e.provenance_floor, e.coverage_floor);
        if !self.grants.is_empty() {
            let _ = writeln!(
                s,
                "\n{:<16} {:>16} {:>16} {:>16} {:>8} {:>8} {:>12} {:>9}",
                "grant", "budget µJ", "spent µJ", "remaining µJ", "allows", "denies", "floor ppm", "basis"
            );
            for g in &self.grants {
                let (budget, remaining, floor, basis) = match &g.conservation {
                    Some(c) => (
                        c.budget_uj.to_string(),
                        if c.overspent_uj > 0 { format!("-{}", c.overspent_uj) } else { c.remaining_uj.to_string() },
                        c.floor_ppm.clone().unwrap_or_else(|| "-".into()),
                        basis_label(c),
                    ),
                    None => ("?".into(), "?".into(), "?".into(), "-"),
                };
                let _ = writeln!(
                    s,
                    "{:<16} {:>16} {:>16} {:>16} {:>8} {:>8} {:>12} {:>9}",
                    &g.grant_id.to_hex()[..16],
                    budget,
                    g.spent_uj,
                    remaining,
                    g.allows,
                    g.denies,
                    floor,
                    basis
                );
            }
        }
        render_groups(&mut s, &self.groups);
        for rv in &self.revocations {
            let _ = writeln!(
                s,
                "\nrevocation of {} at marker {}{} ({}, {} notice(s)): {} explicable, {} violation, {} unverifiable",
                rv.grant_id,
                rv.marker,
                if rv.log_marker.is_some() { ", as the issuer's log issued it" } else { "" },
                rv.authority,
                rv.notices,
                rv.allows.explicable,
                rv.allows.violation,
                rv.allows.unverifiable
            );
        }
        if self.unresolved_total > 0 {
            let _ = writeln!(s, "\nunresolved decisions: {}", self.unresolved_total);
            for u in &self.unresolved {
                let _ = writeln!(
                    s,
                    "  stream {} @{}: {} {} µJ, held by {}",
                    u.stream, u.offset, u.action, u.cost_uj, u.holder
                );
                if let Some(st) = &u.settled {
                    let _ =
                        writeln!(s, "    settled {} by {} (note {}): {}", st.status, st.settled_by, st.note, st.text);
                }
            }
        }
        if let Some(i) = &self.intents {
            let _ = writeln!(s, "\nintents (Agent-Safe, recorded with the requests): {i}");
        }
        if !self.findings_by_code.is_empty() {
            let _ = writeln!(s, "\nfindings: {}", self.findings_total());
            for (code, n) in &self.findings_by_code {
                let _ = writeln!(s, "  {code:<28} {n}");
            }
            for f in self.findings.iter().take(50) {
                let _ = writeln!(s, "  stream {} @{}: {}: {}", f.stream, f.offset, f.code, f.message);
            }
            if self.findings.len() > 50 || self.findings_omitted > 0 {
                let _ = writeln!(s, "  … (use --json for all)");
            }
        }
        s
    }
}

/// A conservation line's basis for the human table; without one, why there
/// is none (never "measured" over nothing).
fn basis_label(c: &Conservation) -> &'static str {
    match c.basis {
        Some(Basis::Measured) => "measured",
        Some(Basis::Modelled) => "modelled",
        None => c.unstated.last().map_or("-", |u| u.as_str()),
    }
}
