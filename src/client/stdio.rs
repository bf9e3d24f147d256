//! The client's stdio transport: one child process, one JSON-RPC message per line.
//!
//! Line level only: the client core hands in whole lines and takes out decoded frames; ids,
//! cancellation and subscriptions are the core's business.
//!
//! - The child runs in its own process group, so shutdown reaches everything it started.
//! - [`StdioTransport::send`] writes one whole, checked line at a time: writers queue, lines
//!   never interleave, and only requests and notifications reach the pipe.
//! - [`StdioTransport::recv`] yields frames through [`LineFramer`] and [`decode`] with
//!   [`IngressLimits::CLIENT`]; a bad or over-long line is an [`Incoming::Rejected`]
//!   diagnostic, never the end of the transport.
//! - [`StdioTransport::attach_sink`] instead hands every frame to a callback from the stdout
//!   reader itself, with no queue and no second task in between: the client core routes a
//!   reply to its waiting caller right there. Frames queued before it are handed over first,
//!   in order. Whichever of `recv` and `attach_sink` comes first decides, once.
//! - stderr is captured into a bounded ring ([`STDERR_CAPTURE_BYTES`]) for diagnostics and is
//!   never read as a failure signal.
//! - When the child exits or its pipes break, every waiter is released with a
//!   [`TransportError`] carrying the exit status, and every later call fails fast with it.
//! - [`StdioTransport::close`] closes stdin, waits, then sends SIGTERM and finally SIGKILL to
//!   the whole group; dropping the transport without closing SIGKILLs the group, so no
//!   child outlives its client.
//!
//! Requires a Tokio runtime (process, time and I/O drivers).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, watch, Mutex};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::codec::{
    decode, EgressLimits, EncodedLine, IngressError, IngressLimits, LineEvent, LineFramer,
    Rejection,
};
use crate::wire::jsonrpc::Message;

/// How much of the child's stderr is kept (the newest bytes; older ones are dropped).
///
/// Threat: a chatty or hostile server filling client memory through its log stream (capture
/// is bounded). 64 KiB holds the last few hundred log lines, enough to diagnose a crash.
pub const STDERR_CAPTURE_BYTES: usize = 64 * 1024;

/// Decoded inbound frames buffered between the reader and [`StdioTransport::recv`] (or, until
/// [`StdioTransport::attach_sink`], read ahead for the sink).
///
/// Threat: a server that outpaces its client; when the queue is full the reader stops reading
/// and the pipe applies back-pressure to the server instead of client memory growing.
pub const INBOUND_QUEUE_FRAMES: usize = 16;

/// Size of one read from the child's stdout or stderr.
///
/// Bounds the per-read buffer; lines longer than this are assembled by the framer, which holds
/// at most [`IngressLimits::CLIENT`]'s frame bound.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// How long [`StdioTransport::close`] waits after closing stdin before SIGTERM.
///
/// A server should exit promptly on EOF; two seconds lets it flush and clean up.
pub const CLOSE_EOF_GRACE: Duration = Duration::from_secs(2);

/// How long [`StdioTransport::close`] waits after SIGTERM before SIGKILL.
pub const CLOSE_TERM_GRACE: Duration = Duration::from_secs(2);

/// How long [`StdioTransport::close`] waits for the group to vanish after SIGKILL.
///
/// SIGKILL cannot be caught, so this only covers the kernel's own teardown.
pub const CLOSE_KILL_WAIT: Duration = Duration::from_secs(1);

/// After stdout ends or a write fails, how long to wait for the child's exit status so the
/// error can carry it; a child that lingers past this is reported without a status.
pub const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);

/// After the child exits, how long to keep reading stdout that a grandchild still holds open,
/// so replies written just before the exit are still delivered.
pub const EXIT_DRAIN_WAIT: Duration = Duration::from_millis(100);

/// How often [`StdioTransport::close`] checks whether the process group is gone.
const GROUP_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The grace periods of [`StdioTransport::close`]; the defaults are the named constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownTimings {
    /// Wait after closing stdin before SIGTERM.
    pub eof_grace: Duration,
    /// Wait after SIGTERM before SIGKILL.
    pub term_grace: Duration,
    /// Wait after SIGKILL for the group to vanish.
    pub kill_wait: Duration,
}

