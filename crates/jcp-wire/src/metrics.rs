//! The enforcement point as `OpenMetrics` (what `jcp serve --metrics` exposes).
//!
//! | metric | type | what |
//! |---|---|---|
//! | `jcp_wire_decisions_total` | counter | decisions answered, by `verdict` (allow / deny) and `reason` (the deny reason code; `none` on an allow) |
//! | `jcp_wire_repeats_total` | counter | repeats answered from memory: not decided again (§11) |
//! | `jcp_wire_record_commit_seconds` | histogram | the record's group commit: one `fdatasync` covering a batch (§4.11) |
//! | `jcp_wire_request_seconds` | histogram | a request over a socket, from its frame read to its answer written: the endpoint's whole share of the caller's latency |
//! | `jcp_wire_request_core_wait_seconds` | histogram | a request waiting for the core thread to take it up (behind the requests ahead of it) |
//! | `jcp_wire_caller_signatures_total` | counter | callers' signatures checked, by `check`: `batch` (together with the rest of a core batch that verified) or `alone` (the same Ed25519 predicate: a lone request, a request of a batch that failed, or every request under `--strict-signatures`) |
//! | `jcp_wire_caller_signature_batches_total` | counter | core batches whose callers' signatures were checked together, by `result`: `verified`, or `failed` (each then checked alone) |
//! | `jcp_wire_request_durable_wait_seconds` | histogram | a decided request waiting for the group commit that makes its batch durable (the commit interval, the sync, the syncs ahead of it) |
//! | `jcp_wire_remembered_requests` | gauge | requests remembered while their stamp is inside the window (§11) |
//! | `jcp_wire_unresolved_allows` | gauge | allows recorded whose outcome is not (§4.11): each is held in memory (under 100 bytes) until its holder reports it |
//! | `jcp_wire_revocation_known_through` | gauge | the revocation-knowledge marker this point states (§4.3); absent when it states none |
//! | `jcp_wire_grant_spent_microjoules` | gauge | spend counted against a grant here (its own allows, and a budget channel's settled peer spend, §4.5), by `grant`: only grants allowed under a trust root, at most [`MAX_GRANT_SERIES`] |
//! | `jcp_wire_grant_budget_microjoules` | gauge | an allowed leaf grant's joule ceiling, by `grant`, the same grants |
//! | `jcp_wire_grants_spent_unlabelled_microjoules` | gauge | the spend of every other grant with spend here, summed (no series each: a caller with no trusted grant creates none) |
//! | `jcp_wire_grants_unlabelled` | gauge | how many grants that sum covers |
//! | `jcp_wire_refused_frames_total` | counter | frames refused before any decision, by `code`: the refusal's reason code (`frame-oversized`, `frame-timeout`, `busy`, `malformed` …; a fixed set, [`crate::WireError::code`]) |
//! | `jcp_wire_rate_limited_total` | counter | requests, feeds and statement asks answered `rate-limited` before the core (issue 34) |
//! | `jcp_wire_shed_total` | counter | requests answered `unrecorded` without being recorded: past the record's high-water mark (unauthenticated) or its limit |
//!
//! A decision is counted when its answer leaves the endpoint, after the
//! group commit that made it durable: a decision whose commit failed is
//! counted as what the caller got (`deny`, `unrecorded`), never as the allow
//! it would have been.

use std::fmt;
use std::sync::atomic::AtomicU64;

use jcp::cbor::ContentId;
use jcp::decision::Verdict;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

/// A decision's verdict and reason.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `allow` or `deny`.
    pub verdict: String,
    /// The deny reason code (`budget-exceeded`, `revoked`, ...); `none` on an allow.
    pub reason: String,
}

impl DecisionLabels {
    /// The labels of a verdict.
    pub fn of(v: Verdict) -> Self {
        match v {
            Verdict::Allow => Self { verdict: "allow".into(), reason: "none".into() },
            Verdict::Deny(r) => Self { verdict: "deny".into(), reason: r.as_str().into() },
        }
    }
}

