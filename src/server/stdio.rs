//! The stdio host (C-section, O4): one JSON-RPC message per line on stdin/stdout.
//!
//! This file only moves bytes: lines come out of [`LineFramer`], are decoded by the codec and
//! handed to [`Server::serve`]; replies and notifications leave through one writer task, each
//! as one whole line (C1, C6). Protocol decisions stay in the server and the codec.
//!
//! * Requests run concurrently, at most [`MAX_IN_FLIGHT`] at once, and are answered in the order
//!   they finish (C14). At most [`MAX_QUEUED`] requests wait or run; beyond that, reading pauses.
//! * A malformed line is answered (-32700/-32600, `"id": null` when the id is unreadable) and the
//!   next line is served; an oversized line is skipped up to its newline and answered once.
//! * `notifications/cancelled` cancels the in-flight request with that id: its handler stops and
//!   no reply follows (C9). Unknown ids and malformed cancellations are ignored (J10).
//! * At EOF the server shuts down with its configured budget, requests still running after that
//!   are abandoned, and the call returns once every line is written (C11).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinSet;

use super::{lock, Outbox, Reply, Server, MAX_IN_FLIGHT};
use crate::codec::{decode, encode, EgressLimits, LineEvent, LineFramer, Rejection};
use crate::core::{Caller, CancelToken};
use crate::machine::subscriptions::Transport;
use crate::wire::jsonrpc::{Message, Response};

/// Requests read but not yet answered (running or waiting for a slot) before reading pauses.
pub const MAX_QUEUED: usize = 4 * MAX_IN_FLIGHT;

const READ_CHUNK: usize = 64 * 1024;

/// The outbox of one stdio request: lines go to the single writer task.
struct LineOutbox {
    tx: mpsc::UnboundedSender<String>,
}

impl Outbox for LineOutbox {
    fn notify(&self, line: String) -> bool {
        self.tx.send(line).is_ok()
    }

    fn finish(&self, reply: Reply) {
        let _ = self.tx.send(reply.line);
    }

    fn transport(&self) -> Transport {
        Transport::Stdio
    }
}

/// In-flight requests by the exact JSON text of their id.
type InFlight = Arc<Mutex<HashMap<String, (u64, CancelToken)>>>;

impl Server {
    /// Serves MCP on this process's stdin and stdout until stdin closes. Runs once per server
    /// (O4); nothing but protocol lines is written to stdout (C1, C4). Returns how the
    /// shutdown at EOF ended, so a binary can exit non-zero on `cleanup_failed` (O5).
    ///
    /// # Errors
    /// When stdio already ran for this server, or reading stdin / writing stdout fails.
    pub async fn run_stdio(&self, caller: Caller) -> io::Result<super::ShutdownReport> {
        self.run_stdio_on(caller, tokio::io::stdin(), tokio::io::stdout())
            .await
    }