impl Default for ShutdownTimings {
    fn default() -> Self {
        Self {
            eof_grace: CLOSE_EOF_GRACE,
            term_grace: CLOSE_TERM_GRACE,
            kill_wait: CLOSE_KILL_WAIT,
        }
    }
}

/// What to run: a program and its arguments (never through a shell), environment and cwd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The program, looked up in `PATH` when it has no slash.
    pub program: OsString,
    /// Arguments, passed as they are.
    pub args: Vec<OsString>,
    /// Start from an empty environment instead of inheriting the client's.
    pub env_clear: bool,
    /// Variables to set (`Some`) or remove (`None`), applied in order.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Working directory; the client's when `None`.
    pub cwd: Option<PathBuf>,
    /// Grace periods for [`StdioTransport::close`].
    pub shutdown: ShutdownTimings,
}

impl CommandSpec {
    /// A command running `program` with no arguments, inheriting environment and cwd.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env_clear: false,
            env: Vec::new(),
            cwd: None,
            shutdown: ShutdownTimings::default(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Removes one environment variable.
    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    /// Sets the working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets the grace periods of [`StdioTransport::close`].
    pub fn shutdown(mut self, timings: ShutdownTimings) -> Self {
        self.shutdown = timings;
        self
    }
}

/// Why an outbound line was refused; nothing was written and the transport is unharmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line does not end with exactly one `\n`.
    #[error("a line must end with a newline")]
    MissingNewline,
    /// A raw newline inside the message would split it into two lines.
    #[error("a line must not contain a raw newline before its end")]
    EmbeddedNewline,
    /// The message (newline excluded) is longer than a server accepts.
    #[error("line of {actual} bytes exceeds the {limit}-byte limit")]
    TooLarge {
        /// The bound ([`EgressLimits::CLIENT`]).
        limit: usize,
        /// The message length.
        actual: usize,
    },
    /// The line is not a valid request or notification (never a response).
    #[error("not a valid request or notification: {0}")]
    NotARequest(IngressError),
    /// Encoding the message failed or exceeded its bound.
    #[error("message could not be encoded: {0}")]
    Encode(String),
}

/// Why the transport cannot carry messages (or, for `Line`, refused one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The outbound line was refused before any byte was written; the transport still works.
    #[error("line refused: {0}")]
    Line(LineError),
    /// No Tokio runtime is running on this thread.
    #[error("the stdio transport needs a Tokio runtime")]
    NoRuntime,
    /// The child could not be started.
    #[error("could not start the server process: {kind}")]
    Spawn {
        /// The OS error kind.
        kind: io::ErrorKind,
    },
    /// The child exited.
    #[error("the server process exited: {status}")]
    Exited {
        /// How it ended.
        status: ExitStatus,
    },
    /// The child closed its stdout but has not exited.
    #[error("the server process closed its output")]
    StdoutClosed,
    /// A pipe failed for another reason, or the child's status could not be read.
    #[error("server process I/O failed: {kind}")]
    Io {
        /// The OS error kind.
        kind: io::ErrorKind,
    },
    /// [`StdioTransport::close`] was called.
    #[error("the transport is closed")]
    Closed,
    /// [`StdioTransport::recv`] was called after [`StdioTransport::attach_sink`]: every frame
    /// goes to the sink, so there is nothing to receive here.
    #[error("inbound frames go to the attached sink, not to recv")]
    Attached,
}

impl TransportError {
    /// Whether the transport is finished (everything but a refused line).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, TransportError::Line(_))
    }

    /// The child's exit status, when the error carries one.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        match self {
            TransportError::Exited { status } => Some(*status),
            _ => None,
        }
    }
}

/// Receives, from the stdout reader, every inbound frame as soon as it is decoded, in order
/// ([`StdioTransport::attach_sink`]). Its last call is the `Err` that ended the transport:
/// [`TransportError::Closed`] once [`StdioTransport::close`] began, otherwise the exit
/// status, stdout's end or the I/O error; nothing follows it.
pub type FrameSink = Box<dyn FnMut(Result<Incoming, TransportError>) + Send>;

