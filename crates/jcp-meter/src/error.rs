//! The crate's one error type. Each variant is a reason code of the spec or of
//! this crate's formats, with a stable [`Error::code`].

use jcp::cbor::{DecodeError, SchemaError};

/// Everything `jcp-meter` refuses, with what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ------------------------------------------------------------ configuration
    /// A window or probe interval of zero, or one too long to be a window.
    #[error("bad interval: {detail}")]
    BadInterval {
        /// Which interval, and the range it must fall in.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {detail}")]
    Io {
        /// The file's path.
        path: String,
        /// The operating system's error.
        detail: String,
    },

    // ------------------------------------------------------------ counter traces
    /// A recorded counter trace is not well-formed JSON of the trace format.
    #[error("trace: {at}: {detail}")]
    TraceMalformed {
        /// Where in the trace: the field path, or the line and column of the JSON.
        at: String,
        /// What is wrong there.
        detail: String,
    },
    /// The trace declares a format this build does not read.
    #[error("trace: unsupported format `{found}` (expected `jcp-meter-trace/1`)")]
    TraceUnsupported {
        /// The `format` the trace declares.
        found: String,
    },
    /// Sample timestamps must strictly increase.
    #[error("trace: sample {index}: t_ns {t_ns} does not follow {previous_ns}")]
    TraceTimeNotMonotonic {
        /// The sample's position in the trace, from 0.
        index: usize,
        /// Its monotonic timestamp, ns.
        t_ns: u64,
        /// The timestamp of the sample before it, ns.
        previous_ns: u64,
    },
    /// A sample's counter list does not match the declared counters.
    #[error("trace: sample {index}: {got} counter values for {expected} counters")]
    TraceCounterCount {
        /// The sample's position in the trace, from 0.
        index: usize,
        /// How many counters the trace declares.
        expected: usize,
        /// How many values the sample carries.
        got: usize,
    },
    /// A counter value above its declared range.
    #[error("trace: sample {index}: counter {counter} reads {value} above its range {max}")]
    TraceValueOutOfRange {
        /// The sample's position in the trace, from 0.
        index: usize,
        /// The counter's position among the declared counters.
        counter: usize,
        /// The value the sample reads, µJ.
        value: u64,
        /// The counter's declared `max_range_uj`.
        max: u64,
    },

    // ------------------------------------------------------------ calibration (§5.1 rung 5)
    /// Calibration needs a live counter and none is live.
    #[error("no live counter to calibrate against: {detail}")]
    NoLiveCounter {
        /// Why each counter rung is not live (or which read failed).
        detail: String,
    },
    /// The calibration's counter samples lie too far apart to rule out a
    /// missed wrap (§5.1 wraparound): the measured power could read low.
    #[error("calibration: {detail}")]
    CalibrationWrapUnobservable {
        /// Which counter, the longest gap between its samples and the rate it was held to.
        detail: String,
    },
    /// The counter does not read the domain the calibrated power is for.
    #[error("calibration: {detail}")]
    CalibrationWrongDomain {
        /// Which counter was offered, and what it reads instead of the CPU package.
        detail: String,
    },
    /// A stored calibration is not well-formed.
    #[error("calibration file: {detail}")]
    CalibrationMalformed {
        /// The field and what is wrong with it.
        detail: String,
    },
    /// A calibration measured on another host is refused here (§5.1 rung 6: another host's calibration is an estimate).
    #[error("calibration measured on {measured_on}, not on this host ({here})")]
    CalibrationMeasuredElsewhere {
        /// The host the calibration names.
        measured_on: String,
        /// This host.
        here: String,
    },

    // ------------------------------------------------------------ efficiency/1 (§5.2, appendix)
    /// Bytes that are not canonical det-CBOR (§3).
    #[error("efficiency/1: {0}")]
    Cbor(DecodeError),
    /// A canonical item that is not the object it was read as.
    #[error("efficiency/1: {0}")]
    Schema(SchemaError),
    /// A profile tag this build does not implement.
    #[error("efficiency/1: unknown profile `{found}`")]
    UnknownProfile {
        /// The `efficiency` tag the receipt carries.
        found: String,
    },
    /// A provenance label that is not one of the three (§5).
    #[error("{field}: `{found}` is not a provenance (HwShunt, ModelBased, Estimator)")]
    BadProvenance {
        /// The field that carries the label.
        field: &'static str,
        /// The label found.
        found: String,
    },
    /// `energy_coverage` present with any value but `"Partial"` (§5.2).
    #[error("energy_coverage: `{found}` is refused; the field is present only as \"Partial\" (absent is Whole)")]
    BadCoverage {
        /// The text found, or a diagnostic rendering of a value that is not text.
        found: String,
    },
    /// A Partial receipt carrying `uj_per_accepted_token` (§5.2).
    #[error(
        "a Partial receipt carries uj_per_accepted_token: a partial figure divided by tokens is not a cost per token"
    )]
    PartialHeadline,
    /// A headline that is not the receipt's own figure divided by its tokens.
    #[error("uj_per_accepted_token {carried} is not energy_uj / accepted_tokens ({computed})")]
    HeadlineMismatch {
        /// The `uj_per_accepted_token` the receipt carries.
        carried: u64,
        /// What `floor(energy_uj / accepted_tokens)` gives (or why there is none: no token accepted).
        computed: String,
    },
    /// A `Whole` receipt with accepted tokens that carries no
    /// `uj_per_accepted_token`: the headline is sealed by the steward, never
    /// filled in by a reader (docs/decisions.md, §5.2).
    #[error(
        "a Whole receipt with accepted tokens carries no uj_per_accepted_token (energy_uj / accepted_tokens would be {computed}): the headline is sealed, never filled in"
    )]
    HeadlineMissing {
        /// What `floor(energy_uj / accepted_tokens)` gives.
        computed: u64,
    },
    /// An outcome naming no activity (§5.3).
    #[error("the outcome names no activity by content id: not traceable (§5.3)")]
    Untraceable,
    /// One activity named twice (§5.3: refused before the sum).
    #[error("activity {id} is bound twice (§5.3)")]
    ActivityBoundTwice {
        /// The activity's content id, hex.
        id: String,
    },
    /// The signature does not verify for the steward.
    #[error("efficiency/1: signature does not verify for steward {steward}")]
    BadSignature {
        /// The steward the receipt names, as a did:key.
        steward: String,
    },
    /// The steward is not a did:key.
    #[error("efficiency/1: steward: {detail}")]
    BadSteward {
        /// Why the steward field is not a did:key.
        detail: String,
    },
    /// The same receipt given twice to a total.
    #[error("receipt {id} is counted twice in one total")]
    ReceiptCountedTwice {
        /// The receipt's content id, hex.
        id: String,
    },
    /// A total over no receipt has no floor to take.
    #[error("a total over no receipt has no provenance floor")]
    EmptyTotal,
    /// A sum that does not fit the integer it is carried in.
    #[error("{what} overflows")]
    Overflow {
        /// The sum that overflowed (e.g. `calibration energy`).
        what: &'static str,
    },

    // ------------------------------------------------------------ traceability (§5.3)
    /// A named activity the resolver cannot produce.
    #[error("activity {id} cannot be resolved")]
    UnresolvableActivity {
        /// The activity's content id, hex.
        id: String,
    },
    /// The resolver produced bytes whose content id is not the one named.
    #[error("activity named {named} resolved to bytes with content id {got}")]
    ActivityIdMismatch {
        /// The content id the outcome names, hex.
        named: String,
        /// The content id of the bytes the resolver produced, hex.
        got: String,
    },
    /// Activity bytes without a readable energy figure.
    #[error("activity {id}: {detail}")]
    ActivityMalformed {
        /// The activity's content id, hex.
        id: String,
        /// What is wrong with its bytes.
        detail: String,
    },

    // ------------------------------------------------------------ dynamism (§5.4)
    /// A named cause without the content id of the reading that supports it.
    #[error("cause `{cause}` names no evidence content id (§5.4)")]
    CauseWithoutEvidence {
        /// The cause as declared.
        cause: String,
    },
    /// A baseline asked of a session that cannot give one: recorded without
    /// a declared occupancy (it would apply nowhere), or without a `Whole`
    /// metered window (a partial or missing figure is no band).
    #[error("baseline-not-declarable: {why}")]
    BaselineNotDeclarable {
        /// Which of the two it lacks.
        why: &'static str,
    },

    // ------------------------------------------------------------ conservation / bounds (§5.5, §5.6)
    /// A grant of zero µJ has no ppm floor.
    #[error("a budget of 0 µJ has no conservation floor")]
    ZeroBudget,
    /// A shape declared after the windows it is held to began (§5.6: declared in advance).
    #[error("the shape was declared at {declared_at_ns} ns, after the first window began at {first_window_ns} ns: post-hoc, refused")]
    ShapeDeclaredAfter {
        /// When the shape was declared, monotonic ns.
        declared_at_ns: u64,
        /// When the first window it is held to began, monotonic ns.
        first_window_ns: u64,
    },
    /// A span of zero length has no rate.
    #[error("a span of 0 ns has no power")]
    ZeroSpan,

    // ------------------------------------------------------------ recorded and declared files (crate::session, crate::declared)
    /// A file of one of this crate's formats is not well-formed: which file, which field, what.
    #[error("{file}: {format}: {field}: {detail}")]
    FileMalformed {
        /// The file (its path, or where the bytes came from).
        file: String,
        /// Which of the formats it was read as.
        format: crate::declared::FileFormat,
        /// The field, as a path (`windows[3].energy_uj`), or where in the text.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// The file declares a format tag this build does not read.
    #[error("{file}: unsupported format `{found}` (expected `{expected}`)")]
    FileUnsupported {
        /// The file.
        file: String,
        /// The tag this reader takes.
        expected: &'static str,
        /// The tag found.
        found: String,
    },
    /// A recorded window claims a better grade than the rung that metered it
    /// gives (§5.1: a figure MUST NOT claim better provenance than how it was
    /// obtained; §5.2: nor more coverage).
    #[error("{file}: windows[{index}] (seq {seq}): {detail}")]
    WindowGradeOverclaimed {
        /// The file.
        file: String,
        /// Index in `windows`.
        index: usize,
        /// The window's seq.
        seq: u64,
        /// What it claims against what its rung gives.
        detail: String,
    },
    /// Two recorded windows overlap in time: summing them would count the
    /// same joules twice (§5.5 sums must be exact).
    #[error(
        "{file}: windows[{index}] starts at {start_ns} ns, before the previous window ends at {previous_end_ns} ns"
    )]
    WindowsOverlap {
        /// The file.
        file: String,
        /// Index in `windows`.
        index: usize,
        /// Its start.
        start_ns: u64,
        /// The previous window's end.
        previous_end_ns: u64,
    },
    /// The grant to reconcile has no line in the streams read.
    #[error("grant {grant} has no receipt and no grant record in the streams read")]
    GrantNotInStreams {
        /// The grant id asked for.
        grant: String,
    },
    /// The grant's ceiling is not known from the streams (no grant record, no receipt carrying it).
    #[error("grant {grant}: its budget is not known from the streams read")]
    GrantBudgetUnknown {
        /// The grant id.
        grant: String,
    },
    // ------------------------------------------------------------ span metering (§5.1)
    /// A `/proc/<pid>/stat` line that does not decode (§5.1 span metering).
    #[error("proc-stat-malformed: {detail}")]
    ProcStatMalformed {
        /// What is wrong with the line.
        detail: String,
    },
    /// A span's target that names no process (pid 0).
    #[error("span-bad-target: {detail}")]
    SpanBadTarget {
        /// What is wrong with the target.
        detail: String,
    },
    /// A receipt stream could not be audited (the audit's own code).
    #[error("{detail}")]
    Stream {
        /// The audit's code (`io`, `not-a-stream`, ...).
        code: &'static str,
        /// What failed.
        detail: String,
    },
}