    /// As [`Server::run_stdio`] on any reader and writer (tests use in-memory pipes).
    ///
    /// # Errors
    /// When stdio already ran for this server, or reading / writing fails.
    pub async fn run_stdio_on<R, W>(
        &self,
        caller: Caller,
        mut reader: R,
        writer: W,
    ) -> io::Result<super::ShutdownReport>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        if !self.claim_stdio() {
            return Err(io::Error::other("stdio already ran for this server"));
        }
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        let writer_task = tokio::spawn(write_lines(writer, rx));
        let in_flight: InFlight = Arc::default();
        let running = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let queued = Arc::new(Semaphore::new(MAX_QUEUED));
        let mut tasks = JoinSet::new();
        let limits = self.ingress_limits();
        let mut framer = LineFramer::new(limits.max_frame_bytes);
        let mut buf = vec![0u8; READ_CHUNK];
        let mut generation = 0u64;
        // Requests read but not yet admitted by the server; EOF waits for them (bounded).
        let unstarted = Arc::new((std::sync::atomic::AtomicUsize::new(0), Notify::new()));
        let read_result = loop {
            // Reap finished request tasks so the set does not grow.
            while tasks.try_join_next().is_some() {}
            let n = match reader.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => break Err(e),
            };
            let mut events = Vec::new();
            if n == 0 {
                events.extend(framer.finish());
            } else {
                let mut input = &buf[..n];
                while !input.is_empty() {
                    let (used, event) = framer.feed(input);
                    input = &input[used..];
                    events.extend(event);
                }
            }
            for event in events {
                let line = match event {
                    LineEvent::Oversized => {
                        send_rejection(&tx, &Rejection::oversized_line(limits.max_frame_bytes));
                        continue;
                    }
                    LineEvent::Line(line) => line,
                };
                match decode(&line, &limits) {
                    Err(rejection) => send_rejection(&tx, &rejection),
                    Ok(Message::Notification(n)) => {
                        if let Some(id) = Server::cancelled_request(&n) {
                            if let Some((_, token)) = lock(&in_flight).get(&id) {
                                token.cancel();
                            }
                        }
                    }
                    Ok(Message::Response(_)) => {}
                    Ok(Message::Request(request)) => {
                        let Ok(slot) = Arc::clone(&queued).acquire_owned().await else {
                            continue;
                        };
                        generation += 1;
                        let token = CancelToken::new();
                        let key = request.id.token().to_owned();
                        lock(&in_flight).insert(key.clone(), (generation, token.clone()));
                        let server = self.clone();
                        let caller = caller.clone();
                        let outbox: Arc<dyn Outbox> = Arc::new(LineOutbox { tx: tx.clone() });
                        let running = Arc::clone(&running);
                        let in_flight = Arc::clone(&in_flight);
                        let this_generation = generation;
                        let unstarted = Arc::clone(&unstarted);
                        unstarted
                            .0
                            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                        tasks.spawn(async move {
                            let _slot = slot;
                            let permit = tokio::select! {
                                p = running.acquire_owned() => p.ok(),
                                () = token.cancelled() => None,
                            };
                            if let Some(_permit) = permit {
                                let mut serving = Box::pin(server.serve(
                                    caller,
                                    Message::Request(request),
                                    outbox,
                                    token,
                                ));
                                // The first poll admits the call; only then may EOF shut down.
                                let first = std::future::poll_fn(|cx| {
                                    std::task::Poll::Ready(serving.as_mut().poll(cx))
                                })
                                .await;
                                started(&unstarted);
                                if first.is_pending() {
                                    serving.await;
                                }
                            } else {
                                started(&unstarted);
                            }
                            let mut map = lock(&in_flight);
                            if map.get(&key).is_some_and(|(g, _)| *g == this_generation) {
                                map.remove(&key);
                            }
                        });
                    }
                }
            }
            if n == 0 {
                break Ok(());
            }
        };
        // C11: EOF (or a broken stdin) ends the run through a regular shutdown, once every
        // request already read has been admitted (or the budget ran out).
        let all_started = async {
            loop {
                let notified = unstarted.1.notified();
                if unstarted.0.load(std::sync::atomic::Ordering::Acquire) == 0 {
                    break;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(self.shutdown_budget(), all_started).await;
        let report = self.shutdown(self.shutdown_budget()).await;
        if let super::ShutdownReport::CleanupFailed { unfinished } = report {
            tracing::warn!(
                unfinished,
                "stdio shutdown left requests running; abandoning them"
            );
        }
        tasks.shutdown().await;
        drop(tx);
        let write_result = writer_task
            .await
            .map_err(|e| io::Error::other(format!("stdout writer failed: {e}")))?;
        read_result.and(write_result).map(|()| report)
    }
}

fn started(unstarted: &(std::sync::atomic::AtomicUsize, Notify)) {
    unstarted
        .0
        .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    unstarted.1.notify_waiters();
}

fn send_rejection(tx: &mpsc::UnboundedSender<String>, rejection: &Rejection) {
    let Some(response) = rejection.to_response() else {
        return;
    };
    match encode(
        &Message::Response(Response::Error(response)),
        &EgressLimits::SERVER,
    ) {
        Ok(bytes) => {
            if let Ok(line) = String::from_utf8(bytes) {
                let _ = tx.send(line);
            }
        }
        Err(e) => tracing::warn!(error = %e, "rejection could not be encoded"),
    }
}

/// The single writer: each line and its newline go out in one write (C6).
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<String>,
) -> io::Result<()> {
    while let Some(line) = rx.recv().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        writer.write_all(&bytes).await?;
        writer.flush().await?;
    }
    writer.shutdown().await
}