/// Who takes the stdout reader's frames: decided once, by the first `recv` or `attach_sink`.
enum Consumer {
    /// Nobody yet: the reader queues (bounded) and waits for a sink on this channel.
    Undecided(oneshot::Sender<FrameSink>),
    /// [`StdioTransport::recv`].
    Queue,
    /// The sink given to [`StdioTransport::attach_sink`].
    Sink,
}

/// The stdout reader's side of delivery.
struct Delivery {
    queue: mpsc::Sender<Incoming>,
    /// The queue's receiving end, drained into the sink when one is attached.
    queued: Arc<Mutex<mpsc::Receiver<Incoming>>>,
    /// Where a sink arrives; `None` once `recv` took the frames or a sink was attached.
    attach: Option<oneshot::Receiver<FrameSink>>,
    sink: Option<FrameSink>,
    /// The sink's final `Err` went out (at close): later frames are read and dropped, so a
    /// child flushing its output is not blocked on a full pipe while it shuts down.
    released: bool,
}

impl Delivery {
    /// Hands one frame on; `false` when nobody can take frames any more.
    async fn frame(&mut self, incoming: Incoming) -> bool {
        if self.sink.is_none() {
            // A full queue waits for `recv`, or for a sink (which then takes the queue too).
            let arrived = match &mut self.attach {
                None => None,
                Some(attach) => tokio::select! {
                    biased;
                    sink = attach => Some(sink.ok()),
                    permit = self.queue.reserve() => {
                        let Ok(permit) = permit else {
                            return false;
                        };
                        permit.send(incoming);
                        return true;
                    }
                },
            };
            let sink = match arrived {
                // `recv` takes the frames.
                None | Some(None) => {
                    self.attach = None;
                    return self.queue.send(incoming).await.is_ok();
                }
                Some(Some(sink)) => sink,
            };
            self.attach = None;
            self.switch(sink).await;
        }
        self.frame_to_sink(incoming)
    }

    fn frame_to_sink(&mut self, incoming: Incoming) -> bool {
        if let (Some(sink), false) = (&mut self.sink, self.released) {
            sink(Ok(incoming));
        }
        true
    }

    /// Takes `sink`: first every frame queued so far, in order, then each new one.
    async fn switch(&mut self, mut sink: FrameSink) {
        // `recv` never touches the queue once a sink is attached, so this lock is free.
        let mut queued = self.queued.lock().await;
        while let Ok(incoming) = queued.try_recv() {
            sink(Ok(incoming));
        }
        drop(queued);
        self.sink = Some(sink);
    }

    /// A sink that arrived while the reader waited for stdout.
    async fn attached(&mut self) -> Option<FrameSink> {
        match &mut self.attach {
            Some(attach) => attach.await.ok(),
            None => std::future::pending().await,
        }
    }

    /// A sink that still waits for its final `Err`.
    fn open_sink(&self) -> bool {
        self.sink.is_some() && !self.released
    }

    /// Sends the sink its final `Err` (once); a queue closes when it is dropped instead.
    fn release(&mut self, error: TransportError) {
        if let (Some(sink), false) = (&mut self.sink, self.released) {
            self.released = true;
            sink(Err(error));
        }
    }
}

/// One inbound line, decoded.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed response or notification, for the client core to match.
    Message(Message),
    /// A line that was invalid, over the limit or not legal for a client to receive. A
    /// diagnostic only: a client never answers it and the transport carries on.
    Rejected(Rejection),
}

/// How far [`StdioTransport::close`] had to escalate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    /// Closing stdin was enough.
    None,
    /// The group was sent SIGTERM.
    Terminated,
    /// The group was sent SIGKILL.
    Killed,
}

/// The outcome of [`StdioTransport::close`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseReport {
    /// The child's exit status, if it could be read.
    pub status: Option<ExitStatus>,
    /// The strongest step that was needed.
    pub escalation: Escalation,
    /// Whether no live process of the group was left at the end.
    pub group_ended: bool,
}

/// How the child ended, as the reaper saw it.
type ChildExit = Result<ExitStatus, io::ErrorKind>;

fn exit_error(exit: &ChildExit) -> TransportError {
    match exit {
        Ok(status) => TransportError::Exited { status: *status },
        Err(kind) => TransportError::Io { kind: *kind },
    }
}

