//! The crate's one error enum. A deny is not an error: it is a decision,
//! sealed and answered. These are refusals to read a message (the
//! connection is closed) and failures of the transport or the record.

/// Errors of the wire binding; each has a stable [`WireError::code`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// §11: a declared length above the receiver's cap.
    #[error("frame-oversized: declared length {declared} bytes is above the cap of {cap} bytes")]
    Oversized {
        /// The length the frame's 4-byte prefix declared.
        declared: u64,
        /// The receiver's cap on a message body, in bytes.
        cap: usize,
    },
    /// The stream ended inside a frame (a half frame).
    #[error("frame-truncated: the stream ended after {got} of {want} bytes of a frame")]
    Truncated {
        /// Bytes of the frame (prefix included) that arrived.
        got: usize,
        /// Bytes the frame needed: its prefix and the declared body.
        want: usize,
    },
    /// §11/§3: a body that is not canonical det-CBOR (or has trailing bytes).
    #[error("non-canonical: {0}")]
    NonCanonical(#[from] jcp::cbor::DecodeError),
    /// A canonical body that is not the message it was read as.
    #[error("not-a-message: {object}: {problem}")]
    NotAMessage {
        /// The message or member being read (`WireRequest`, `Feed`, …).
        object: &'static str,
        /// What was wrong with it, and where.
        problem: String,
    },
    /// The peer sent nothing within the endpoint's read timeout mid-frame.
    #[error("frame-timeout: no complete frame within {secs} s")]
    Timeout {
        /// The endpoint's frame timeout, in seconds.
        secs: u64,
    },
    /// The peer sent no frame within the endpoint's first-frame timeout
    /// (a new connection) or idle timeout (between frames): its connection
    /// is closed, and its slot given back.
    #[error("idle-timeout: no frame started within {secs} s{}", if *.first { " of connecting" } else { " of the last" })]
    Idle {
        /// The timeout, in seconds.
        secs: u64,
        /// Whether it was the connection's first frame.
        first: bool,
    },
    /// The endpoint is at its connection cap (or the peer at its own): the
    /// connection is accepted, told so and closed, never left in the backlog.
    #[error("busy: {0}")]
    Busy(String),
    /// A source past its rate (issue 34): answered before anything is
    /// decided or recorded, and its connection closed.
    #[error("rate-limited: {source_name} {what}; try again in {retry_ms} ms")]
    RateLimited {
        /// The source (an address, a Unix user).
        source_name: String,
        /// Which limit, in words.
        what: String,
        /// When the source has room again.
        retry_ms: u64,
    },
    /// The record (the receipt stream) could not be opened or written.
    #[error(transparent)]
    Stream(#[from] jcp_receipt::Error),
    /// A socket error.
    #[error("io: {context}: {source}")]
    Io {
        /// What was being done (`binding tcp:…`, `reading`, …).
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An address that is neither `tcp:HOST:PORT` nor `unix:PATH`.
    #[error("bad-address: {0:?} (expected tcp:HOST:PORT or unix:PATH)")]
    BadAddress(String),
    /// The endpoint answered with a refusal of an admin message.
    #[error("refused: {code}: {message}")]
    Refused {
        /// The refusal's code, as the endpoint sent it.
        code: String,
        /// The endpoint's explanation.
        message: String,
    },
    /// A caller signature that does not verify under the caller (§11),
    /// refused when a request is assembled from an outside signature.
    #[error("bad-signature: the request signature does not verify under the caller {signer}")]
    BadSignature {
        /// The caller's did, under which the signature was checked.
        signer: String,
    },
    /// §5: a cost whose grade and measured figure disagree (a `HwShunt`
    /// cost without `measured`, an `Estimator` cost with it, a debit below
    /// it): refused before anything is decided. The code is the core's
    /// (`energy-unmeasured`, `energy-measured-estimate`, `energy-below-measured`).
    #[error("{0}")]
    Cost(jcp::Error),
    /// A frame cap above what one stream record holds: a message the
    /// endpoint admitted could then not be recorded (§4.11, §11).
    #[error("cap-above-record: a cap of {cap} bytes is above {max} bytes, the largest body whose record fits one stream record")]
    CapAboveRecord {
        /// The cap asked for.
        cap: usize,
        /// The largest cap allowed ([`crate::codec::MAX_ENDPOINT_CAP`]).
        max: usize,
    },
    /// The endpoint stopped (shutdown or a failed record).
    #[error("endpoint-stopped: {0}")]
    Stopped(String),
    /// §11: the endpoint behind the gate (a `jcp-backend/1` child
    /// process) could not be started.
    #[error("backend-spawn: starting {program}: {source}")]
    BackendSpawn {
        /// The program.
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl WireError {
    /// A stable code for machines and the console.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Oversized { .. } => "frame-oversized",
            Self::Truncated { .. } => "frame-truncated",
            Self::NonCanonical(_) => "non-canonical",
            Self::NotAMessage { .. } => "not-a-message",
            Self::Timeout { .. } => "frame-timeout",
            Self::Idle { .. } => "idle-timeout",
            Self::Busy(_) => "busy",
            Self::RateLimited { .. } => "rate-limited",
            Self::Stream(e) => e.code(),
            Self::Io { .. } => "io",
            Self::BadAddress(_) => "bad-address",
            Self::Refused { .. } => "refused",
            Self::BadSignature { .. } => "bad-signature",
            Self::CapAboveRecord { .. } => "cap-above-record",
            Self::Cost(e) => e.code(),
            Self::Stopped(_) => "endpoint-stopped",
            Self::BackendSpawn { .. } => "backend-spawn",
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { context: context.into(), source }
    }

    pub(crate) fn schema(object: &'static str, problem: impl Into<String>) -> Self {
        Self::NotAMessage { object, problem: problem.into() }
    }
}

impl From<jcp::Error> for WireError {
    fn from(e: jcp::Error) -> Self {
        match e {
            jcp::Error::Decode(d) => Self::NonCanonical(d),
            other => Self::NotAMessage { object: "message", problem: other.to_string() },
        }
    }
}

impl From<jcp::cbor::SchemaError> for WireError {
    fn from(e: jcp::cbor::SchemaError) -> Self {
        Self::NotAMessage { object: "message", problem: e.to_string() }
    }
}

impl From<jcp::identity::IdentityError> for WireError {
    fn from(e: jcp::identity::IdentityError) -> Self {
        Self::NotAMessage { object: "message", problem: e.to_string() }
    }
}
