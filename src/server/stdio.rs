//! The stdio host: one JSON-RPC message per line on stdin/stdout.
//!
//! This file only moves bytes: lines come out of [`LineFramer`], are decoded by the codec and
//! handed to [`Server::serve`]; replies and notifications leave through one writer, each as one
//! whole line. Protocol decisions stay in the server and the codec.
//!
//! * Requests run concurrently, at most [`MAX_IN_FLIGHT`] at once, and are answered in the order
//!   they finish. At most [`MAX_QUEUED`] requests wait or run; beyond that, reading pauses.
//! * A malformed line is answered (-32700/-32600, `"id": null` when the id is unreadable) and the
//!   next line is served; an oversized line is skipped up to its newline and answered once.
//! * `notifications/cancelled` cancels the in-flight request with that id: its handler stops and
//!   no reply follows. Unknown ids and malformed cancellations are ignored.
//! * At EOF the server shuts down with its configured budget, requests still running after that
//!   are abandoned, and the call returns once every line is written.
//!
//! # How the bytes move
//!
//! One `Session` holds everything above and is fed the bytes of each read. A request is polled
//! once where it was read; a handler that completes at once (the common case) is answered
//! without a task or a map entry. Only a request that has to wait (a pending handler, or no free
//! slot) becomes a task on the runtime and is registered for cancellation. A first poll that
//! runs long holds up reading (and the replies of the same read) for that long; a handler that
//! blocks its thread (it should use `spawn_blocking`) stalls the requests after it. It cannot
//! stop the end of the run, though: a separate watcher sees stdin hang up, and if the session
//! does not reach EOF within the shutdown budget the server shuts down without it, reports
//! `cleanup_failed` and the run returns.
//!
//! Output collects in `Lines`, one buffer of whole lines. While one read's lines are served
//! the writer is not woken ("corked"); afterwards everything queued goes out with one `write`
//! and one flush, so a burst of requests costs one system call. Whoever writes holds stdout
//! (`writing`) and takes everything queued before letting go, so lines never interleave.
//!
//! [`Server::run_stdio`] serves the process's stdin and stdout from dedicated threads. The
//! reader (`mcp-stdin`) does large blocking `read`s, feeds the session and then writes that
//! read's replies itself with one `write`, like a synchronous line loop: the common case costs
//! one `read` and one `write` per batch and no thread hand-off. The writer (`mcp-stdout`) is
//! woken only for lines that come later (requests that waited, notifications, the end of the
//! run). When stdout is not read, the reader blocks in its `write`, or waits while more than
//! `MAX_UNWRITTEN` bytes are queued behind the writer, and stops reading: input is not taken
//! in faster than output drains. Neither thread goes through tokio's blocking pool,
//! which costs a hand-off per read and per write.
//! [`Server::run_stdio_on`] feeds the same session from any `AsyncRead` and drains the same
//! `Lines` into any `AsyncWrite` from a task.

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, Read, Write};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::{lock, Outbox, Reply, Server, ShutdownReport, MAX_IN_FLIGHT};
use crate::codec::stdio::Frame;
use crate::codec::{decode, EgressLimits, IngressLimits, LineEvent, LineFramer, Rejection};
use crate::core::{Caller, CancelToken};
use crate::machine::subscriptions::Transport;
use crate::wire::jsonrpc::{Message, Request};

/// Requests read but not yet answered (running or waiting for a slot) before reading pauses.
pub const MAX_QUEUED: usize = 4 * MAX_IN_FLIGHT;

/// Bytes asked for by one read of the input; every line in them is served before the next read.
const READ_CHUNK: usize = 64 * 1024;

/// Bytes of output queued behind a writer that holds stdout before the reader stops reading:
/// when stdout is not read, input stays in the client's pipe instead of piling up here.
const MAX_UNWRITTEN: usize = 1 << 20;

/// Output waiting for the writer: whole lines, each with its newline.
struct Lines {
    state: Mutex<LinesState>,
    /// Wakes the writer when output is ready or the session closed.
    ready: Notify,
    /// Wakes a reader held by [`MAX_UNWRITTEN`] when the writer lets go of stdout.
    drained: Condvar,
}

