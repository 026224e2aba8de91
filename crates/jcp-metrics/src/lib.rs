//! # jcp-metrics — the `/metrics` responder
//!
//! The meter (`jcp meter serve`) and the enforcement point
//! (`jcp serve --metrics`) each keep an `OpenMetrics` registry of their own
//! (`jcp_meter::exposition`, `jcp_wire::metrics`); this crate is the small
//! HTTP/1.1 server (hyper 1) that hands a scraper the rendered text. It knows
//! nothing of what is rendered: it takes a [`Render`] and answers
//!
//! - `GET /metrics` (and `HEAD`): `200`, the text, [`CONTENT_TYPE`];
//! - any other path: `404`; any other method on `/metrics`: `405`;
//! - a render that fails: `500`, never a partial exposition.
//!
//! ```no_run
//! # async fn f() -> Result<(), jcp_metrics::MetricsError> {
//! use std::sync::Arc;
//! let (listener, addr) = jcp_metrics::bind("127.0.0.1:0").await?;
//! println!("scrape http://{addr}/metrics");
//! let render: jcp_metrics::Render = Arc::new(|| Ok("# EOF\n".to_owned()));
//! jcp_metrics::serve(listener, render, std::future::pending::<()>()).await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;

/// The `OpenMetrics` 1.0 text format's media type (what `prometheus-client` encodes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The path the exposition is served on.
pub const PATH: &str = "/metrics";

/// Renders the exposition at scrape time (a complete message, `# EOF` included).
pub type Render = Arc<dyn Fn() -> Result<String, std::fmt::Error> + Send + Sync>;

/// What the responder refuses, each with a stable [`MetricsError::code`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// The listen address is not `HOST:PORT`.
    #[error("bad-metrics-address: {0:?} is not HOST:PORT (e.g. 127.0.0.1:9464)")]
    BadAddress(String),
    /// The address could not be bound (in use, not ours).
    #[error("metrics-bind-failed: binding {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the system said.
        source: std::io::Error,
    },
}

impl MetricsError {
    /// The stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadAddress(_) => "bad-metrics-address",
            Self::Bind { .. } => "metrics-bind-failed",
        }
    }
}

/// Encodes one registry as a complete `OpenMetrics` message.
pub fn render_registry(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut s = String::new();
    prometheus_client::encoding::text::encode(&mut s, registry)?;
    Ok(s)
}

/// Binds `addr` (`HOST:PORT`; port 0 picks a free one) and says where it is.
pub async fn bind(addr: &str) -> Result<(tokio::net::TcpListener, SocketAddr), MetricsError> {
    let ok_shape = addr.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if !ok_shape {
        return Err(MetricsError::BadAddress(addr.to_owned()));
    }
    let bind_err = |source| MetricsError::Bind { addr: addr.to_owned(), source };
    let l = tokio::net::TcpListener::bind(addr).await.map_err(bind_err)?;
    let local = l.local_addr().map_err(bind_err)?;
    Ok((l, local))
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// The answer to one request.
pub fn respond(method: &Method, path: &str, render: &Render) -> Response<Full<Bytes>> {
    if path != PATH {
        return plain(StatusCode::NOT_FOUND, "not found: the exposition is at /metrics\n");
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match render() {
        Ok(text) => {
            let body = if method == Method::HEAD { Bytes::new() } else { Bytes::from(text) };
            let mut r = Response::new(Full::new(body));
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(CONTENT_TYPE));
            r
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the exposition could not be encoded\n"),
    }
}

/// What one responder holds at most: connections served at once (past it
/// a connection is answered `503` and closed, never left waiting in the
/// backlog), and how long a client may take to send a request's headers
/// (a request started, or the next one on a kept-alive connection). So a
/// scraper that misbehaves, or a flood of half-sent headers, cannot take
/// more than `max_connections` file descriptors from the process beside it
/// (the enforcement point's wire listener).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// The time a request's headers may take.
    pub header_timeout: std::time::Duration,
    /// The time a response's write may go without the client taking a byte
    /// of it: a scraper that asks and never reads holds its slot this long.
    pub write_timeout: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            header_timeout: std::time::Duration::from_secs(10),
            write_timeout: std::time::Duration::from_secs(10),
        }
    }
}