/// How a caller's signature was checked.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CheckLabels {
    /// `batch` or `alone`.
    pub check: &'static str,
}

/// Why a frame was refused: its reason code.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// [`crate::WireError::code`].
    pub code: &'static str,
}

/// What a batch check found.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BatchLabels {
    /// `verified` or `failed`.
    pub result: &'static str,
}

/// A grant, by content id (hex).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GrantLabels {
    /// The grant's content id.
    pub grant: String,
}

type GaugeU = Gauge<u64, AtomicU64>;

/// The most grants given series of their own (`grant_spent`, `grant_budget`).
pub const MAX_GRANT_SERIES: usize = 1024;

/// Which grants have series of their own, and the others' spend.
#[derive(Debug, Default)]
struct GrantSeries {
    labelled: std::collections::HashSet<ContentId>,
    /// Spend of the grants without series, each (its last figure), to keep their sum.
    other: std::collections::HashMap<ContentId, u64>,
    /// The sum of `other`, kept as figures change (not re-added on every spend).
    other_sum: u64,
}

/// The endpoint's registry. Every recording is an atomic update: the core
/// and sync threads record, a scrape renders, and none waits on another.
#[derive(Debug)]
pub struct WireMetrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    repeats: Counter,
    commit: Histogram,
    request: Histogram,
    core_wait: Histogram,
    durable_wait: Histogram,
    remembered: GaugeU,
    unresolved: GaugeU,
    /// One series (no labels) while a marker is stated; empty while none is.
    known_through: Family<Vec<(String, String)>, GaugeU>,
    spent: Family<GrantLabels, GaugeU>,
    budget: Family<GrantLabels, GaugeU>,
    series: std::sync::Mutex<GrantSeries>,
    spent_other: GaugeU,
    unlabelled: GaugeU,
    refused_frames: Family<RefusalLabels, Counter>,
    rate_limited: Counter,
    shed: Counter,
    signatures: Family<CheckLabels, Counter>,
    signature_batches: Family<BatchLabels, Counter>,
}