impl Error {
    /// A stable code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadInterval { .. } => "bad-interval",
            Self::Io { .. } => "io",
            Self::TraceMalformed { .. } => "trace-malformed",
            Self::TraceUnsupported { .. } => "trace-unsupported-format",
            Self::TraceTimeNotMonotonic { .. } => "trace-time-not-monotonic",
            Self::TraceCounterCount { .. } => "trace-counter-count",
            Self::TraceValueOutOfRange { .. } => "trace-value-out-of-range",
            Self::NoLiveCounter { .. } => "no-live-counter",
            Self::CalibrationWrapUnobservable { .. } => "calibration-wrap-unobservable",
            Self::CalibrationWrongDomain { .. } => "calibration-wrong-domain",
            Self::CalibrationMalformed { .. } => "calibration-malformed",
            Self::CalibrationMeasuredElsewhere { .. } => "calibration-measured-elsewhere",
            Self::Cbor(e) => e.code(),
            Self::Schema(e) => e.code(),
            Self::UnknownProfile { .. } => "unknown-profile",
            Self::BadProvenance { .. } => "bad-provenance",
            Self::BadCoverage { .. } => "bad-coverage",
            Self::PartialHeadline => "partial-headline",
            Self::HeadlineMismatch { .. } => "headline-mismatch",
            Self::HeadlineMissing { .. } => "headline-missing",
            Self::Untraceable => "untraceable-outcome",
            Self::ActivityBoundTwice { .. } => "activity-bound-twice",
            Self::BadSignature { .. } => "bad-signature",
            Self::BadSteward { .. } => "bad-steward",
            Self::ReceiptCountedTwice { .. } => "receipt-counted-twice",
            Self::EmptyTotal => "empty-total",
            Self::Overflow { .. } => "overflow",
            Self::UnresolvableActivity { .. } => "unresolvable-activity",
            Self::ActivityIdMismatch { .. } => "activity-id-mismatch",
            Self::ActivityMalformed { .. } => "activity-malformed",
            Self::CauseWithoutEvidence { .. } => "cause-without-evidence",
            Self::BaselineNotDeclarable { .. } => "baseline-not-declarable",
            Self::ZeroBudget => "zero-budget",
            Self::ShapeDeclaredAfter { .. } => "shape-declared-after",
            Self::ZeroSpan => "zero-span",
            Self::FileMalformed { format, .. } => format.malformed_code(),
            Self::FileUnsupported { .. } => "unsupported-format",
            Self::WindowGradeOverclaimed { .. } => "window-grade-overclaimed",
            Self::WindowsOverlap { .. } => "windows-overlap",
            Self::GrantNotInStreams { .. } => "grant-not-in-streams",
            Self::GrantBudgetUnknown { .. } => "grant-budget-unknown",
            Self::ProcStatMalformed { .. } => "proc-stat-malformed",
            Self::SpanBadTarget { .. } => "span-bad-target",
            Self::Stream { code, .. } => code,
        }
    }

    /// Whether this is a refusal: the input was read, and a rule of the spec
    /// said no (exit 1 in the CLI). Everything else is unreadable input or an
    /// operational failure (exit 2).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::CalibrationMeasuredElsewhere { .. }
                | Self::PartialHeadline
                | Self::HeadlineMismatch { .. }
                | Self::HeadlineMissing { .. }
                | Self::Untraceable
                | Self::ActivityBoundTwice { .. }
                | Self::BadSignature { .. }
                | Self::ReceiptCountedTwice { .. }
                | Self::UnresolvableActivity { .. }
                | Self::ActivityIdMismatch { .. }
                | Self::CauseWithoutEvidence { .. }
                | Self::BaselineNotDeclarable { .. }
                | Self::ShapeDeclaredAfter { .. }
                | Self::WindowGradeOverclaimed { .. }
                | Self::GrantBudgetUnknown { .. }
        )
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Self::Cbor(e)
    }
}

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Self {
        Self::Schema(e)
    }
}