/// The newest bytes of the child's stderr.
#[derive(Debug, Default)]
struct StderrRing {
    bytes: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl StderrRing {
    fn push(&mut self, data: &[u8]) {
        // Only the last STDERR_CAPTURE_BYTES of `data` can survive.
        let keep = &data[data.len().saturating_sub(STDERR_CAPTURE_BYTES)..];
        self.dropped += (data.len() - keep.len()) as u64;
        let overflow = (self.bytes.len() + keep.len()).saturating_sub(STDERR_CAPTURE_BYTES);
        self.bytes.drain(..overflow);
        self.dropped += overflow as u64;
        self.bytes.extend(keep);
    }
}

/// State shared with the background tasks.
#[derive(Debug)]
struct Shared {
    stderr: StdMutex<StderrRing>,
    /// The reader's verdict once stdout is finished; read when the inbound queue closes.
    terminal: StdMutex<Option<TransportError>>,
}

/// A running server child process and its line-level pipes.
pub struct StdioTransport {
    /// The child's pid, which is also its process group id.
    pgid: Pid,
    timings: ShutdownTimings,
    stdin: Mutex<Option<ChildStdin>>,
    inbound: Arc<Mutex<mpsc::Receiver<Incoming>>>,
    consumer: StdMutex<Consumer>,
    exit: watch::Receiver<Option<ChildExit>>,
    closing: watch::Sender<bool>,
    close_report: Mutex<Option<CloseReport>>,
    shared: Arc<Shared>,
    /// The stdout and stderr pumps; aborted on drop (the reaper is left to finish).
    pumps: [JoinHandle<()>; 2],
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("pgid", &self.pgid)
            .field("timings", &self.timings)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Starts `command` in its own process group with piped stdin, stdout and stderr.
    ///
    /// Must be called inside a Tokio runtime; outside one it fails with
    /// [`TransportError::NoRuntime`].
    pub fn spawn(command: &CommandSpec) -> Result<Self, TransportError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(TransportError::NoRuntime);
        }
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args);
        if command.env_clear {
            cmd.env_clear();
        }
        for (key, value) in &command.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            // The group, not just the child, is killed on drop (see `Drop`).
            .kill_on_drop(false);
        let mut child = cmd
            .spawn()
            .map_err(|e| TransportError::Spawn { kind: e.kind() })?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .ok_or(TransportError::Spawn {
                kind: io::ErrorKind::Other,
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = kill_process_group(pgid, Signal::KILL);
            return Err(TransportError::Spawn {
                kind: io::ErrorKind::BrokenPipe,
            });
        };

        let (exit_tx, exit_rx) = watch::channel(None);
        // The reaper owns the child; it is never aborted, so the child is always reaped.
        tokio::spawn(async move {
            let exit = child.wait().await.map_err(|e| e.kind());
            let _ = exit_tx.send(Some(exit));
        });

        let shared = Arc::new(Shared {
            stderr: StdMutex::new(StderrRing::default()),
            terminal: StdMutex::new(None),
        });
        let (inbound_tx, inbound_rx) = mpsc::channel(INBOUND_QUEUE_FRAMES);
        let inbound = Arc::new(Mutex::new(inbound_rx));
        let (attach_tx, attach_rx) = oneshot::channel();
        let closing = watch::Sender::new(false);
        let reader = tokio::spawn(pump_stdout(
            stdout,
            Delivery {
                queue: inbound_tx,
                queued: Arc::clone(&inbound),
                attach: Some(attach_rx),
                sink: None,
                released: false,
            },
            exit_rx.clone(),
            closing.subscribe(),
            Arc::clone(&shared),
        ));
        let logger = tokio::spawn(pump_stderr(stderr, Arc::clone(&shared)));
        Ok(Self {
            pgid,
            timings: command.shutdown,
            stdin: Mutex::new(Some(stdin)),
            inbound,
            consumer: StdMutex::new(Consumer::Undecided(attach_tx)),
            exit: exit_rx,
            closing,
            close_report: Mutex::new(None),
            shared,
            pumps: [reader, logger],
        })
    }

    /// The child's process id, which is also the id of its process group.
    pub fn process_group(&self) -> u32 {
        self.pgid.as_raw_nonzero().get().unsigned_abs()
    }

    /// The newest captured stderr bytes (at most [`STDERR_CAPTURE_BYTES`]), for diagnostics.
    pub fn stderr_tail(&self) -> Vec<u8> {
        let ring = self
            .shared
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ring.bytes.iter().copied().collect()
    }

    /// How many stderr bytes were dropped to keep the capture bounded.
    pub fn stderr_dropped(&self) -> u64 {
        let ring = self
            .shared
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ring.dropped
    }

    /// Sends one line: a compact request or notification plus its final `\n`.
    ///
    /// The line is checked first (one newline, at the end; at most
    /// [`EgressLimits::CLIENT`]'s bound; a valid request or notification) and refused with
    /// [`TransportError::Line`] before any byte is written. Concurrent senders queue and each
    /// line is written whole.
    pub async fn send(&self, line: &[u8]) -> Result<(), TransportError> {
        check_line(line).map_err(TransportError::Line)?;
        self.write_line(line).await
    }

    /// Encodes and sends one request or notification (never a response).
    pub async fn send_message(&self, message: &Message) -> Result<(), TransportError> {
        if matches!(message, Message::Response(_)) {
            return Err(TransportError::Line(LineError::NotARequest(
                IngressError::UnexpectedResponse,
            )));
        }
        let line: EncodedLine = crate::codec::encode_line(message, &EgressLimits::CLIENT)
            .map_err(|e| TransportError::Line(LineError::Encode(e.to_string())))?;
        self.write_line(line.as_bytes()).await
    }

    /// Waits for the next inbound frame.
    ///
    /// Frames that arrived before the child died are still delivered; then the error that
    /// ended the transport is returned, to every waiter and every later call.
    ///
    /// # Errors
    /// The error that ended the transport; [`TransportError::Attached`] after
    /// [`StdioTransport::attach_sink`].
    pub async fn recv(&self) -> Result<Incoming, TransportError> {
        let mut closing = self.closing.subscribe();
        if *closing.borrow() {
            return Err(TransportError::Closed);
        }
        {
            let mut consumer = self.consumer.lock().unwrap_or_else(PoisonError::into_inner);
            match *consumer {
                Consumer::Sink => return Err(TransportError::Attached),
                Consumer::Queue => {}
                // Dropping the sender tells the reader no sink will come.
                Consumer::Undecided(_) => *consumer = Consumer::Queue,
            }
        }
        tokio::select! {
            next = async {
                let mut inbound = self.inbound.lock().await;
                inbound.recv().await
            } => match next {
                Some(incoming) => Ok(incoming),
                None => Err(self.terminal_error()),
            },
            _ = closing.wait_for(|closing| *closing) => Err(TransportError::Closed),
        }
    }

    /// Hands every inbound frame to `sink` from the stdout reader itself, instead of queueing
    /// it for [`StdioTransport::recv`] (one hand-off less per reply): first the frames read
    /// ahead into the queue, in order, then each new one as it is decoded. The sink's last
    /// call is the `Err` that ended the transport (see [`FrameSink`]); at
    /// [`StdioTransport::close`] it is [`TransportError::Closed`] at once, as `recv` would
    /// return.
    ///
    /// Returns `false`, and drops `sink`, when `recv` or an earlier `attach_sink` already
    /// decided where frames go, or the reader has already finished (then `recv` still
    /// delivers what it read and the verdict).
    pub fn attach_sink(&self, sink: FrameSink) -> bool {
        let mut consumer = self.consumer.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *consumer, Consumer::Queue) {
            Consumer::Undecided(attach) => {
                let attached = attach.send(sink).is_ok();
                if attached {
                    *consumer = Consumer::Sink;
                }
                attached
            }
            decided => {
                *consumer = decided;
                false
            }
        }
    }

    /// Shuts the child down: close stdin, wait [`ShutdownTimings::eof_grace`],
    /// SIGTERM the whole group, wait [`ShutdownTimings::term_grace`], SIGKILL the group, and
    /// wait for it to vanish. Waiters are released with [`TransportError::Closed`].
    ///
    /// The process group counts as gone when no live (non-zombie) member is left, so
    /// grandchildren that outlive the child are ended too. Calling it again returns the
    /// first report.
    pub async fn close(&self) -> CloseReport {
        let mut report = self.close_report.lock().await;
        if let Some(done) = *report {
            return done;
        }
        self.closing.send_replace(true);
        // Senders were released by `closing`; dropping the pipe is the EOF.
        self.stdin.lock().await.take();

        let mut escalation = Escalation::None;
        let mut ended = self.wait_group_end(self.timings.eof_grace).await;
        if !ended {
            escalation = Escalation::Terminated;
            let _ = kill_process_group(self.pgid, Signal::TERM);
            ended = self.wait_group_end(self.timings.term_grace).await;
        }
        if !ended {
            escalation = Escalation::Killed;
            let _ = kill_process_group(self.pgid, Signal::KILL);
            ended = self.wait_group_end(self.timings.kill_wait).await;
        }
        let status = self.exit.borrow().as_ref().and_then(|exit| exit.ok());
        let done = CloseReport {
            status,
            escalation,
            group_ended: ended,
        };
        *report = Some(done);
        done
    }

    /// Waits until the child is reaped and its group has no live member, or `budget` passes.
    async fn wait_group_end(&self, budget: Duration) -> bool {
        let deadline = Instant::now() + budget;
        let mut exit = self.exit.clone();
        let reaped = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some))
            .await
            .is_ok_and(|r| r.is_ok());
        if !reaped {
            return false;
        }
        loop {
            if !group_has_live_members(self.pgid) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(GROUP_POLL_INTERVAL).await;
        }
    }

    /// The error to report once the transport is dead, if it is.
    fn dead(&self) -> Option<TransportError> {
        if *self.closing.borrow() {
            return Some(TransportError::Closed);
        }
        if let Some(exit) = self.exit.borrow().as_ref() {
            return Some(exit_error(exit));
        }
        self.shared
            .terminal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The reader's verdict after the inbound queue closed.
    fn terminal_error(&self) -> TransportError {
        if *self.closing.borrow() {
            return TransportError::Closed;
        }
        let terminal = self
            .shared
            .terminal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        terminal
            .or_else(|| self.exit.borrow().as_ref().map(exit_error))
            .unwrap_or(TransportError::StdoutClosed)
    }

    /// Writes one already-checked line under the writer lock; any failure ends the writer.
    async fn write_line(&self, line: &[u8]) -> Result<(), TransportError> {
        if let Some(dead) = self.dead() {
            return Err(dead);
        }
        let mut closing = self.closing.subscribe();
        let mut exit = self.exit.clone();

        enum Outcome {
            Written,
            Failed(io::Error),
            Closing,
            Exited,
        }

        let mut stdin = tokio::select! {
            stdin = self.stdin.lock() => stdin,
            _ = closing.wait_for(|c| *c) => return Err(TransportError::Closed),
            _ = exit.wait_for(Option::is_some) => return Err(self.dead().unwrap_or(TransportError::Closed)),
        };
        let Some(pipe) = stdin.as_mut() else {
            // An earlier write failed; report the exit that usually follows, as it did.
            drop(stdin);
            return Err(match self.dead() {
                Some(dead) => dead,
                None => self.error_after_failure(io::ErrorKind::BrokenPipe).await,
            });
        };
        let outcome = tokio::select! {
            biased;
            written = async {
                pipe.write_all(line).await?;
                pipe.flush().await
            } => match written {
                Ok(()) => Outcome::Written,
                Err(e) => Outcome::Failed(e),
            },
            _ = closing.wait_for(|c| *c) => Outcome::Closing,
            _ = exit.wait_for(Option::is_some) => Outcome::Exited,
        };
        match outcome {
            Outcome::Written => Ok(()),
            Outcome::Closing => {
                *stdin = None;
                Err(TransportError::Closed)
            }
            Outcome::Exited => {
                // A partial line may be in the pipe: nothing more may follow it.
                *stdin = None;
                Err(self.dead().unwrap_or(TransportError::Closed))
            }
            Outcome::Failed(err) => {
                *stdin = None;
                drop(stdin);
                Err(self.error_after_failure(err.kind()).await)
            }
        }
    }

    /// After a failed write: the exit status if the child dies soon, else the I/O error.
    async fn error_after_failure(&self, kind: io::ErrorKind) -> TransportError {
        let mut exit = self.exit.clone();
        let error =
            match tokio::time::timeout(EXIT_STATUS_WAIT, exit.wait_for(Option::is_some)).await {
                Ok(Ok(exit)) => exit
                    .as_ref()
                    .map_or(TransportError::Io { kind }, exit_error),
                _ => TransportError::Io { kind },
            };
        error
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        let closed = self
            .close_report
            .try_lock()
            .map(|report| report.is_some_and(|r| r.group_ended))
            .unwrap_or(false);
        // No child outlives a dropped client; the reaper task still reaps the child. An empty
        // group is left alone: once it is gone its id may be reused by an unrelated process.
        if !closed && test_kill_process_group(self.pgid).is_ok() {
            let _ = kill_process_group(self.pgid, Signal::KILL);
        }
        for pump in &self.pumps {
            pump.abort();
        }
    }
}

