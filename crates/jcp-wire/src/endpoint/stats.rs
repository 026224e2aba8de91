//! What an operator (and the benchmark) counts: decisions, repeats,
//! refusals and group commits, and the size of the "decided once" memory
//! (§11).

use std::sync::atomic::AtomicU64;

/// Counters an operator (and the benchmark) reads.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests decided (allow or deny) and recorded.
    pub decided: AtomicU64,
    /// Of those, allows.
    pub allowed: AtomicU64,
    /// Repeats answered from memory.
    pub repeats: AtomicU64,
    /// Refused as stale.
    pub stale: AtomicU64,
    /// Refused: the caller's signature did not verify.
    pub impersonated: AtomicU64,
    /// Refused `unrecorded`.
    pub unrecorded: AtomicU64,
    /// Syncs (group commits).
    pub commits: AtomicU64,
    /// Requests remembered now.
    pub remembered: AtomicU64,
    /// Bytes the remembered requests hold now (table and stamp index, by
    /// their capacities), as of the last batch.
    pub remembered_bytes: AtomicU64,
    /// Frames refused (bad framing or message); their connections closed.
    pub refused_frames: AtomicU64,
    /// Connections handed from the admission runtime to the endpoint's own
    /// once their first authenticated request was answered
    /// ([`super::Config::admission_threads`]).
    pub admitted: AtomicU64,
    /// Allows recorded whose outcome is not (§4.11: their holder has not
    /// reported it), as of the last batch: each is held in memory until it is.
    pub unresolved: AtomicU64,
    /// Callers' signatures checked together in batches of two or more
    /// ([`super::CallerSignatures::Batched`]).
    pub signatures_batched: AtomicU64,
    /// The batches they were checked in.
    pub signature_batches: AtomicU64,
    /// Of those, batches that failed and were checked again one by one.
    pub signature_batches_failed: AtomicU64,
    /// §11 relay mode: calls metered and charged.
    pub charged: AtomicU64,
    /// §11 relay mode: calls lost mid-way (the backend stopped): their
    /// decisions stay unresolved (§4.11).
    pub lost: AtomicU64,
    /// Requests answered `unrecorded` without being recorded because the
    /// record is past its high-water mark (unauthenticated) or its limit.
    pub shed: AtomicU64,
    /// Requests, feeds and statement asks answered `rate-limited` before the core.
    pub rate_limited: AtomicU64,
}

/// A snapshot of [`Stats`].
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct StatsSnapshot {
    /// See [`Stats::decided`].
    pub decided: u64,
    /// See [`Stats::allowed`].
    pub allowed: u64,
    /// See [`Stats::repeats`].
    pub repeats: u64,
    /// See [`Stats::stale`].
    pub stale: u64,
    /// See [`Stats::impersonated`].
    pub impersonated: u64,
    /// See [`Stats::unrecorded`].
    pub unrecorded: u64,
    /// See [`Stats::commits`].
    pub commits: u64,
    /// See [`Stats::remembered`].
    pub remembered: u64,
    /// See [`Stats::remembered_bytes`]: the table's buckets (entries and
    /// their control bytes) and the stamp index's lists, by capacity.
    pub remembered_bytes: u64,
    /// See [`Stats::refused_frames`].
    pub refused_frames: u64,
    /// See [`Stats::admitted`].
    pub admitted: u64,
    /// See [`Stats::unresolved`].
    pub unresolved: u64,
    /// See [`Stats::signatures_batched`].
    pub signatures_batched: u64,
    /// See [`Stats::signature_batches`].
    pub signature_batches: u64,
    /// See [`Stats::signature_batches_failed`].
    pub signature_batches_failed: u64,
    /// See [`Stats::charged`].
    pub charged: u64,
    /// See [`Stats::lost`].
    pub lost: u64,
    /// See [`Stats::shed`].
    pub shed: u64,
    /// See [`Stats::rate_limited`].
    pub rate_limited: u64,
}