/// A connection whose writes must make progress: a write (or flush) the
/// client takes nothing of for `limit` fails, which ends the connection
/// and frees its slot. hyper's own timeouts are for reading headers only,
/// so without this a client that sends a request and never reads the
/// answer held a slot for ever once the socket's buffers were full.
/// `/metrics` and the gateway's Streamable HTTP transport wrap each
/// connection in one.
#[derive(Debug)]
pub struct WriteDeadline<S> {
    io: S,
    limit: std::time::Duration,
    /// Armed when a write cannot go on; disarmed by any progress.
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteDeadline<S> {
    /// `io`, whose writes may make no progress for at most `limit`.
    pub fn new(io: S, limit: std::time::Duration) -> Self {
        Self { io, limit, stalled: None }
    }

    /// `polled`, unless the write has been stalled past the limit.
    fn check<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        polled: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        use std::task::Poll;
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing of the answer for {} s", limit.as_secs_f64()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.io).poll_write(cx, buf);
        self.check(cx, polled)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.check(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.io).poll_flush(cx);
        self.check(cx, polled)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.io).poll_shutdown(cx);
        self.check(cx, polled)
    }
}

const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 44\r\nConnection: close\r\nRetry-After: 1\r\n\r\nbusy: the /metrics responder is at its cap\r\n";

/// Serves `/metrics` on `listener` with the default [`Limits`] until `shutdown` resolves.
pub async fn serve(listener: tokio::net::TcpListener, render: Render, shutdown: impl Future<Output = ()>) {
    serve_with(listener, render, Limits::default(), shutdown).await;
}