/// Checks an outbound line without writing it.
fn check_line(line: &[u8]) -> Result<(), LineError> {
    let Some((&b'\n', body)) = line.split_last() else {
        return Err(LineError::MissingNewline);
    };
    let limit = EgressLimits::CLIENT.max_message_bytes;
    if body.len() > limit {
        return Err(LineError::TooLarge {
            limit,
            actual: body.len(),
        });
    }
    if memchr::memchr(b'\n', body).is_some() {
        return Err(LineError::EmbeddedNewline);
    }
    // What a conforming server accepts is exactly what a client may send.
    let server_view = IngressLimits {
        max_frame_bytes: limit,
        ..IngressLimits::SERVER
    };
    decode(body, &server_view)
        .map(|_| ())
        .map_err(|rejection| LineError::NotARequest(rejection.error))
}

/// Reads stdout into frames until it ends, then records why it ended.
async fn pump_stdout<R: AsyncRead + Unpin>(
    mut stdout: R,
    mut delivery: Delivery,
    mut exit: watch::Receiver<Option<ChildExit>>,
    mut closing: watch::Receiver<bool>,
    shared: Arc<Shared>,
) {
    let limits = IngressLimits::CLIENT;
    let mut framer = LineFramer::new(limits.max_frame_bytes);
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut drain_until: Option<Instant> = None;
    let mut attached: Option<FrameSink> = None;
    let ended: Option<io::ErrorKind> = loop {
        if let Some(sink) = attached.take() {
            delivery.switch(sink).await;
        }
        if delivery.open_sink() && *closing.borrow() {
            // close() began: the sink's waiters are released now, as `recv` would be.
            delivery.release(TransportError::Closed);
        }
        let read = match drain_until {
            None => tokio::select! {
                biased;
                // A sink attached while stdout is quiet takes the queued frames at once.
                sink = delivery.attached() => {
                    delivery.attach = None;
                    attached = sink;
                    continue;
                }
                read = stdout.read(&mut buf) => read,
                _ = exit.wait_for(Option::is_some) => {
                    drain_until = Some(Instant::now() + EXIT_DRAIN_WAIT);
                    continue;
                }
                _ = closing.wait_for(|c| *c), if delivery.open_sink() => continue,
            },
            Some(deadline) => {
                if Instant::now() >= deadline {
                    break None;
                }
                match tokio::time::timeout_at(deadline, stdout.read(&mut buf)).await {
                    Ok(read) => read,
                    Err(_) => break None,
                }
            }
        };
        let mut input = match read {
            Ok(0) => break None,
            Ok(n) => &buf[..n],
            Err(err) => break Some(err.kind()),
        };
        while !input.is_empty() {
            let (used, event) = framer.feed(input);
            input = &input[used..];
            if let Some(event) = event {
                if !delivery.frame(frame_to_incoming(event, &limits)).await {
                    return; // The transport is gone.
                }
            }
        }
    };
    if let Some(event) = framer.finish() {
        let _ = delivery.frame(frame_to_incoming(event, &limits)).await;
    }
    let status = match tokio::time::timeout(EXIT_STATUS_WAIT, exit.wait_for(Option::is_some)).await
    {
        Ok(Ok(exit)) => exit.as_ref().map(exit_error),
        _ => None,
    };
    let verdict = status.unwrap_or(match ended {
        Some(kind) => TransportError::Io { kind },
        None => TransportError::StdoutClosed,
    });
    *shared
        .terminal
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(verdict.clone());
    // A sink sent before this point still takes over (a later `attach_sink` finds the
    // reader gone and returns false, leaving the queue and the verdict to `recv`).
    if let Some(mut attach) = delivery.attach.take() {
        // Closed first, so no sink can slip in after the look and be dropped unseen.
        attach.close();
        if let Ok(sink) = attach.try_recv() {
            delivery.switch(sink).await;
        }
    }
    // A sink gets the verdict (`Closed` once close() began, as `recv` reports it); dropping
    // the queue closes it, and its waiters read the verdict from `terminal`.
    let closed = *closing.borrow();
    delivery.release(if closed {
        TransportError::Closed
    } else {
        verdict
    });
}