impl Default for WireMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl WireMetrics {
    /// An empty registry.
    pub fn new() -> Self {
        // 25 µs .. ~0.8 s: where a request's time at the endpoint goes.
        let stage = || Histogram::new(exponential_buckets(0.000_025, 2.0, 16));
        let mut m = Self {
            registry: Registry::with_prefix("jcp_wire"),
            decisions: Family::default(),
            repeats: Counter::default(),
            // 50 µs .. ~3.3 s: an fdatasync on anything from tmpfs to a busy disk.
            commit: Histogram::new(exponential_buckets(0.000_05, 2.0, 17)),
            request: stage(),
            core_wait: stage(),
            durable_wait: stage(),
            remembered: GaugeU::default(),
            unresolved: GaugeU::default(),
            known_through: Family::default(),
            spent: Family::default(),
            budget: Family::default(),
            series: std::sync::Mutex::new(GrantSeries::default()),
            spent_other: GaugeU::default(),
            unlabelled: GaugeU::default(),
            refused_frames: Family::default(),
            rate_limited: Counter::default(),
            shed: Counter::default(),
            signatures: Family::default(),
            signature_batches: Family::default(),
        };
        let r = &mut m.registry;
        let uj = || Unit::Other("microjoules".into());
        r.register(
            "decisions",
            "Decisions answered (§7, §11), by verdict and reason code (none on an allow); counted once durable",
            m.decisions.clone(),
        );
        r.register("repeats", "Repeats of a remembered request answered with its first response: not decided, debited or recorded again (§11)", m.repeats.clone());
        r.register_with_unit("record_commit", "The record's group commit: one fdatasync making a batch of decisions durable before any answer leaves (§4.11)", Unit::Seconds, m.commit.clone());
        r.register_with_unit(
            "request",
            "A request over a socket, from its frame read to its answer written: the endpoint's whole share of the caller's latency",
            Unit::Seconds,
            m.request.clone(),
        );
        r.register_with_unit(
            "request_core_wait",
            "A request waiting for the core thread to take it up (behind the requests ahead of it)",
            Unit::Seconds,
            m.core_wait.clone(),
        );
        r.register_with_unit(
            "request_durable_wait",
            "A decided request waiting for the group commit that makes its batch durable: the commit interval, the sync, the syncs ahead of it (§4.11)",
            Unit::Seconds,
            m.durable_wait.clone(),
        );
        r.register(
            "remembered_requests",
            "Requests remembered while their stamp is inside the freshness window (§11)",
            m.remembered.clone(),
        );
        r.register(
            "unresolved_allows",
            "Allows recorded whose outcome is not yet (§4.11): each is held in memory until its holder reports it",
            m.unresolved.clone(),
        );
        r.register("revocation_known_through", "The revocation-knowledge marker this point states (§4.3); absent when it states none (an auditor reads its allows as unverifiable)", m.known_through.clone());
        r.register_with_unit("grant_spent", "Spend counted against a grant at this point: its own allows and a budget channel's settled peer spend (§4.5)", uj(), m.spent.clone());
        r.register_with_unit(
            "grant_budget",
            "An allowed leaf grant's joule ceiling (grants allowed under a trust root only, bounded)",
            uj(),
            m.budget.clone(),
        );
        r.register_with_unit(
            "grants_spent_unlabelled",
            "The spend of every grant with spend here that has no series of its own (not allowed under a trust root, or past the bound), summed",
            uj(),
            m.spent_other.clone(),
        );
        r.register("grants_unlabelled", "How many grants grants_spent_unlabelled sums", m.unlabelled.clone());
        r.register(
            "refused_frames",
            "Frames refused before any decision, by reason code; their connections closed",
            m.refused_frames.clone(),
        );
        r.register(
            "rate_limited",
            "Requests, feeds and statement asks answered rate-limited before the core: a source past its request rate or out of refusals (nothing decided or recorded)",
            m.rate_limited.clone(),
        );
        r.register(
            "shed",
            "Requests answered unrecorded without being recorded: the record is past its high-water mark and the request is not authenticated, or the record is at its limit",
            m.shed.clone(),
        );
        r.register(
            "caller_signatures",
            "Callers' signatures checked, by how: batch (with the rest of a core batch that verified) or alone (the same Ed25519 predicate: a lone request, a request of a failed batch, or every one under --strict-signatures)",
            m.signatures.clone(),
        );
        r.register(
            "caller_signature_batches",
            "Core batches whose callers' signatures were checked together, by result: verified, or failed (each then checked alone)",
            m.signature_batches.clone(),
        );
        m
    }

    /// `n` callers' signatures checked together in a batch that `verified`
    /// (or failed: each is then checked alone and counted so).
    pub fn signature_batch(&self, n: u64, verified: bool) {
        let result = if verified { "verified" } else { "failed" };
        self.signature_batches.get_or_create(&BatchLabels { result }).inc();
        if verified {
            self.signatures.get_or_create(&CheckLabels { check: "batch" }).inc_by(n);
        }
    }

    /// A caller's signature checked alone (the one Ed25519 predicate).
    pub fn signature_alone(&self) {
        self.signatures.get_or_create(&CheckLabels { check: "alone" }).inc();
    }

    /// An answered decision (`repeat`: answered from memory).
    pub fn answered(&self, verdict: Verdict, repeat: bool) {
        if repeat {
            self.repeats.inc();
        } else {
            self.decisions.get_or_create(&DecisionLabels::of(verdict)).inc();
        }
    }

    /// A group commit that took `secs`.
    pub fn committed(&self, secs: f64) {
        self.commit.observe(secs);
    }