#[derive(Default)]
struct LinesState {
    buf: Vec<u8>,
    /// A batch of input is being served: hold the wake-up until it is done.
    corked: bool,
    /// A writer holds stdout and will take `buf` before letting go: one writer at a time.
    writing: bool,
    /// No more lines will come; the writer ends once `buf` is written.
    closed: bool,
    /// A write failed: lines are dropped and the peer counts as gone.
    broken: bool,
    /// The failure, for the run's result.
    failure: Option<io::Error>,
    /// The reader waits on `drained`.
    reader_held: bool,
}

impl Lines {
    fn new() -> Self {
        Lines {
            state: Mutex::new(LinesState::default()),
            ready: Notify::new(),
            drained: Condvar::new(),
        }
    }

    /// Queues one line; false when the writer is gone.
    fn push(&self, line: &str) -> bool {
        let mut state = lock(&self.state);
        if state.broken {
            return false;
        }
        // A writer holding stdout takes these bytes before it lets go: no wake-up needed.
        let wake = state.buf.is_empty() && !state.corked && !state.writing;
        state.buf.reserve(line.len() + 1);
        state.buf.extend_from_slice(line.as_bytes());
        state.buf.push(b'\n');
        drop(state);
        if wake {
            self.ready.notify_one();
        }
        true
    }

    fn cork(&self) {
        lock(&self.state).corked = true;
    }

