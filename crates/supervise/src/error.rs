//! The crate's one error: each variant with the stable code a caller shows
//! beside its message (`{code, message}`).

use std::path::PathBuf;

/// Why a live run could not be started, fed or stopped cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No `jcp` command to run as the agent and the backend (`live.no_agent`).
    #[error(
        "the demo agent is the `jcp` command, and none was found beside {beside} or on PATH: build it with `cargo build -p jcp-cli` (scripts/run.sh does), or set JCP_BIN"
    )]
    NoAgent {
        /// Where it was looked for: the running program.
        beside: String,
    },
    /// A file or process the run needs could not be made (`live.io`).
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What failed (`cannot create`, `cannot write`, `cannot start the demo agent`).
        what: &'static str,
        /// The file, folder or program.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The endpoint's runtime did not start (`live.runtime`).
    #[error("the endpoint's runtime did not start: {0}")]
    Runtime(#[source] std::io::Error),
    /// The key store refused (its own code).
    #[error(transparent)]
    Key(#[from] keystore::KeyError),
    /// The protocol core refused or failed (its own code).
    #[error(transparent)]
    Core(#[from] jcp::Error),
    /// The endpoint or its backend failed (the wire's code).
    #[error("{what}: {source}")]
    Wire {
        /// What failed (`the embedded endpoint did not start`, …).
        what: &'static str,
        /// The failure (boxed: the wire's error is large).
        source: Box<jcp_wire::WireError>,
    },
    /// The endpoint refused what it was fed (`live.refused`).
    #[error("the live run's endpoint refused it ({code}): {message}")]
    Refused {
        /// The endpoint's code.
        code: String,
        /// The endpoint's words.
        message: String,
    },
}

impl Error {
    /// The stable code: `live.no_agent`, `live.io`, `live.runtime`,
    /// `live.refused`, or the key store's, the core's or the wire's.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoAgent { .. } => "live.no_agent",
            Self::Io { .. } => "live.io",
            Self::Runtime(_) => "live.runtime",
            Self::Key(e) => e.code(),
            Self::Core(e) => e.code(),
            Self::Wire { source, .. } => source.code(),
            Self::Refused { .. } => "live.refused",
        }
    }

    pub(crate) fn wire(what: &'static str, source: jcp_wire::WireError) -> Self {
        Self::Wire { what, source: Box::new(source) }
    }

    pub(crate) fn io(what: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io { what, path: path.to_path_buf(), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages_are_the_consoles() {
        let e = Error::io("cannot create", std::path::Path::new("/ws/live/1"), std::io::Error::other("denied"));
        assert_eq!((e.code(), e.to_string().as_str()), ("live.io", "cannot create /ws/live/1: denied"));
        let e = Error::Refused { code: "stale".into(), message: "old".into() };
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            ("live.refused", "the live run's endpoint refused it (stale): old")
        );
        let e = Error::NoAgent { beside: "/opt/x".into() };
        assert_eq!(e.code(), "live.no_agent");
        assert!(e.to_string().contains("none was found beside /opt/x or on PATH"), "{e}");
        assert_eq!(Error::Runtime(std::io::Error::other("x")).code(), "live.runtime");
    }
}
