//! §11 framing: a 4-byte big-endian length, then the message's canonical
//! det-CBOR bytes. A receiver refuses a length over its cap before reading
//! the body, and a body that is not canonical (trailing bytes included).

use jcp::cbor::{self, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::WireError;

/// The default cap on a message body a client reads (a response, a
/// relayed reply): 1 MiB.
pub const DEFAULT_CAP: usize = 1 << 20;

/// What a stream record adds around the message it records, at most: the
/// request record's map (`request`, `decided_at`) and its keys, with room
/// to spare for a feed's record.
pub const RECORD_ENVELOPE: usize = 256;

/// The largest message body an endpoint accepts, and its default cap: every
/// message it admits is recorded (§4.11, §11 "What the endpoint holds
/// survives it"), so a body plus its record's envelope must fit one stream
/// record ([`jcp_receipt::stream::MAX_RECORD_LEN`]). An endpoint configured
/// with a cap above this refuses to start.
pub const MAX_ENDPOINT_CAP: usize = jcp_receipt::stream::MAX_RECORD_LEN - RECORD_ENVELOPE;

/// Frames a body: length prefix + bytes.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Frames a value's canonical encoding.
pub fn frame_value(v: &Value) -> Vec<u8> {
    frame_written(0, |out| v.encode_into(out))
}

/// Frames what `write` appends (a body written in place, not copied in
/// after): `capacity` is a guess at the body's length.
pub fn frame_written(capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + capacity);
    out.extend_from_slice(&[0; 4]);
    write(&mut out);
    let n = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
    out[..4].copy_from_slice(&n.to_be_bytes());
    out
}

/// Splits one frame from the front of `buf` (the synchronous form of the
/// reader, for tests and fuzzing): `Ok(None)` when more bytes are needed,
/// `Ok(Some((body, used)))` for a whole frame.
pub fn split(buf: &[u8], cap: usize) -> Result<Option<(&[u8], usize)>, WireError> {
    let Some(head) = buf.get(..4) else { return Ok(None) };
    let declared = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let n = usize::try_from(declared).unwrap_or(usize::MAX);
    if n > cap {
        return Err(WireError::Oversized { declared: u64::from(declared), cap });
    }
    Ok(buf.get(4..4 + n).map(|body| (body, 4 + n)))
}

/// Decodes a frame body: one canonical det-CBOR item, nothing after it.
/// Strict profile (§3): no floats, bools, nulls or tags.
pub fn decode_body(body: &[u8]) -> Result<Value, WireError> {
    Ok(cbor::decode_strict(body)?)
}

/// Reads one frame from `r`. `Ok(None)` on a clean end of stream before a
/// frame starts; a stream that ends inside a frame is `Truncated`.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, cap: usize) -> Result<Option<Vec<u8>>, WireError> {
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut head[got..]).await.map_err(|e| WireError::io("reading a frame length", e))?;
        if n == 0 {
            return if got == 0 { Ok(None) } else { Err(WireError::Truncated { got, want: 4 }) };
        }
        got += n;
    }
    let declared = u32::from_be_bytes(head);
    let n = usize::try_from(declared).unwrap_or(usize::MAX);
    if n > cap {
        return Err(WireError::Oversized { declared: u64::from(declared), cap });
    }
    read_body(r, n).await.map(Some)
}

/// The first allocation for a frame's body; it grows as the bytes arrive.
pub(crate) const FIRST_ALLOCATION: usize = 16 << 10;

/// Reads a body of `n` declared bytes, holding memory for the bytes that
/// arrived, not for the length declared: a peer that declares a megabyte
/// and sends ten bytes holds ten bytes' worth (and at most the frame
/// timeout), so half frames cannot make the reader allocate what they
/// promise.
pub(crate) async fn read_body<R: AsyncRead + Unpin>(r: &mut R, n: usize) -> Result<Vec<u8>, WireError> {
    let mut body = Vec::new();
    read_body_into(r, n, &mut body).await?;
    Ok(body)
}

async fn read_body_into<R: AsyncRead + Unpin>(r: &mut R, n: usize, body: &mut Vec<u8>) -> Result<(), WireError> {
    body.reserve(n.min(FIRST_ALLOCATION));
    let want = u64::try_from(n).unwrap_or(u64::MAX);
    (&mut *r).take(want).read_to_end(body).await.map_err(|e| WireError::io("reading a frame body", e))?;
    if body.len() < n {
        return Err(WireError::Truncated { got: body.len() + 4, want: n + 4 });
    }
    Ok(())
}

/// Writes one framed message.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, framed: &[u8]) -> Result<(), WireError> {
    w.write_all(framed).await.map_err(|e| WireError::io("writing a frame", e))?;
    w.flush().await.map_err(|e| WireError::io("flushing a frame", e))
}

/// [`write_frame`] to a peer that must take it within `limit` (issue 34:
/// a peer that sends but never reads its answers would otherwise hold its
/// connection, and the socket's buffers, for ever once they are full).
/// The usual write completes at once and sets no timer; only one the
/// socket cannot take now waits, for at most `limit`.
pub async fn write_frame_within<W: AsyncWrite + Unpin>(
    w: &mut W,
    framed: &[u8],
    limit: std::time::Duration,
) -> Result<(), WireError> {
    let mut write = std::pin::pin!(write_frame(w, framed));
    if let std::task::Poll::Ready(r) =
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(write.as_mut(), cx))).await
    {
        return r;
    }
    match tokio::time::timeout(limit, write).await {
        Ok(r) => r,
        Err(_) => Err(WireError::io(
            "writing a frame",
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the peer read nothing of it for {} s", limit.as_secs_f64()),
            ),
        )),
    }
}

#[cfg(test)]
mod tests {

    /// §11 (issue 34, per-connection memory): a frame that declares a
    /// megabyte and sends ten bytes holds memory for what arrived, not
    /// for what it declared.
    #[tokio::test]
    async fn s11_a_half_frame_holds_what_arrived_not_what_it_declared() {
        let mut body = Vec::new();
        let mut r: &[u8] = &[7u8; 10];
        let e = read_body_into(&mut r, 1 << 20, &mut body).await.unwrap_err();
        assert_eq!(e.code(), "frame-truncated");
        assert_eq!(body.len(), 10);
        assert!(body.capacity() <= FIRST_ALLOCATION, "{} bytes held for 10 received", body.capacity());
    }

    use super::*;

    #[test]
    fn s11_split_needs_the_whole_frame_and_refuses_over_the_cap() {
        let f = frame(b"\xa0");
        assert_eq!(split(&f[..3], 16).unwrap(), None);
        assert_eq!(split(&f[..4], 16).unwrap(), None);
        assert_eq!(split(&f, 16).unwrap(), Some((&b"\xa0"[..], 5)));
        let big = frame(&[0u8; 17]);
        assert!(matches!(split(&big, 16), Err(WireError::Oversized { declared: 17, cap: 16 })));
    }

    #[test]
    fn s11_a_non_canonical_body_is_refused() {
        // 0x18 0x01: the integer 1 not in its shortest form.
        assert!(matches!(decode_body(&[0x18, 0x01]), Err(WireError::NonCanonical(_))));
        // Trailing bytes after the item.
        assert!(matches!(decode_body(&[0x01, 0x01]), Err(WireError::NonCanonical(_))));
        // A float (strict profile).
        assert!(matches!(decode_body(&[0xf9, 0x3c, 0x00]), Err(WireError::NonCanonical(_))));
    }
}
