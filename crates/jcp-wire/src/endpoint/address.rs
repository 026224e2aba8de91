//! Where an endpoint listens and a client connects (§11: any ordered byte
//! stream; here TCP and Unix sockets): `tcp:HOST:PORT` or `unix:PATH`.

use std::path::{Path, PathBuf};

use crate::error::WireError;

/// A listening socket.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(tokio::net::TcpListener),
    /// A Unix socket.
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

/// A listener taken off its runtime ([`Listener::into_std`]), to be taken
/// on by another ([`Listener::from_std`]).
#[derive(Debug)]
pub enum StdListener {
    /// TCP.
    Tcp(std::net::TcpListener),
    /// A Unix socket.
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixListener),
}

impl Listener {
    /// The listener off this runtime.
    pub fn into_std(self) -> Result<StdListener, WireError> {
        let taken = |e| WireError::io("taking the listener off its runtime", e);
        match self {
            Listener::Tcp(l) => l.into_std().map(StdListener::Tcp).map_err(taken),
            #[cfg(unix)]
            Listener::Unix(l) => l.into_std().map(StdListener::Unix).map_err(taken),
        }
    }

    /// The listener on the runtime this is called on.
    pub fn from_std(l: StdListener) -> Result<Self, WireError> {
        let taken = |e| WireError::io("taking the listener on", e);
        match l {
            StdListener::Tcp(l) => tokio::net::TcpListener::from_std(l).map(Listener::Tcp).map_err(taken),
            #[cfg(unix)]
            StdListener::Unix(l) => tokio::net::UnixListener::from_std(l).map(Listener::Unix).map_err(taken),
        }
    }
}

/// Where to listen or connect: `tcp:HOST:PORT` or `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl std::str::FromStr for Address {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, WireError> {
        if let Some(rest) = s.strip_prefix("tcp:") {
            if rest.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) {
                return Ok(Self::Tcp(rest.to_owned()));
            }
        } else if let Some(rest) = s.strip_prefix("unix:") {
            if !rest.is_empty() {
                return Ok(Self::Unix(PathBuf::from(rest)));
            }
        }
        Err(WireError::BadAddress(s.to_owned()))
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(a) => write!(f, "tcp:{a}"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl Address {
    /// Binds a listener. A Unix socket left by a process that is gone is
    /// replaced; one a live endpoint answers on is refused, and so is a
    /// path that is anything but a socket (a file, a directory, a link):
    /// it is never removed.
    pub async fn bind(&self) -> Result<(Listener, Address), WireError> {
        match self {
            Self::Tcp(a) => {
                let l =
                    tokio::net::TcpListener::bind(a).await.map_err(|e| WireError::io(format!("binding tcp:{a}"), e))?;
                let local = l.local_addr().map_err(|e| WireError::io("reading the bound address", e))?;
                Ok((Listener::Tcp(l), Self::Tcp(local.to_string())))
            }
            #[cfg(unix)]
            Self::Unix(p) => {
                if let Ok(meta) = std::fs::symlink_metadata(p) {
                    use std::os::unix::fs::FileTypeExt;
                    if !meta.file_type().is_socket() {
                        return Err(WireError::io(
                            format!("binding unix:{}", p.display()),
                            std::io::Error::new(
                                std::io::ErrorKind::AlreadyExists,
                                "the path exists and is not a socket; it is left as it is",
                            ),
                        ));
                    }
                    if tokio::net::UnixStream::connect(p).await.is_ok() {
                        return Err(WireError::io(
                            format!("binding unix:{}", p.display()),
                            std::io::Error::new(
                                std::io::ErrorKind::AddrInUse,
                                "a live endpoint answers on this socket",
                            ),
                        ));
                    }
                    std::fs::remove_file(p)
                        .map_err(|e| WireError::io(format!("removing the stale socket {}", p.display()), e))?;
                }
                let l = tokio::net::UnixListener::bind(p)
                    .map_err(|e| WireError::io(format!("binding unix:{}", p.display()), e))?;
                Ok((Listener::Unix(l), self.clone()))
            }
            #[cfg(not(unix))]
            Self::Unix(p) => {
                Err(WireError::BadAddress(format!("unix:{} (no Unix sockets on this platform)", p.display())))
            }
        }
    }
}

/// Opens the endpoint and binds its listeners: what `jcp serve` runs.
pub async fn bind_all(addrs: &[Address]) -> Result<Vec<(Listener, Address)>, WireError> {
    let mut out = Vec::new();
    for a in addrs {
        out.push(a.bind().await?);
    }
    Ok(out)
}

/// The path a Unix address names, if any (to remove it at shutdown).
pub fn unix_path(a: &Address) -> Option<&Path> {
    match a {
        Address::Unix(p) => Some(p),
        Address::Tcp(_) => None,
    }
}

/// Removes the socket an endpoint listened on at `p`, and only a socket:
/// a path something else has been put at since is left as it is.
pub fn remove_socket(p: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(p);
        }
    }
    #[cfg(not(unix))]
    let _ = p;
}