    /// Ends a batch: the writer is woken for what it queued.
    fn uncork(&self) {
        let mut state = lock(&self.state);
        state.corked = false;
        let wake = !state.buf.is_empty() && !state.writing;
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    /// Ends a batch by writing what is queued with one write here, on the reading thread:
    /// saves the writer's wake-up and its thread switch per read. When the writer holds
    /// stdout it takes these lines too, and the reader waits only while more than
    /// [`MAX_UNWRITTEN`] bytes are queued behind it. Lines queued during this write go to the
    /// writer, so reading (a cancellation, say) resumes after one write. Never writes after
    /// `close`.
    fn uncork_writing(&self, batch: &mut Vec<u8>, write: impl Fn(&[u8]) -> io::Result<()>) {
        let mut state = lock(&self.state);
        state.corked = false;
        while !state.closed && !state.broken {
            if state.writing {
                if state.buf.len() <= MAX_UNWRITTEN {
                    break;
                }
                state.reader_held = true;
                state = self
                    .drained
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            if state.buf.is_empty() {
                break;
            }
            batch.clear();
            std::mem::swap(&mut state.buf, batch);
            state.writing = true;
            drop(state);
            let written = write(batch);
            state = lock(&self.state);
            state.writing = false;
            if let Err(e) = written {
                state.fail(e);
            }
            break;
        }
        // Lines queued meanwhile, or the end of the run, are the writer's.
        let wake = state.closed || (!state.buf.is_empty() && !state.writing);
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.ready.notify_one();
        self.drained.notify_all();
    }

    fn break_off(&self, error: io::Error) {
        lock(&self.state).fail(error);
        self.drained.notify_all();
    }

    /// The first write failure, if any.
    fn failure(&self) -> Option<io::Error> {
        lock(&self.state).failure.take()
    }

    /// Takes stdout and swaps everything queued into `out` (emptied first, its capacity
    /// reused); call [`Lines::written`] after writing it. False once the session closed and
    /// everything was written.
    async fn next_batch(&self, out: &mut Vec<u8>) -> bool {
        out.clear();
        loop {
            let notified = self.ready.notified();
            {
                let mut state = lock(&self.state);
                if !state.writing {
                    if !state.buf.is_empty() {
                        std::mem::swap(&mut state.buf, out);
                        state.writing = true;
                        return true;
                    }
                    if state.closed {
                        return false;
                    }
                }
            }
            notified.await;
        }
    }

    /// Lets go of stdout after a batch from [`Lines::next_batch`].
    fn written(&self) {
        let mut state = lock(&self.state);
        state.writing = false;
        let held = std::mem::take(&mut state.reader_held);
        drop(state);
        if held {
            self.drained.notify_all();
        }
    }
}

impl LinesState {
    fn fail(&mut self, error: io::Error) {
        self.broken = true;
        self.buf = Vec::new();
        self.failure.get_or_insert(error);
    }
}

/// Closes [`Lines`] when the run ends, also when its future is dropped, so the writer then
/// writes what is queued and stops instead of waiting for ever.
struct CloseOnDrop(Arc<Lines>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Every request's outbox: its lines go to the one writer.
impl Outbox for Lines {
    fn notify(&self, line: String) -> bool {
        self.push(&line)
    }

    fn finish(&self, reply: Reply) {
        let _ = self.push(&reply.line);
    }

    fn transport(&self) -> Transport {
        Transport::Stdio
    }
}

/// Requests that wait as tasks, by the exact JSON text of their id, for cancellation.
type InFlight = Arc<Mutex<HashMap<String, (u64, CancelToken)>>>;

/// Requests read but not yet admitted by the server; EOF waits for them (bounded).
#[derive(Default)]
struct Unstarted {
    count: AtomicUsize,
    changed: Notify,
}

impl Unstarted {
    fn add(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    fn started(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    async fn all_started(&self) {
        loop {
            let notified = self.changed.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

type Serving = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A request that could not be answered where it was read.
enum Waiting {
    /// Admitted and polled once; holds its slot.
    Started {
        serving: Serving,
        _permit: OwnedSemaphorePermit,
    },
    /// Every slot is taken; it waits for one (or for its cancellation).
    ForSlot(Box<Request>, Arc<dyn Outbox>, Loop),
}

/// How a request is served: `Some` runs a legacy session's interaction loop (feature
/// `legacy`); `None` (and every request without the feature) goes to [`Server::serve`].
#[cfg(feature = "legacy")]
type Loop = Option<super::legacy::Interaction>;
#[cfg(not(feature = "legacy"))]
type Loop = ();

/// The protocol side of one stdio run: framing, decoding, dispatch, cancellation, bounds and
/// shutdown. Fed bytes by either driver below.
struct Session {
    server: Server,
    caller: Caller,
    limits: IngressLimits,
    framer: LineFramer,
    lines: Arc<Lines>,
    outbox: Arc<dyn Outbox>,
    in_flight: InFlight,
    running: Arc<Semaphore>,
    queued: Arc<Semaphore>,
    generation: u64,
    unstarted: Arc<Unstarted>,
    tasks: JoinSet<()>,
    /// The id text of the request being polled where it was read.
    key: String,
    /// The initialise-era session of this run, if a legacy `initialize` started one.
    #[cfg(feature = "legacy")]
    legacy: super::legacy::LegacyLink,
}

impl Session {
    fn new(server: &Server, caller: Caller, lines: &Arc<Lines>) -> Session {
        let limits = server.ingress_limits();
        Session {
            server: server.clone(),
            caller,
            limits,
            framer: LineFramer::new(limits.max_frame_bytes),
            lines: Arc::clone(lines),
            outbox: Arc::clone(lines) as Arc<dyn Outbox>,
            in_flight: Arc::default(),
            running: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            queued: Arc::new(Semaphore::new(MAX_QUEUED)),
            generation: 0,
            unstarted: Arc::default(),
            tasks: JoinSet::new(),
            key: String::new(),
            #[cfg(feature = "legacy")]
            legacy: super::legacy::LegacyLink::default(),
        }
    }

    /// Serves every complete line in one read's bytes. Output stays corked: the driver ends
    /// the batch.
    async fn feed(&mut self, mut input: &[u8]) {
        // Reap finished request tasks so the set does not grow.
        while self.tasks.try_join_next().is_some() {}
        self.lines.cork();
        while !input.is_empty() {
            let (used, event) = self.framer.feed_frame(input);
            input = &input[used..];
            if let Some(event) = event {
                self.event(event).await;
            }
        }
    }

    /// End of input: a last line without a newline is still served.
    async fn end(&mut self) {
        if let Some(LineEvent::Line(line)) = self.framer.finish() {
            self.event(Frame::Line(line.into())).await;
        }
        self.lines.uncork();
    }

    async fn event(&mut self, event: Frame<'_>) {
        let line = match event {
            Frame::Oversized => {
                send_rejection(
                    &self.lines,
                    &Rejection::oversized_line(self.limits.max_frame_bytes),
                );
                return;
            }
            Frame::Line(line) => line,
        };
        match decode(&line, &self.limits) {
            Err(rejection) => {
                // A legacy session's answer to a request the server sent it (the codec's one
                // exception, on the legacy path only); an answer to nothing pending is dropped.
                #[cfg(feature = "legacy")]
                if let Some(matched) =
                    self.legacy
                        .client_response(&self.server, &line, &rejection, &self.limits)
                {
                    if !matched {
                        tracing::debug!("a client response answered no pending request");
                    }
                    return;
                }
                send_rejection(&self.lines, &rejection);
            }
            Ok(Message::Notification(n)) => {
                #[cfg(feature = "legacy")]
                self.legacy.notification(&self.server, &n);
                if let Some(id) = Server::cancelled_request(&n) {
                    if let Some((_, token)) = lock(&self.in_flight).get(&id) {
                        token.cancel();
                    }
                }
            }
            Ok(Message::Response(_)) => {}
            Ok(Message::Request(request)) => self.request(request).await,
        }
    }

    async fn request(&mut self, request: Request) {
        // B23: a legacy session's own methods are answered here; its other requests are
        // rewritten and their replies go through the legacy outbox.
        #[cfg(feature = "legacy")]
        let (request, outbox, how) = match self.legacy.route(&self.server, request, &self.outbox) {
            super::legacy::Route::Answered(reply) => return self.outbox.finish(reply),
            super::legacy::Route::Serve(request, outbox) => (request, outbox, None),
            super::legacy::Route::Legacy(request, interaction) => {
                (request, Arc::clone(&self.outbox), Some(interaction))
            }
        };
        #[cfg(not(feature = "legacy"))]
        let (outbox, how) = (Arc::clone(&self.outbox), ());
        let slot = match Arc::clone(&self.queued).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // Reading pauses; what is already queued must not wait for it.
                self.lines.uncork();
                let slot = Arc::clone(&self.queued).acquire_owned().await;
                self.lines.cork();
                let Ok(slot) = slot else { return };
                slot
            }
        };
        let token = CancelToken::new();
        let waiting = match Arc::clone(&self.running).try_acquire_owned() {
            Ok(permit) => {
                // The id's text is kept in a reused buffer: copied out only if the call waits.
                self.key.clear();
                self.key.push_str(request.id.token());
                let mut serving = serve(
                    self.server.clone(),
                    self.caller.clone(),
                    request,
                    outbox,
                    token.clone(),
                    how,
                );
                // The first poll admits the call; most handlers also finish in it.
                if poll_once(&mut serving).is_ready() {
                    return;
                }
                (
                    self.key.clone(),
                    Waiting::Started {
                        serving,
                        _permit: permit,
                    },
                )
            }
            Err(_) => {
                self.unstarted.add();
                let key = request.id.token().to_owned();
                (key, Waiting::ForSlot(Box::new(request), outbox, how))
            }
        };
        self.spawn(slot, token, waiting);
    }

    /// Runs a request that has to wait as a task, cancellable by its id until it ends.
    fn spawn(
        &mut self,
        slot: OwnedSemaphorePermit,
        token: CancelToken,
        (key, waiting): (String, Waiting),
    ) {
        self.generation += 1;
        let generation = self.generation;
        lock(&self.in_flight).insert(key.clone(), (generation, token.clone()));
        let in_flight = Arc::clone(&self.in_flight);
        let server = self.server.clone();
        let caller = self.caller.clone();
        let running = Arc::clone(&self.running);
        let unstarted = Arc::clone(&self.unstarted);
        self.tasks.spawn(async move {
            let _slot = slot;
            match waiting {
                Waiting::Started { serving, _permit } => serving.await,
                Waiting::ForSlot(request, outbox, how) => {
                    let permit = tokio::select! {
                        p = running.acquire_owned() => p.ok(),
                        () = token.cancelled() => None,
                    };
                    if let Some(_permit) = permit {
                        let mut serving = serve(server, caller, *request, outbox, token, how);
                        // The first poll admits the call; only then may EOF shut down.
                        let first =
                            std::future::poll_fn(|cx| Poll::Ready(serving.as_mut().poll(cx))).await;
                        unstarted.started();
                        if first.is_pending() {
                            serving.await;
                        }
                    } else {
                        unstarted.started();
                    }
                }
            }
            let mut map = lock(&in_flight);
            if map.get(&key).is_some_and(|(g, _)| *g == generation) {
                map.remove(&key);
            }
        });
    }

    /// EOF (or a broken input) ends the run through a regular shutdown, once every
    /// request already read has been admitted (or the budget ran out); then the writer is told
    /// that no more lines come.
    async fn finish(mut self) -> ShutdownReport {
        // No answer can come any more: a pending interaction fails now instead of holding
        // the shutdown (feature `legacy`).
        #[cfg(feature = "legacy")]
        self.legacy.close();
        let budget = self.server.shutdown_budget();
        let _ = tokio::time::timeout(budget, self.unstarted.all_started()).await;
        let report = self.server.shutdown(budget).await;
        if let ShutdownReport::CleanupFailed { unfinished } = report {
            tracing::warn!(
                unfinished,
                "stdio shutdown left requests running; abandoning them"
            );
            // A task blocked inside a poll (a handler that blocks its thread) can be neither
            // aborted nor awaited: request the abort and do not wait for it (O5, C11).
            self.tasks.abort_all();
            self.tasks.detach_all();
        } else {
            self.tasks.shutdown().await;
        }
        self.lines.close();
        report
    }
}

fn serve(
    server: Server,
    caller: Caller,
    request: Request,
    outbox: Arc<dyn Outbox>,
    token: CancelToken,
    how: Loop,
) -> Serving {
    #[cfg(feature = "legacy")]
    if let Some(interaction) = how {
        return Box::pin(interaction.run(server, caller, request, outbox, token));
    }
    #[cfg(not(feature = "legacy"))]
    let () = how;
    Box::pin(async move {
        server
            .serve(caller, Message::Request(request), outbox, token)
            .await;
    })
}

/// Polls a request once, here, with no waker: a request left pending is polled again by the
/// task that takes it over, so no wake-up is lost. Panics are answered inside
/// [`Server::serve`] (one reply per request); this catch is only the last guard that keeps the
/// reading thread alive.
fn poll_once(serving: &mut Serving) -> Poll<()> {
    let mut cx = Context::from_waker(Waker::noop());
    match std::panic::catch_unwind(AssertUnwindSafe(|| serving.as_mut().poll(&mut cx))) {
        Ok(poll) => poll,
        Err(_) => {
            tracing::error!("a request panicked outside the dispatcher");
            Poll::Ready(())
        }
    }
}

impl Server {
    /// Serves MCP on this process's stdin and stdout until stdin closes. Runs once per
    /// server; nothing but protocol lines is written to stdout. Returns how the
    /// shutdown at EOF ended, so a binary can exit non-zero on `cleanup_failed`.
    ///
    /// Stdin and stdout are served by two dedicated threads (`mcp-stdin`, `mcp-stdout`); the
    /// requests that have to wait run as tasks on the calling runtime.
    ///
    /// # Which runtime to build
    ///
    /// A request that completes in its first poll (the common case) is served on `mcp-stdin`,
    /// not on a runtime worker, so a stdio host needs no worker threads: build a
    /// current-thread runtime (`#[tokio::main(flavor = "current_thread")]`, or
    /// `tokio::runtime::Builder::new_current_thread().enable_all()`). Its one thread (the
    /// caller of `block_on`) runs the requests that wait and drives timers and I/O; starting
    /// no workers saves two thread starts before the first reply (issue #23). Build a
    /// multi-thread runtime instead when handlers block their thread or compute for long
    /// after their first poll: on a current-thread runtime such a handler holds up every
    /// other waiting request and the shutdown budget's timer until it yields.
    ///
    /// # Errors
    /// When stdio already ran for this server, the threads cannot be started, or reading
    /// stdin / writing stdout fails.
    pub async fn run_stdio(&self, caller: Caller) -> io::Result<ShutdownReport> {
        if !self.claim_stdio() {
            return Err(io::Error::other("stdio already ran for this server"));
        }
        let runtime = tokio::runtime::Handle::current();
        let lines = Arc::new(Lines::new());
        let _close = CloseOnDrop(Arc::clone(&lines));
        let (wrote, written) = oneshot::channel();
        std::thread::Builder::new()
            .name("mcp-stdout".to_owned())
            .spawn({
                let runtime = runtime.clone();
                let lines = Arc::clone(&lines);
                move || {
                    let _ = wrote.send(runtime.block_on(write_stdout(&lines)));
                }
            })?;
        let mut session = Session::new(self, caller, &lines);
        let (read, mut finished_reading) = oneshot::channel();
        let reader = std::thread::Builder::new()
            .name("mcp-stdin".to_owned())
            .spawn(move || {
                // Once `run_stdio` is dropped nothing more is served.
                let result = read_stdin(&runtime, &mut session, || read.is_closed());
                let _ = read.send((session, result));
            });
        let budget = self.shutdown_budget();
        let (report, read_result) = match reader {
            Ok(_) => {
                let (hung_up, input_ended) = oneshot::channel::<()>();
                watch_hangup(hung_up);
                let served = tokio::select! {
                    served = &mut finished_reading => Some(served),
                    () = hangup(input_ended) => None,
                };
                // The writer hung up: the session has the budget to read to EOF. Longer means
                // a handler blocks the session thread in its first poll; shut down without it
                // and abandon that thread, so EOF still ends the run (O5, C11).
                let served = match served {
                    Some(served) => Some(served),
                    None => tokio::time::timeout(budget, &mut finished_reading)
                        .await
                        .ok(),
                };
                match served {
                    Some(Ok((session, result))) => (session.finish().await, result),
                    Some(Err(_)) => (
                        self.shutdown(budget).await,
                        Err(io::Error::other("stdin reader stopped")),
                    ),
                    None => {
                        tracing::warn!("a handler blocks the stdio session thread; abandoning it");
                        (self.shutdown(budget).await, Ok(()))
                    }
                }
            }
            Err(e) => (self.shutdown(budget).await, Err(e)),
        };
        lines.close();
        let write_result = written
            .await
            .unwrap_or_else(|_| Err(io::Error::other("stdout writer stopped")));
        read_result.and(write_result).map(|()| report)
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
    ) -> io::Result<ShutdownReport>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        if !self.claim_stdio() {
            return Err(io::Error::other("stdio already ran for this server"));
        }
        let lines = Arc::new(Lines::new());
        let _close = CloseOnDrop(Arc::clone(&lines));
        let writer_task = tokio::spawn(write_lines(writer, Arc::clone(&lines)));
        let mut session = Session::new(self, caller, &lines);
        let mut buf = vec![0u8; READ_CHUNK];
        let read_result = loop {
            match reader.read(&mut buf).await {
                Ok(0) => {
                    session.end().await;
                    break Ok(());
                }
                Ok(n) => {
                    session.feed(&buf[..n]).await;
                    session.lines.uncork();
                }
                Err(e) => break Err(e),
            }
        };
        let report = session.finish().await;
        let write_result = writer_task
            .await
            .map_err(|e| io::Error::other(format!("stdout writer failed: {e}")))?;
        read_result.and(write_result).map(|()| report)
    }
}

/// Fires `hung_up` when the other end of stdin closes (POLLHUP), independently of the thread
/// that reads it: a thread blocked in `poll(2)` with no events asked for, which wakes only on
/// hang-up or error (never for pending data, so it costs nothing per request). A regular file
/// or `/dev/null` never hangs up; there the reader's own EOF ends the run. Without a way to
/// watch (not unix, or no thread) nothing fires and the reader's EOF is the only end.
fn watch_hangup(hung_up: oneshot::Sender<()>) {
    #[cfg(unix)]
    {
        let _ = std::thread::Builder::new()
            .name("mcp-stdin-hangup".to_owned())
            .spawn(move || {
                use rustix::event::{poll, PollFd, PollFlags};
                let stdin = io::stdin();
                loop {
                    let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
                    match poll(&mut fds, None) {
                        Ok(_) if !fds[0].revents().is_empty() => {
                            let _ = hung_up.send(());
                            return;
                        }
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(_) => return,
                    }
                    if hung_up.is_closed() {
                        return;
                    }
                }
            });
    }
    #[cfg(not(unix))]
    drop(hung_up);
}

/// Resolves on a hang-up only; a watcher that could not watch (dropped sender) never resolves.
async fn hangup(signal: oneshot::Receiver<()>) {
    if signal.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The `mcp-stdin` thread: large blocking reads of stdin, each served by the session on the
/// runtime's context, until EOF or until `abandoned` says the run is gone.
fn read_stdin(
    runtime: &tokio::runtime::Handle,
    session: &mut Session,
    abandoned: impl Fn() -> bool,
) -> io::Result<()> {
    let mut stdin = io::stdin().lock();
    let stdout = io::stdout();
    let lines = Arc::clone(&session.lines);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut batch = Vec::new();
    loop {
        let read = stdin.read(&mut buf);
        if abandoned() {
            return Ok(());
        }
        match read {
            Ok(0) => {
                runtime.block_on(session.end());
                return Ok(());
            }
            Ok(n) => {
                runtime.block_on(session.feed(&buf[..n]));
                // The replies of this read go out from here, as one write, before the next
                // read: no hand-off to `mcp-stdout` for them.
                lines.uncork_writing(&mut batch, |bytes| write_batch(&stdout, bytes));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// One batch of whole lines in one write and one flush. Stdout is locked per batch only, so
/// a stray `println!` elsewhere waits instead of hanging.
fn write_batch(stdout: &io::Stdout, batch: &[u8]) -> io::Result<()> {
    let mut out = stdout.lock();
    out.write_all(batch).and_then(|()| out.flush())
}

/// The `mcp-stdout` thread: writes what the `mcp-stdin` thread does not (replies of requests
/// that waited, notifications, lines of the run's end), each batch in one write and one flush.
/// Ends with the first write failure of either thread.
async fn write_stdout(lines: &Lines) -> io::Result<()> {
    let stdout = io::stdout();
    let mut batch = Vec::new();
    while lines.next_batch(&mut batch).await {
        let written = write_batch(&stdout, &batch);
        lines.written();
        if let Err(e) = written {
            lines.break_off(e);
        }
    }
    lines.failure().map_or(Ok(()), Err)
}

/// The writer task of [`Server::run_stdio_on`]: each batch in one write and one flush.
async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, lines: Arc<Lines>) -> io::Result<()> {
    let mut batch = Vec::new();
    while lines.next_batch(&mut batch).await {
        let written = async {
            writer.write_all(&batch).await?;
            writer.flush().await
        };
        let written = written.await;
        lines.written();
        if let Err(e) = written {
            lines.break_off(e);
            return Err(lines
                .failure()
                .unwrap_or_else(|| io::Error::other("stdout writer failed")));
        }
    }
    writer.shutdown().await
}

fn send_rejection(lines: &Lines, rejection: &Rejection) {
    if let Some(line) = rejection
        .encode_reply(&EgressLimits::SERVER)
        .and_then(|reply| reply.body)
    {
        let _ = lines.push(&line);
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[test]
    fn c6_a_batch_is_every_queued_line_whole_and_close_ends_the_writer() {
        let lines = Lines::new();
        lines.cork();
        assert!(lines.push(r#"{"a":1}"#));
        assert!(lines.push(r#"{"b":2}"#));
        lines.uncork();
        let mut batch = Vec::new();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        assert_eq!(batch, b"{\"a\":1}\n{\"b\":2}\n");
        lines.written();
        // Nothing queued: the writer waits.
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), None);
        assert!(lines.push("{}"));
        lines.close();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        assert_eq!(batch, b"{}\n");
        lines.written();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(false));
    }

    /// Collects what `uncork_writing` writes, one entry per write.
    fn write_here(lines: &Lines) -> Vec<Vec<u8>> {
        let writes = Mutex::new(Vec::new());
        let mut batch = Vec::new();
        lines.uncork_writing(&mut batch, |bytes| {
            lock(&writes).push(bytes.to_vec());
            Ok(())
        });
        writes.into_inner().unwrap()
    }

    #[test]
    fn c6_the_reading_thread_writes_its_batch_at_once_and_never_beside_the_writer() {
        let lines = Lines::new();
        lines.cork();
        assert!(lines.push(r#"{"a":1}"#));
        assert!(lines.push(r#"{"b":2}"#));
        assert_eq!(write_here(&lines), vec![b"{\"a\":1}\n{\"b\":2}\n".to_vec()]);
        // Written here: nothing is left for the writer.
        let mut batch = Vec::new();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), None);

        // The writer holds stdout: the reading thread leaves its lines to it.
        assert!(lines.push("{}"));
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        lines.cork();
        assert!(lines.push("[1]"));
        assert!(write_here(&lines).is_empty());
        lines.written();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        assert_eq!(batch, b"[1]\n");
        lines.written();

        // After close only the writer writes (what is queued), then it ends.
        assert!(lines.push("[2]"));
        lines.close();
        assert!(write_here(&lines).is_empty());
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        assert_eq!(batch, b"[2]\n");
        lines.written();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(false));
    }

    #[test]
    fn c6_lines_queued_while_the_reading_thread_writes_go_to_the_writer() {
        let lines = Lines::new();
        assert!(lines.push("[1]"));
        let writes = Mutex::new(Vec::new());
        let mut batch = Vec::new();
        lines.uncork_writing(&mut batch, |bytes| {
            // A task answers while stdout is held: no wake-up yet, the holder hands it on.
            assert!(lines.push("[2]"));
            lock(&writes).push(bytes.to_vec());
            Ok(())
        });
        assert_eq!(writes.into_inner().unwrap(), vec![b"[1]\n".to_vec()]);
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        assert_eq!(batch, b"[2]\n");
    }

    #[test]
    fn o8_the_reader_waits_while_more_than_the_bound_is_queued_behind_the_writer() {
        let lines = Arc::new(Lines::new());
        assert!(lines.push("{}"));
        let mut batch = Vec::new();
        // The writer holds stdout (its peer does not read).
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(true));
        let line = "x".repeat(1024);
        // Exactly at the bound the reader goes on reading.
        lines.cork();
        while lock(&lines.state).buf.len() + line.len() < MAX_UNWRITTEN {
            assert!(lines.push(&line));
        }
        let rest = MAX_UNWRITTEN - lock(&lines.state).buf.len();
        assert!(lines.push(&"y".repeat(rest - 1)));
        assert_eq!(lock(&lines.state).buf.len(), MAX_UNWRITTEN);
        assert!(write_here(&lines).is_empty());
        // One byte past it the reader waits for the writer, then writes the queue itself.
        assert!(lines.push(""));
        assert_eq!(lock(&lines.state).buf.len(), MAX_UNWRITTEN + 1);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = std::thread::spawn({
            let (lines, done) = (Arc::clone(&lines), Arc::clone(&done));
            move || {
                let writes = write_here(&lines);
                done.store(true, Ordering::SeqCst);
                writes
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !done.load(Ordering::SeqCst),
            "the reader went on past the bound"
        );
        lines.written();
        let writes = reader.join().unwrap();
        assert_eq!(writes.len(), 1);
        assert!(writes[0].len() > MAX_UNWRITTEN);
    }

    #[test]
    fn d12_after_a_write_failed_lines_are_refused_and_the_failure_is_reported() {
        let lines = Lines::new();
        assert!(lines.push("{}"));
        let mut batch = Vec::new();
        lines.uncork_writing(&mut batch, |_| {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        });
        assert!(!Outbox::notify(&lines, "{}".to_owned()));
        lines.close();
        assert_eq!(lines.next_batch(&mut batch).now_or_never(), Some(false));
        assert_eq!(
            lines.failure().map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }

    #[test]
    fn a_handler_panicking_in_its_first_poll_is_contained() {
        let mut serving: Serving = Box::pin(async { panic!("a handler bug") });
        assert!(poll_once(&mut serving).is_ready());
        let mut pending: Serving = Box::pin(std::future::pending());
        assert!(poll_once(&mut pending).is_pending());
    }
}