    /// A request over a socket answered `elapsed` after its frame was read.
    pub fn request_answered(&self, elapsed: std::time::Duration) {
        self.request.observe(elapsed.as_secs_f64());
    }

    /// A request taken up by the core `waited` after it was handed over.
    pub fn core_waited(&self, waited: std::time::Duration) {
        self.core_wait.observe(waited.as_secs_f64());
    }

    /// A decided request made durable `waited` after it was decided.
    pub fn durable_waited(&self, waited: std::time::Duration) {
        self.durable_wait.observe(waited.as_secs_f64());
    }

    /// The marker now stated (`None`: none, and the series goes).
    pub fn known_through(&self, marker: Option<u64>) {
        match marker {
            Some(k) => {
                self.known_through.get_or_create(&Vec::new()).set(k);
            }
            None => self.known_through.clear(),
        }
    }

    fn series(&self) -> std::sync::MutexGuard<'_, GrantSeries> {
        self.series.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Spend now counted against `grant`: its own series if it has one,
    /// else the unlabelled sum.
    pub fn spent(&self, grant: &ContentId, uj: u64) {
        let mut s = self.series();
        if s.labelled.contains(grant) {
            drop(s);
            self.spent.get_or_create(&GrantLabels { grant: grant.to_hex() }).set(uj);
            return;
        }
        let before = s.other.insert(*grant, uj).unwrap_or(0);
        s.other_sum = s.other_sum.saturating_sub(before).saturating_add(uj);
        self.spent_other.set(s.other_sum);
        self.unlabelled.set(s.other.len() as u64);
    }

    /// A grant's spend re-established from the record at open: its own
    /// series with `label` (the gate has trust roots: its allows were
    /// anchored when decided) and room under [`MAX_GRANT_SERIES`], else the
    /// unlabelled sum.
    pub fn replayed(&self, grant: &ContentId, uj: u64, label: bool) {
        {
            let mut s = self.series();
            if label && s.labelled.len() < MAX_GRANT_SERIES {
                s.labelled.insert(*grant);
            }
        }
        self.spent(grant, uj);
    }

    /// A leaf grant allowed: with `anchored` (its resource has trust roots,
    /// so the allow means a trusted root issued its chain) and room under
    /// [`MAX_GRANT_SERIES`], it gets series of its own (its ceiling and,
    /// from now on, its spend). A caller whose grant no trust root anchors
    /// creates no series, and a denial creates none at all.
    pub fn allowed(&self, grant: &ContentId, budget_uj: u64, anchored: bool) {
        let mut s = self.series();
        if !s.labelled.contains(grant) {
            if !anchored || s.labelled.len() >= MAX_GRANT_SERIES {
                return;
            }
            s.labelled.insert(*grant);
            if let Some(uj) = s.other.remove(grant) {
                s.other_sum = s.other_sum.saturating_sub(uj);
                self.spent_other.set(s.other_sum);
                self.unlabelled.set(s.other.len() as u64);
                self.spent.get_or_create(&GrantLabels { grant: grant.to_hex() }).set(uj);
            }
        }
        drop(s);
        self.budget.get_or_create(&GrantLabels { grant: grant.to_hex() }).set(budget_uj);
    }

    /// A frame refused before any decision, for `code` ([`crate::WireError::code`]).
    pub fn refused_frame(&self, code: &'static str) {
        self.refused_frames.get_or_create(&RefusalLabels { code }).inc();
    }

    /// One request, feed or statement ask answered `rate-limited` (issue 34).
    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// One request shed by the record's high-water mark or limit (issue 34).
    pub fn shed(&self) {
        self.shed.inc();
    }

    /// The exposition, with `remembered` requests and `unresolved` allows
    /// as of now: a complete `OpenMetrics` message.
    pub fn render(&self, remembered: u64, unresolved: u64) -> Result<String, fmt::Error> {
        self.remembered.set(remembered);
        self.unresolved.set(unresolved);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry)?;
        Ok(s)
    }
}
