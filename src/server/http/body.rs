//! Reading a request body: capped while read, idle time-out per frame, and the rest of a
//! refused body drained so the client sees the refusal.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Buf, Bytes, Frame};
use hyper::header::{self, HeaderMap};

use crate::wire::errors::Cause;

/// Most bytes of a refused body read and discarded before the refusal is sent: a client that
/// writes its whole body before reading (most do) would otherwise see the connection reset
/// under its write instead of the 413. Beyond this the host stops reading and closes.
pub const MAX_DRAIN_BYTES: u64 = 8 * 1024 * 1024;

/// Longest time spent discarding a refused body (see [`MAX_DRAIN_BYTES`]), so a slow sender
/// cannot keep a refused request open.
pub const MAX_DRAIN_TIME: Duration = Duration::from_secs(2);

/// The next frame of `body`: `Err(BodyTimeout)` when none arrives within `idle`, `Err
/// (InvalidRequest)` when the body fails (its error is dropped here, so it never lives across
/// an await).
async fn next_frame<B>(
    body: &mut Pin<&mut B>,
    idle: Duration,
) -> Result<Option<Frame<B::Data>>, Cause>
where
    B: Body,
{
    let mut poll = |cx: &mut Context<'_>| {
        body.as_mut()
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map_err(|_| ())))
    };
    // The usual body is already buffered with the headers: take it without arming a timer.
    let ready = std::future::poll_fn(|cx| Poll::Ready(poll(cx))).await;
    let next = match ready {
        Poll::Ready(next) => next,
        Poll::Pending => tokio::time::timeout(idle, std::future::poll_fn(&mut poll))
            .await
            .map_err(|_| Cause::BodyTimeout)?,
    };
    match next {
        None => Ok(None),
        Some(Ok(frame)) => Ok(Some(frame)),
        Some(Err(())) => Err(Cause::InvalidRequest),
    }
}

/// Reads and discards the rest of a refused body, at most [`MAX_DRAIN_BYTES`] in all (counting
/// `already` bytes read) and for at most [`MAX_DRAIN_TIME`]; gives up early on a read error or
/// a pause longer than `idle`. A body that ends in time leaves the connection reusable.
pub(super) async fn drain<B: Body>(mut body: Pin<&mut B>, already: u64, idle: Duration) {
    if body.is_end_stream() {
        return;
    }
    let declared = body.size_hint().exact();
    if declared.is_some_and(|len| already.saturating_add(len) > MAX_DRAIN_BYTES) {
        return; // the declared length alone is past the bound: close at once
    }
    let _ = tokio::time::timeout(MAX_DRAIN_TIME, async {
        let mut total = already;
        while let Ok(Some(frame)) = next_frame(&mut body, idle).await {
            if let Some(data) = frame.data_ref() {
                total = total.saturating_add(data.remaining() as u64);
                if total > MAX_DRAIN_BYTES {
                    return;
                }
            }
        }
    })
    .await;
}

/// Reads the body up to `limit` bytes, each frame within `idle` of the previous one. Over
/// the limit (declared or streamed) the rest is drained (see [`drain`]) and `BodyTooLarge`
/// returned; a stalled body is `BodyTimeout`.
pub(super) async fn read_capped<B>(
    headers: &HeaderMap,
    mut body: Pin<&mut B>,
    limit: usize,
    idle: Duration,
) -> Result<Bytes, Cause>
where
    B: Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Some(len) = headers.get(header::CONTENT_LENGTH) {
        let declared = len
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or(Cause::InvalidRequest)?;
        if declared > limit as u64 {
            drain(body, 0, idle).await;
            return Err(Cause::BodyTooLarge);
        }
    }
    // The usual body arrives as one frame and is kept as is; only a split body is copied.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<Vec<u8>> = None;
    let mut total = 0usize;
    while let Some(frame) = next_frame(&mut body, idle).await? {
        let Ok(mut data) = frame.into_data() else {
            continue; // trailers carry nothing for us
        };
        total = total.saturating_add(data.remaining());
        if total > limit {
            drain(body, total as u64, idle).await;
            return Err(Cause::BodyTooLarge);
        }
        let chunk = data.copy_to_bytes(data.remaining());
        match (&mut joined, first.take()) {
            (Some(all), _) => all.extend_from_slice(&chunk),
            (None, None) => first = Some(chunk),
            (None, Some(head)) => {
                let mut all = Vec::with_capacity(head.len() + chunk.len());
                all.extend_from_slice(&head);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
        }
    }
    Ok(match joined {
        Some(all) => Bytes::from(all),
        None => first.unwrap_or_default(),
    })
}