fn frame_to_incoming(event: LineEvent, limits: &IngressLimits) -> Incoming {
    match event {
        LineEvent::Line(line) => match decode(&line, limits) {
            Ok(message) => Incoming::Message(message),
            Err(rejection) => Incoming::Rejected(rejection),
        },
        LineEvent::Oversized => {
            Incoming::Rejected(Rejection::oversized_line(limits.max_frame_bytes))
        }
    }
}

/// Copies stderr into the bounded ring until it ends.
async fn pump_stderr<R: AsyncRead + Unpin>(mut stderr: R, shared: Arc<Shared>) {
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => shared
                .stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buf[..n]),
        }
    }
}

/// Whether any live (non-zombie) process is left in the group.
///
/// `kill(-pgid, 0)` also counts zombies, which linger when nothing reaps orphans (a container
/// whose init does not); on Linux a zombie-only group is found gone through `/proc`.
fn group_has_live_members(pgid: Pid) -> bool {
    if test_kill_process_group(pgid).is_err() {
        return false;
    }
    live_members_in_proc(pgid).unwrap_or(true)
}

/// Scans `/proc` for live members of the group; `None` when `/proc` is unreadable.
fn live_members_in_proc(pgid: Pid) -> Option<bool> {
    let want = pgid.as_raw_nonzero().get();
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // It just exited.
        };
        if let Some((state, pgrp)) = parse_stat(&stat) {
            if pgrp == want && !matches!(state, 'Z' | 'X' | 'x') {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// State and process group from a `/proc/<pid>/stat` line (`pid (comm) S ppid pgrp …`).
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    // comm may contain spaces and parentheses: the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    #[test]
    fn c5_stderr_ring_keeps_only_the_newest_bytes_at_and_past_the_bound() {
        let mut ring = StderrRing::default();
        ring.push(&vec![b'a'; STDERR_CAPTURE_BYTES]);
        assert_eq!(ring.bytes.len(), STDERR_CAPTURE_BYTES);
        assert_eq!(ring.dropped, 0);
        ring.push(b"b");
        assert_eq!(ring.bytes.len(), STDERR_CAPTURE_BYTES);
        assert_eq!(ring.dropped, 1);
        assert_eq!(ring.bytes.back(), Some(&b'b'));
        // One huge chunk: only its tail is kept.
        let mut big = vec![b'x'; STDERR_CAPTURE_BYTES * 3];
        big.push(b'z');
        ring.push(&big);
        assert_eq!(ring.bytes.len(), STDERR_CAPTURE_BYTES);
        assert_eq!(ring.bytes.back(), Some(&b'z'));
        assert_eq!(
            ring.dropped,
            1 + (STDERR_CAPTURE_BYTES as u64) + (2 * STDERR_CAPTURE_BYTES as u64) + 1
        );
    }

    #[test]
    fn parse_stat_reads_state_and_group_past_odd_command_names() {
        assert_eq!(
            parse_stat("42 (a (b) c) S 1 4242 4242 0 -1"),
            Some(('S', 4242))
        );
        assert_eq!(parse_stat("42 (zz) Z 1 7 7"), Some(('Z', 7)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn exit_status_is_carried_by_the_error() {
        let status = ExitStatus::from_raw(7 << 8);
        let err = exit_error(&Ok(status));
        assert_eq!(err.exit_status().and_then(|s| s.code()), Some(7));
        assert!(err.is_fatal());
        assert!(!TransportError::Line(LineError::MissingNewline).is_fatal());
    }
}
