//! A `jcp/1` client: connects over TCP or a Unix socket, sends framed
//! messages, reads the endpoint's answers.

use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use crate::codec;
use crate::endpoint::Address;
use crate::error::WireError;
use crate::message::{Feed, FeedAnswer, Outbound, WireReply, WireRequest, WireResponse};

/// The socket, read through a buffer: a response's length and body (and
/// a reply behind it) come in one read, not two. Writes go straight through.
enum Sock {
    Tcp(BufReader<tokio::net::TcpStream>),
    #[cfg(unix)]
    Unix(BufReader<tokio::net::UnixStream>),
    /// An in-process connection to an endpoint of this process
    /// ([`crate::endpoint::Endpoint::connect_local`]).
    Mem(BufReader<tokio::io::DuplexStream>),
}

/// How long [`Client::connect`] waits for an endpoint to accept.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection to an endpoint.
pub struct Client {
    sock: Sock,
    cap: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("cap", &self.cap).finish_non_exhaustive()
    }
}

async fn read<S: AsyncRead + Unpin>(s: &mut S, cap: usize) -> Result<Outbound, WireError> {
    match codec::read_frame(s, cap).await? {
        Some(body) => Outbound::decode(&body),
        None => Err(WireError::Stopped("the endpoint closed the connection".into())),
    }
}

async fn write<S: AsyncWrite + Unpin>(s: &mut S, framed: &[u8]) -> Result<(), WireError> {
    codec::write_frame(s, framed).await
}

impl Client {
    /// Connects, within [`CONNECT_TIMEOUT`].
    pub async fn connect(addr: &Address) -> Result<Self, WireError> {
        match tokio::time::timeout(CONNECT_TIMEOUT, Self::connect_now(addr)).await {
            Ok(r) => r,
            Err(_) => Err(WireError::io(
                format!("connecting to {addr}"),
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()),
                ),
            )),
        }
    }

    async fn connect_now(addr: &Address) -> Result<Self, WireError> {
        let sock = match addr {
            Address::Tcp(a) => {
                let s = tokio::net::TcpStream::connect(a)
                    .await
                    .map_err(|e| WireError::io(format!("connecting to tcp:{a}"), e))?;
                let _ = s.set_nodelay(true);
                Sock::Tcp(BufReader::new(s))
            }
            #[cfg(unix)]
            Address::Unix(p) => Sock::Unix(BufReader::new(
                tokio::net::UnixStream::connect(p)
                    .await
                    .map_err(|e| WireError::io(format!("connecting to unix:{}", p.display()), e))?,
            )),
            #[cfg(not(unix))]
            Address::Unix(p) => return Err(WireError::BadAddress(format!("unix:{}", p.display()))),
        };
        Ok(Self { sock, cap: codec::DEFAULT_CAP })
    }

    /// A client over a TCP connection made elsewhere (from a chosen local
    /// address, say: the endpoint's per-source limits count by it).
    pub fn over_tcp(s: tokio::net::TcpStream) -> Self {
        let _ = s.set_nodelay(true);
        Self { sock: Sock::Tcp(BufReader::new(s)), cap: codec::DEFAULT_CAP }
    }

    /// A client over one half of an in-process stream whose other half an
    /// endpoint serves as it serves a socket.
    pub(crate) fn over_memory(s: tokio::io::DuplexStream) -> Self {
        Self { sock: Sock::Mem(BufReader::new(s)), cap: codec::DEFAULT_CAP }
    }

    /// The most one message read from the endpoint may hold (default
    /// [`codec::DEFAULT_CAP`]): a composing tool whose replies carry larger
    /// outputs (a gateway's tool results) raises it to its own bound.
    #[must_use]
    pub fn with_read_cap(mut self, cap: usize) -> Self {
        self.cap = cap;
        self
    }

    /// Sends already-framed bytes (tests use this to misbehave).
    pub async fn send_raw(&mut self, framed: &[u8]) -> Result<(), WireError> {
        match &mut self.sock {
            Sock::Tcp(s) => write(s.get_mut(), framed).await,
            #[cfg(unix)]
            Sock::Unix(s) => write(s.get_mut(), framed).await,
            Sock::Mem(s) => write(s.get_mut(), framed).await,
        }
    }

    /// Reads the endpoint's next message.
    pub async fn recv(&mut self) -> Result<Outbound, WireError> {
        let cap = self.cap;
        match &mut self.sock {
            Sock::Tcp(s) => read(s, cap).await,
            #[cfg(unix)]
            Sock::Unix(s) => read(s, cap).await,
            Sock::Mem(s) => read(s, cap).await,
        }
    }

    /// Sends a request and reads its response (§11). A refusal of the
    /// frame itself is [`WireError::Refused`].
    pub async fn call(&mut self, req: &WireRequest) -> Result<WireResponse, WireError> {
        self.send_raw(&codec::frame_value(&req.to_value())).await?;
        match self.recv().await? {
            Outbound::Response(r) => Ok(r),
            Outbound::Error { code, message } => Err(WireError::Refused { code, message }),
            other => Err(WireError::schema("WireResponse", format!("expected a response, got {other:?}"))),
        }
    }

    /// Reads the reply of the endpoint behind the gate that follows an
    /// allowed request's response (only where the endpoint has one).
    pub async fn reply(&mut self) -> Result<WireReply, WireError> {
        match self.recv().await? {
            Outbound::Reply(r) => Ok(r),
            Outbound::Error { code, message } => Err(WireError::Refused { code, message }),
            other => Err(WireError::schema("WireReply", format!("expected a reply, got {other:?}"))),
        }
    }

    /// Sends a feed message (a revocation, an amendment) and reads whether
    /// it was admitted.
    pub async fn feed(&mut self, feed: &Feed) -> Result<FeedAnswer, WireError> {
        self.send_raw(&codec::frame_value(&feed.to_value())).await?;
        match self.recv().await? {
            Outbound::FeedAnswer(a) => Ok(a),
            Outbound::Error { code, message } => Err(WireError::Refused { code, message }),
            other => Err(WireError::schema("FeedAnswer", format!("expected a feed answer, got {other:?}"))),
        }
    }

    /// Asks the endpoint for its signed statement of its cumulative allowed
    /// spend on a channel grant (§4.5). A refusal (no channel there, the
    /// record failed) is [`WireError::Refused`] with its code.
    pub async fn ask_statement(
        &mut self,
        grant_id: &jcp::cbor::ContentId,
    ) -> Result<jcp::channel::SignedStatement, WireError> {
        self.send_raw(&codec::frame_value(&crate::message::statement_ask(grant_id))).await?;
        match self.recv().await? {
            Outbound::Statement(s) => Ok(s),
            Outbound::FeedAnswer(a) => Err(WireError::Refused { code: a.code, message: a.message }),
            Outbound::Error { code, message } => Err(WireError::Refused { code, message }),
            other => Err(WireError::schema("Statement", format!("expected a statement, got {other:?}"))),
        }
    }
}