/// Serves `/metrics` on `listener` within `limits` until `shutdown`
/// resolves. Each connection runs on its own task; one that misbehaves
/// holds nothing but itself, and only until its headers time out. Failed
/// accepts are logged and serving goes on.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    render: Render,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let refusals = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            a = listener.accept() => a,
        };
        let mut stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("metrics: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            // Accepted and refused: `503`, the write side closed, what the
            // client sent read off for a moment (so it gets the answer,
            // not a reset). At most as many refusals are held as
            // connections, each a second at most; past that, closed at once.
            let Ok(refusing) = refusals.clone().try_acquire_owned() else { continue };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let _refusing = refusing;
                let refuse = async {
                    stream.write_all(BUSY).await?;
                    stream.shutdown().await?;
                    let mut sink = [0u8; 4096];
                    while stream.read(&mut sink).await? > 0 {}
                    Ok::<_, std::io::Error>(())
                };
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), refuse).await;
            });
            continue;
        };
        let render = Arc::clone(&render);
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let r = respond(req.method(), req.uri().path(), &render);
                async move { Ok::<_, Infallible>(r) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let conn =
                builder.serve_connection(TokioIo::new(WriteDeadline::new(stream, limits.write_timeout)), service);
            if let Err(e) = conn.await {
                tracing::debug!("metrics: connection ended: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::io::{Read, Write};

    use super::*;

    fn get(addr: SocketAddr, line: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "{line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// `/metrics` served on `rt` with `render` within `limits`: its address,
    /// and the sender that stops it.
    fn start(
        rt: &tokio::runtime::Runtime,
        render: Render,
        limits: Limits,
    ) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        rt.block_on(async {
            let (l, addr) = bind("127.0.0.1:0").await.unwrap();
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(serve_with(l, render, limits, async {
                let _ = rx.await;
            }));
            (addr, tx)
        })
    }

    /// Scrapes until one is answered `200` (`tries` at most, `pause` between): the last answer.
    fn scrape_until_ok(addr: SocketAddr, tries: u32, pause: std::time::Duration) -> String {
        let mut ok = String::new();
        for _ in 0..tries {
            ok = get(addr, "GET /metrics");
            if ok.starts_with("HTTP/1.1 200") {
                break;
            }
            std::thread::sleep(pause);
        }
        ok
    }

    #[test]
    fn s5_s11_exposition_served_on_metrics_only_and_a_failed_render_is_a_500_not_a_partial_text() {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let render: Render = Arc::new(move || {
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                return Err(std::fmt::Error);
            }
            Ok("# TYPE x gauge\nx 1\n# EOF\n".to_owned())
        });
        let (addr, stop) = start(&rt, render, Limits::default());
        let ok = get(addr, "GET /metrics");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains(CONTENT_TYPE), "{ok}");
        assert!(ok.ends_with("x 1\n# EOF\n"), "{ok}");
        let failed = get(addr, "GET /metrics");
        assert!(failed.starts_with("HTTP/1.1 500"), "{failed}");
        assert!(!failed.contains("x 1"), "{failed}");
        assert!(get(addr, "GET /").starts_with("HTTP/1.1 404"));
        let post = get(addr, "POST /metrics");
        assert!(post.starts_with("HTTP/1.1 405") && post.contains("GET, HEAD"), "{post}");
        let _ = stop.send(());
    }

    /// §11 (the enforcement point's availability): half-sent headers hold a
    /// slot only until their timeout, past the cap a connection is answered
    /// `503` at once, and a good scrape is answered again once the slots free.
    #[test]
    fn s11_half_sent_headers_past_the_cap_are_refused_busy_and_time_out() {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let limits =
            Limits { max_connections: 4, header_timeout: std::time::Duration::from_millis(300), ..Limits::default() };
        let (addr, stop) = start(&rt, Arc::new(|| Ok("x 1\n# EOF\n".to_owned())), limits);
        let mut slow: Vec<std::net::TcpStream> = (0..4)
            .map(|_| {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
                s
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let busy = get(addr, "GET /metrics");
        assert!(busy.starts_with("HTTP/1.1 503"), "{busy}");
        // The half-sent requests are cut at their header timeout (hyper
        // answers 408 or closes); then the slots are free again.
        for s in &mut slow {
            s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
        }
        let ok = scrape_until_ok(addr, 50, std::time::Duration::from_millis(20));
        assert!(ok.starts_with("HTTP/1.1 200") && ok.ends_with("x 1\n# EOF\n"), "{ok}");
        let _ = stop.send(());
    }

    /// §11 (the enforcement point's availability): a scraper that asks and
    /// never reads holds its slot only until its answer's write times out
    /// (before, for ever once the socket's buffers were full).
    #[test]
    fn s11_a_scraper_that_never_reads_its_answer_frees_its_slot_at_the_write_timeout() {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let limits = Limits {
            max_connections: 2,
            header_timeout: std::time::Duration::from_secs(10),
            write_timeout: std::time::Duration::from_millis(300),
        };
        // An answer far larger than a loopback socket buffers (its send
        // buffer grows to 4 MiB at most; the readers below take 4 KiB).
        let body = "x 1\n".repeat(6 << 20) + "# EOF\n";
        let (addr, stop) = start(&rt, Arc::new(move || Ok(body.clone())), limits);
        let readers = rt.block_on(async {
            let mut readers = Vec::new();
            for _ in 0..2 {
                let sock = tokio::net::TcpSocket::new_v4().unwrap();
                sock.set_recv_buffer_size(4096).unwrap();
                let mut s = sock.connect(addr).await.unwrap();
                tokio::io::AsyncWriteExt::write_all(&mut s, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
                readers.push(s);
            }
            readers
        });
        // Both slots taken by scrapers that do not read: a third is refused at once.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let busy = get(addr, "GET /metrics");
        assert!(busy.starts_with("HTTP/1.1 503"), "{}", &busy[..busy.len().min(200)]);
        // Their writes time out, their slots free, and a scrape that reads is answered whole.
        let ok = scrape_until_ok(addr, 100, std::time::Duration::from_millis(50));
        assert!(ok.starts_with("HTTP/1.1 200") && ok.ends_with("x 1\n# EOF\n"), "{}", &ok[..ok.len().min(200)]);
        drop(readers);
        let _ = stop.send(());
    }

    #[test]
    fn s5_s11_a_metrics_listen_address_that_is_not_host_port_is_refused_with_its_code() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        for bad in ["", "9464", ":9464", "localhost:http", "127.0.0.1:99999"] {
            let e = rt.block_on(bind(bad)).unwrap_err();
            assert_eq!(e.code(), "bad-metrics-address", "{bad}");
            assert!(e.to_string().starts_with("bad-metrics-address"), "{e}");
        }
    }
}
