//! One client run: connect (discover first), run the subcommand, print, shut down.
//! Ctrl-C and the deadline cancel the call and shut the child down gracefully.

mod skills;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::cli::args::{
    ArgumentFlags, CheckArgs, Command, CompleteArgs, Global, ListenArgs, PromptsCommand,
    ResourcesCommand, TasksCommand, ToolsCommand,
};
use crate::cli::exit::Exit;
use crate::cli::input::{self, ArgumentSource, Arguments, InputError, Responses};
use crate::cli::interactive::{self, Terminal};
use crate::cli::output::{self, member, pretty, Records};
use crate::cli::progress::ProgressView;
use crate::cli::tap::{Record, Tap};
use crate::client::auth::{
    ClientCredentials, ClientIdentity, FileTokenStore, Grant, LoopbackUserStep, OAuthClient,
    OAuthConfig,
};
use crate::client::digest::{digest_text, SnapshotKind};
use crate::client::http::{Decorations, Decorator, HttpTransport};
use crate::client::stdio::{CommandSpec, StdioTransport, STDERR_CAPTURE_BYTES};
use crate::client::{
    CallOptions, Client, ClientError, ClientOptions, LogMessage, LogMessageSink, Round, RoundInput,
    RpcErrorKind, ToolOutcome, Transport, MAX_DEADLINE, MAX_DRIVEN_ROUNDS,
};
use crate::wire::listen::{Change, Filter};
use crate::wire::logging::LogLevel;
use crate::wire::result::Method;
use crate::wire::InputRequiredResult;

// `strict-mcp tasks …`: a child of this module, so it drives the same `Session`.
#[path = "tasks.rs"]
mod tasks;

/// How long an interrupted run waits for its `notifications/cancelled` to reach the wire
/// before shutting the transport down.
///
/// Why: the client sends the notice from a background task; a pipe write takes well under
/// this, and an interrupt must still end promptly when the pipe is stuck.
pub const CANCEL_FLUSH: Duration = Duration::from_millis(500);

/// The most `--responses` rounds one call uses: the client library's own cap on answered
/// rounds, so a server that keeps asking is cut off the same way everywhere.
pub const MAX_RESPONSE_ROUNDS: usize = MAX_DRIVEN_ROUNDS;

/// A failure before or outside a protocol call: printed on stderr, mapped to its class.
pub(crate) struct Failure {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl Failure {
    fn usage(e: impl std::fmt::Display) -> Failure {
        Failure {
            exit: Exit::Usage,
            message: e.to_string(),
        }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::usage(e)
    }
}

/// Everything a subcommand needs.
struct Session {
    client: Client,
    tap: Arc<Tap>,
    json: bool,
    records: Records,
    options: CallOptions,
    single_page: bool,
    digest: bool,
    interactive: bool,
    progress: Option<ProgressView>,
}

/// The transport the run opened, with what it needs at the end.
struct Opened {
    tap: Arc<Tap>,
    stdio: Option<Arc<StdioTransport>>,
    /// With --oauth: authorized before the first request.
    oauth: Option<Arc<OAuthClient>>,
}

/// The file --oauth keeps tokens in, below the user's config directory.
pub const OAUTH_TOKEN_FILE: &str = "strict-mcp/tokens.json";

/// `$XDG_CONFIG_HOME/strict-mcp/tokens.json`, else `$HOME/.config/strict-mcp/tokens.json`.
fn token_file() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".config"))
        })?;
    Some(base.join(OAUTH_TOKEN_FILE))
}

/// The OAuth client for --oauth: loopback redirect, the file token store, a public client.
fn oauth_client(global: &Global) -> Result<Option<Arc<OAuthClient>>, Failure> {
    if !global.oauth {
        if global.oauth_client_id.is_some() {
            return Err(Failure::usage("--oauth-client-id applies to --oauth only"));
        }
        return Ok(None);
    }
    let Some(url) = &global.url else {
        return Err(Failure::usage("--oauth applies to --url only"));
    };
    let client_id = global
        .oauth_client_id
        .as_deref()
        .ok_or_else(|| Failure::usage("--oauth needs --oauth-client-id ID"))?;
    let path = token_file().ok_or_else(|| {
        Failure::usage("--oauth: neither XDG_CONFIG_HOME nor HOME is set for the token file")
    })?;
    let store = FileTokenStore::open(path).map_err(|e| Failure::usage(format!("--oauth: {e}")))?;
    let step = LoopbackUserStep::bind().map_err(|e| Failure {
        exit: Exit::Transport,
        message: format!("--oauth: {e}"),
    })?;
    let config = OAuthConfig {
        identity: ClientIdentity::registered(ClientCredentials::public(client_id)),
        grant: Grant::AuthorizationCode {
            redirect_uri: step.redirect_uri(),
            user_step: Arc::new(step),
        },
        store: Arc::new(store),
    };
    // The SSRF-safe fetcher (HTTPS included), its dial policy fixed from --url.
    let fetcher = crate::client::auth::DialingFetcher::for_server(url)
        .map_err(|e| Failure::usage(format!("--oauth: {e}")))?;
    let oauth = OAuthClient::new(Arc::new(fetcher), url, config)
        .map_err(|e| Failure::usage(format!("--oauth: {e}")))?;
    Ok(Some(Arc::new(oauth)))
}

/// The raw body of the last `method` reply among `records` (the round just answered).
fn last_reply(records: &[Record], method: &str) -> Option<Box<RawValue>> {
    records
        .iter()
        .rev()
        .find(|r| r.method == method)
        .and_then(|r| r.body.as_ref().ok().cloned())
}

/// Where `--log-level` messages go: one stderr line per message of the call that asked
/// (the client's per-request log hook).
fn log_sink() -> LogMessageSink {
    LogMessageSink(Arc::new(|m: LogMessage| {
        eprintln!(
            "[server {}{}] {}",
            m.level.as_str(),
            m.logger.map(|l| format!(" {l}")).unwrap_or_default(),
            m.data
        );
    }))
}

fn open(global: &Global) -> Result<Opened, Failure> {
    let oauth = oauth_client(global)?;
    let (inner, stdio) = transport_with(global, oauth.as_ref().map(|o| o.decorator()))?;
    Ok(Opened {
        tap: Arc::new(Tap::new(inner)),
        stdio,
        oauth,
    })
}

/// A selected transport, with its stdio child when there is one.
pub(crate) type Selected = (Arc<dyn Transport>, Option<Arc<StdioTransport>>);

/// The transport `global` selects (one fresh connection or child each call).
pub(crate) fn transport(global: &Global) -> Result<Selected, Failure> {
    if global.oauth || global.oauth_client_id.is_some() {
        return Err(Failure::usage(
            "--oauth applies to the client subcommands only",
        ));
    }
    transport_with(global, None)
}

/// [`transport`], with `bearer` (the --oauth decorator) run after the --header ones.
fn transport_with(global: &Global, bearer: Option<Decorator>) -> Result<Selected, Failure> {
    let chosen = [global.stdio.is_some(), global.url.is_some(), global.demo]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        return Err(Failure::usage(
            "choose exactly one server: --stdio \"CMD ARGS\", --url URL or --demo",
        ));
    }
    if !global.header.is_empty() && global.url.is_none() {
        return Err(Failure::usage("--header applies to --url only"));
    }
    if let Some(url) = &global.url {
        let mut headers = Vec::new();
        for h in &global.header {
            headers.push(input::split_pair("--header", "NAME:VALUE", ':', h)?);
        }
        // Checked once here so a bad header is a usage error, not a failed request.
        let mut probe = Decorations::default();
        for (name, value) in &headers {
            probe
                .insert(name, value)
                .map_err(|e| Failure::usage(format!("--header {name}: {e}")))?;
        }
        let headers = Arc::new(headers);
        // Auth headers only through the decorator (D46, O104).
        let decorator: Decorator = Arc::new(move |method, out: &mut Decorations| {
            for (name, value) in headers.iter() {
                out.insert(name, value)?;
            }
            if let Some(bearer) = &bearer {
                bearer(method, out)?;
            }
            Ok(())
        });
        let http = HttpTransport::new(url, Some(decorator))
            .map_err(|e| Failure::usage(format!("--url: {e}")))?;
        return Ok((Arc::new(http), None));
    }
    let mut spec = if let Some(line) = &global.stdio {
        let words = input::split_words(line)?;
        let mut spec = CommandSpec::new(&words[0]);
        for w in &words[1..] {
            spec = spec.arg(w);
        }
        spec
    } else {
        let exe = std::env::current_exe().map_err(|e| Failure {
            exit: Exit::Transport,
            message: format!("cannot find this program to run the demo: {e}"),
        })?;
        CommandSpec::new(exe).arg("demo").arg("serve")
    };
    for pair in &global.env {
        let (k, v) = input::split_pair("--env", "K=V", '=', pair)?;
        spec = spec.env(k, v);
    }
    if let Some(dir) = &global.cwd {
        spec = spec.current_dir(dir);
    }
    let stdio = Arc::new(StdioTransport::spawn(&spec).map_err(|e| Failure {
        exit: Exit::Transport,
        message: format!("cannot start the server: {e}"),
    })?);
    let inner: Arc<dyn Transport> = Arc::clone(&stdio) as Arc<dyn Transport>;
    Ok((inner, Some(stdio)))
}

/// The capabilities a run declares: only what its mode can honour. `--interactive`
/// answers form and URL elicitations on the terminal; a `--responses` file answers forms
/// only (a file cannot show a URL and ask consent); otherwise nothing.
#[must_use]
pub fn declared_capabilities(interactive: bool, responses: bool) -> Option<Value> {
    if interactive {
        Some(json!({"elicitation": {"form": {}, "url": {}}}))
    } else if responses {
        Some(json!({"elicitation": {"form": {}}}))
    } else {
        None
    }
}

fn call_options(
    global: &Global,
    responses: Option<&Responses>,
) -> Result<(CallOptions, Option<ProgressView>), Failure> {
    let mut options = CallOptions {
        capabilities: declared_capabilities(global.interactive, responses.is_some()),
        ..CallOptions::default()
    };
    if let Some(level) = &global.log_level {
        let level = LogLevel::parse(level).ok_or_else(|| Failure::usage("--log-level"))?;
        options = options.logs(level, log_sink());
    }
    let mut view = None;
    if global.progress {
        let (shown, sink) = ProgressView::new(std::io::stderr().is_terminal());
        options.on_progress = Some(sink);
        view = Some(shown);
    }
    Ok((options, view))
}

/// Runs one client subcommand end to end and returns its exit class.
pub async fn run(global: &Global, command: Command) -> Exit {
    if global.timeout == 0 || Duration::from_secs(global.timeout) > MAX_DEADLINE {
        eprintln!(
            "error: --timeout must be 1 to {} seconds",
            MAX_DEADLINE.as_secs()
        );
        return Exit::Usage;
    }
    let prepared = (|| -> Result<_, Failure> {
        let responses = global
            .responses
            .as_deref()
            .map(input::read_responses)
            .transpose()?;
        if let Some(r) = &responses {
            if r.rounds.len() > MAX_RESPONSE_ROUNDS {
                return Err(Failure::usage(format!(
                    "--responses: at most {MAX_RESPONSE_ROUNDS} rounds"
                )));
            }
        }
        let arguments = match &command {
            Command::Tools(ToolsCommand::Call { arguments, .. })
            | Command::Prompts(PromptsCommand::Get { arguments, .. })
            | Command::Tasks(TasksCommand::Call { arguments, .. }) => read_flags(arguments)?,
            _ => None,
        };
        if global.interactive && !std::io::stdin().is_terminal() {
            return Err(Failure::usage(
                "--interactive asks on the terminal: stdin must be one (use --responses FILE \
                 otherwise)",
            ));
        }
        let (options, view) = call_options(global, responses.as_ref())?;
        Ok((responses.unwrap_or_default(), arguments, options, view))
    })();
    let (responses, arguments, options, progress) = match prepared {
        Ok(p) => p,
        Err(f) => {
            eprintln!("error: {}", f.message);
            return f.exit;
        }
    };
    let opened = match open(global) {
        Ok(o) => o,
        Err(f) => {
            eprintln!("error: {}", f.message);
            return f.exit;
        }
    };
    let tap = Arc::clone(&opened.tap);
    let client_options = ClientOptions {
        default_deadline: Duration::from_secs(global.timeout),
        ..ClientOptions::default()
    };
    let mut session: Option<Session> = None;
    let work = async {
        let transport: Arc<dyn Transport> = Arc::clone(&tap) as Arc<dyn Transport>;
        // With --oauth, a refused discovery (the transport's 401/403 with its challenge) is
        // answered by the stored token, a refresh or a new authorization through the loopback
        // redirect, and discovery is sent again, within the OAuth client's attempt bound.
        let mut connected = Client::connect(Arc::clone(&transport), client_options.clone()).await;
        if let Some(oauth) = &opened.oauth {
            while let Err(crate::client::ConnectError::Discover(inner)) = &connected {
                match oauth.recover(inner).await {
                    Ok(true) => {
                        // The refused attempt is not part of the run's record.
                        let _ = tap.drain();
                        connected =
                            Client::connect(Arc::clone(&transport), client_options.clone()).await;
                    }
                    Ok(false) => break,
                    Err(e) => {
                        eprintln!("error: authorization failed: {e}");
                        return Exit::Transport;
                    }
                }
            }
            if connected.is_ok() {
                oauth.succeeded().await;
            }
        }
        let client = match connected {
            Ok(c) => c,
            Err(e) => {
                let (records, _) = tap.drain();
                if global.json {
                    Records::default().emit(&records);
                }
                eprintln!("error: {e}");
                return Exit::of_connect(&e);
            }
        };
        let s = session.insert(Session {
            client,
            tap: Arc::clone(&tap),
            json: global.json,
            records: Records::default(),
            options,
            single_page: global.single_page,
            digest: global.digest,
            interactive: global.interactive,
            progress,
        });
        let exit = s.command(command, arguments, &responses).await;
        s.end_progress();
        exit
    };
    let interrupted = tokio::select! {
        exit = work => Some(exit),
        _ = tokio::signal::ctrl_c() => None,
    };
    let exit = match interrupted {
        Some(exit) => exit,
        None => {
            // The call's future is gone: the client announces the cancellation (O102).
            let _ = tokio::time::timeout(CANCEL_FLUSH, tap.cancel_sent()).await;
            eprintln!(
                "interrupted: {} cancellation(s) sent; shutting the server down",
                tap.cancellations()
            );
            Exit::Interrupted
        }
    };
    if let Some(s) = &session {
        s.client.close().await;
    } else {
        tap.close().await;
    }
    if let Some(stdio) = &opened.stdio {
        show_stderr(stdio);
    }
    exit
}

/// the child's stderr is diagnostics, shown (bounded) and never a failure by itself.
fn show_stderr(stdio: &StdioTransport) {
    let tail = stdio.stderr_tail();
    if tail.is_empty() {
        return;
    }
    let dropped = stdio.stderr_dropped();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "server stderr (last {} bytes{}):",
        tail.len().min(STDERR_CAPTURE_BYTES),
        if dropped > 0 {
            format!(", {dropped} earlier bytes dropped")
        } else {
            String::new()
        }
    );
    for line in String::from_utf8_lossy(&tail).lines() {
        let _ = writeln!(err, "  | {line}");
    }
}

/// Asks the terminal (stdin, prompts on stderr) for one round's answers, off the runtime's
/// threads: reading a line blocks.
async fn ask_terminal(asked: InputRequiredResult) -> Result<Map<String, Value>, String> {
    let task = tokio::task::spawn_blocking(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut output = std::io::stderr();
        interactive::answer(&asked, &mut Terminal::new(&mut input, &mut output))
    });
    match task.await {
        Ok(Ok(answers)) => Ok(answers),
        Ok(Err(e)) => Err(format!("error: {e}")),
        Err(e) => Err(format!("error: the terminal question failed: {e}")),
    }
}

fn read_flags(flags: &ArgumentFlags) -> Result<Option<Arguments>, InputError> {
    let source = match (&flags.args, &flags.args_file) {
        (Some(text), _) if text == "-" => ArgumentSource::Stdin,
        (Some(text), _) => ArgumentSource::Inline(text.clone()),
        (None, Some(path)) => ArgumentSource::File(path.clone()),
        (None, None) => return Ok(None),
    };
    input::read_arguments(&source).map(Some)
}

fn parse(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Session {
    /// Prints what arrived since the last flush (JSON mode) and returns it.
    fn flush(&mut self) -> Vec<Record> {
        let (records, dropped) = self.tap.drain();
        if dropped > 0 {
            eprintln!("warning: {dropped} answers were not kept (record bound)");
        }
        if self.json {
            self.records.emit(&records);
        }
        records
    }

    /// Ends the `--progress` bar (if any) before anything else is printed.
    fn end_progress(&self) {
        if let Some(view) = &self.progress {
            view.finish();
        }
    }

    /// Reports a client error: its record is already printed in JSON mode.
    fn fail(&mut self, error: &ClientError) -> Exit {
        self.end_progress();
        self.flush();
        eprintln!("error: {error}");
        if let ClientError::Rpc(rpc) = error {
            if let Some(data) = &rpc.data {
                eprintln!("  data: {data}");
            }
            if rpc.kind == RpcErrorKind::MissingRequiredClientCapability && !self.interactive {
                eprintln!(
                    "  hint: this run declared no elicitation (non-interactive); answer input \
                     requests with --responses FILE or --interactive (see --help)"
                );
            }
        }
        Exit::of(error)
    }

    async fn command(
        &mut self,
        command: Command,
        arguments: Option<Arguments>,
        responses: &Responses,
    ) -> Exit {
        match command {
            Command::Discover => self.discover(),
            Command::Tools(ToolsCommand::List) => self.list(Method::ToolsList).await,
            Command::Tools(ToolsCommand::Call { name, .. }) => {
                self.call(&name, arguments, responses).await
            }
            Command::Resources(ResourcesCommand::List) => self.list(Method::ResourcesList).await,
            Command::Resources(ResourcesCommand::Templates) => {
                self.list(Method::ResourcesTemplatesList).await
            }
            Command::Resources(ResourcesCommand::Read { uri }) => self.read(&uri, responses).await,
            Command::Prompts(PromptsCommand::List) => self.list(Method::PromptsList).await,
            Command::Prompts(PromptsCommand::Get { name, .. }) => {
                self.prompt(&name, arguments, responses).await
            }
            Command::Complete(args) => self.complete(&args).await,
            Command::Listen(args) => self.listen(&args).await,
            Command::Tasks(command) => self.tasks(command, arguments, responses).await,
            Command::Skills(skills) => self.skills(skills).await,
            Command::Completions { .. }
            | Command::Demo(_)
            | Command::Check(_)
            | Command::Bench(_) => Exit::Usage,
        }
    }

    fn print_digest(&self, kind: SnapshotKind, method: &str, text: &str) {
        if !self.digest {
            return;
        }
        match digest_text(kind, text) {
            Ok(d) if self.json => Records::emit_value(
                &json!({"kind": "digest", "method": method, "digest": d.to_string()}),
            ),
            Ok(d) => out!("digest: {d}"),
            Err(e) => eprintln!("warning: no digest: {e}"),
        }
    }

    fn discover(&mut self) -> Exit {
        let records = self.flush();
        let raw = records
            .iter()
            .find(|r| r.method == "server/discover")
            .and_then(|r| r.body.as_ref().ok());
        if let Some(raw) = raw {
            if !self.json {
                let d = self.client.discovery();
                if let Some(info) = &d.server_info {
                    out!("server: {} {}", info.name, info.version);
                }
                out!("versions: {}", d.result.supported_versions.join(", "));
                if let Some(caps) = member(raw, "capabilities") {
                    out!("capabilities: {}", pretty(caps.get()));
                }
                if let Some(text) = &d.result.instructions {
                    out!("instructions: {text}");
                }
            }
            self.print_digest(SnapshotKind::Discovery, "server/discover", raw.get());
        }
        Exit::Success
    }

    async fn list(&mut self, method: Method) -> Exit {
        self.flush_quietly();
        let mut more = None;
        let outcome = if self.single_page {
            self.client
                .list_page(method, None, &self.options)
                .await
                .map(|page| more = page.next_cursor)
        } else {
            match method {
                Method::ToolsList => self.client.list_tools(&self.options).await.map(|_| ()),
                Method::ResourcesList => {
                    self.client.list_resources(&self.options).await.map(|_| ())
                }
                Method::ResourcesTemplatesList => self
                    .client
                    .list_resource_templates(&self.options)
                    .await
                    .map(|_| ()),
                _ => self.client.list_prompts(&self.options).await.map(|_| ()),
            }
        };
        if let Err(e) = outcome {
            return self.fail(&e);
        }
        let records = self.flush();
        let pages: Vec<&RawValue> = records
            .iter()
            .filter(|r| r.method == method.name())
            .filter_map(|r| r.body.as_ref().ok().map(|b| &**b))
            .collect();
        if !self.json {
            out_raw!("{}", human_list(method, &pages));
            if let Some(next) = &more {
                out!("(more: nextCursor {})", Value::String(next.clone()));
            }
        }
        let kind = match method {
            Method::ToolsList => SnapshotKind::Tools,
            Method::ResourcesList => SnapshotKind::Resources,
            Method::ResourcesTemplatesList => SnapshotKind::ResourceTemplates,
            _ => SnapshotKind::Prompts,
        };
        let joined = format!(
            "[{}]",
            pages.iter().map(|p| p.get()).collect::<Vec<_>>().join(",")
        );
        self.print_digest(kind, method.name(), &joined);
        Exit::Success
    }

    /// Drops the discovery record from the human view; JSON mode prints it.
    fn flush_quietly(&mut self) {
        self.flush();
    }

    async fn call(
        &mut self,
        name: &str,
        arguments: Option<Arguments>,
        responses: &Responses,
    ) -> Exit {
        // O103: the definition first (Mcp-Name / Mcp-Param-* over HTTP, output schema).
        self.flush();
        if let Err(e) = self.client.list_tools(&self.options).await {
            return self.fail(&e);
        }
        self.flush();
        // O93: the exact bytes go on the wire, every round (O98: same arguments).
        let raw = arguments.map(|a| a.raw);
        let send = async |client: &Client, round, options: &CallOptions| {
            let (outcome, raw) = client
                .call_tool_exact(name, raw.as_deref(), round, options)
                .await?;
            Ok((
                match outcome {
                    ToolOutcome::InputRequired(i) => Round::InputRequired(Box::new(i)),
                    done => Round::Complete(done),
                },
                Some(raw),
            ))
        };
        let (done, last) = match self.rounds("tools/call", responses, send).await {
            Ok(done) => done,
            Err(exit) => return exit,
        };
        if !self.json {
            if let Some(raw) = &last {
                print_tool_result(raw);
            }
        }
        if matches!(done, ToolOutcome::Failed(_)) {
            eprintln!("the tool reported an error (isError: true)");
            return Exit::ToolError;
        }
        Exit::Success
    }

    /// Drives a request that may answer `input_required`: each such answer is met
    /// with the next `--responses` round, or with answers asked on the terminal
    /// (`--interactive`), until a complete result, which comes back with its raw body; a
    /// failure or an unanswered round comes back as its exit. `send` returns the raw result
    /// when the client API gives it, else the recorded reply is used.
    async fn rounds<T>(
        &mut self,
        method: &str,
        responses: &Responses,
        mut send: impl AsyncFnMut(
            &Client,
            RoundInput,
            &CallOptions,
        ) -> Result<(Round<T>, Option<Box<RawValue>>), ClientError>,
    ) -> Result<(T, Option<Box<RawValue>>), Exit> {
        self.flush();
        let mut round = RoundInput::first();
        let mut used = 0;
        loop {
            let outcome = send(&self.client, round, &self.options).await;
            self.end_progress();
            let recorded = last_reply(&self.flush(), method);
            match outcome {
                Ok((Round::Complete(done), raw)) => return Ok((done, raw.or(recorded))),
                Ok((Round::InputRequired(asked), raw)) => {
                    let last = raw.or(recorded);
                    if let Some(answers) = responses.rounds.get(used) {
                        used += 1;
                        round = RoundInput::answer(&asked.result, answers.clone());
                    } else if self.interactive && used < MAX_RESPONSE_ROUNDS {
                        let answers = match ask_terminal(asked.result.clone()).await {
                            Ok(a) => a,
                            Err(why) => {
                                eprintln!("{why}");
                                return Err(self.input_required(last.as_deref(), used));
                            }
                        };
                        used += 1;
                        round = match RoundInput::try_answer(&asked.result, answers) {
                            Ok(r) => r,
                            Err(e) => return Err(self.fail(&e)),
                        };
                    } else {
                        return Err(self.input_required(last.as_deref(), used));
                    }
                }
                Err(e) => return Err(self.fail(&e)),
            }
        }
    }

    fn input_required(&self, raw: Option<&RawValue>, used: usize) -> Exit {
        if !self.json {
            if let Some(raw) = raw {
                out!("{}", pretty(raw.get()));
            }
        }
        if self.interactive {
            eprintln!(
                "input required: the server asks for more input after {used} answered round(s)"
            );
        } else {
            eprintln!(
                "input required: the server asks for more input after {used} answered round(s); \
                 supply the answers with --responses FILE or --interactive (see --help)"
            );
        }
        Exit::InputRequired
    }

    async fn read(&mut self, uri: &str, responses: &Responses) -> Exit {
        let send = async |client: &Client, round, options: &CallOptions| {
            Ok((client.read_resource_round(uri, round, options).await?, None))
        };
        match self.rounds("resources/read", responses, send).await {
            Ok((_, last)) => {
                if let Some(raw) = &last {
                    if !self.json {
                        print_contents(raw);
                    }
                    self.print_digest(SnapshotKind::ResourceRead, "resources/read", raw.get());
                }
                Exit::Success
            }
            Err(exit) => exit,
        }
    }

    async fn prompt(
        &mut self,
        name: &str,
        arguments: Option<Arguments>,
        responses: &Responses,
    ) -> Exit {
        let map = arguments.map(|a| a.map);
        let send = async |client: &Client, round, options: &CallOptions| {
            Ok((
                client
                    .get_prompt_round(name, map.clone(), round, options)
                    .await?,
                None,
            ))
        };
        match self.rounds("prompts/get", responses, send).await {
            Ok((_, last)) => {
                if !self.json {
                    if let Some(raw) = &last {
                        print_prompt(raw);
                    }
                }
                Exit::Success
            }
            Err(exit) => exit,
        }
    }

    async fn complete(&mut self, args: &CompleteArgs) -> Exit {
        self.flush();
        let reference = match (&args.prompt, &args.template) {
            (Some(name), _) => json!({"type": "ref/prompt", "name": name}),
            (None, Some(uri)) => json!({"type": "ref/resource", "uri": uri}),
            (None, None) => {
                eprintln!("error: --prompt or --template is required");
                return Exit::Usage;
            }
        };
        let mut params = Map::new();
        params.insert("ref".into(), reference);
        params.insert(
            "argument".into(),
            json!({"name": args.argument, "value": args.value}),
        );
        if !args.context.is_empty() {
            let mut context = Map::new();
            for pair in &args.context {
                match input::split_pair("--context", "K=V", '=', pair) {
                    Ok((k, v)) => {
                        context.insert(k, Value::String(v));
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return Exit::Usage;
                    }
                }
            }
            params.insert("context".into(), json!({"arguments": context}));
        }
        match self.client.complete_argument(params, &self.options).await {
            Ok(_) => {
                let records = self.flush();
                if !self.json {
                    if let Some(raw) = records.iter().rev().find_map(|r| r.body.as_ref().ok()) {
                        let value = parse(raw);
                        let completion = value.get("completion").cloned().unwrap_or_default();
                        for v in completion
                            .get("values")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            out!("{}", v.as_str().unwrap_or_default());
                        }
                        if completion.get("hasMore") == Some(&Value::Bool(true)) {
                            out!("(more values exist)");
                        }
                    }
                }
                Exit::Success
            }
            Err(e) => self.fail(&e),
        }
    }

    async fn listen(&mut self, args: &ListenArgs) -> Exit {
        self.flush();
        let filter = Filter {
            tools_list_changed: args.tools,
            prompts_list_changed: args.prompts,
            resources_list_changed: args.resources,
            resource_subscriptions: (!args.uris.is_empty())
                .then(|| args.uris.iter().cloned().collect()),
        };
        let limit = match args.duration {
            Some(s) if s == 0 || Duration::from_secs(s) > MAX_DEADLINE => {
                eprintln!(
                    "error: --for must be 1 to {} seconds",
                    MAX_DEADLINE.as_secs()
                );
                return Exit::Usage;
            }
            Some(s) => Some(tokio::time::Instant::now() + Duration::from_secs(s)),
            None => None,
        };
        let mut stream = match self.client.listen(filter, &self.options).await {
            Ok(s) => s,
            Err(e) => {
                self.flush();
                eprintln!("error: {e}");
                return match e {
                    crate::client::ListenError::Rpc(_) => Exit::Protocol,
                    crate::client::ListenError::Request(e) => Exit::of(&e),
                    _ => Exit::Transport,
                };
            }
        };
        let effective = stream.effective_filter().clone();
        if self.json {
            Records::emit_value(&json!({
                "kind": "listening",
                "method": "subscriptions/listen",
                "effective": serde_json::from_str::<Value>(&effective.to_json()).unwrap_or_default(),
            }));
        } else {
            eprintln!("listening (effective filter {})", effective.to_json());
        }
        let mut seen = 0u64;
        loop {
            if args.max_changes.is_some_and(|m| seen >= m) {
                return Exit::Success;
            }
            let next = match limit {
                Some(until) => match tokio::time::timeout_at(until, stream.next()).await {
                    Ok(n) => n,
                    Err(_) => return Exit::Success,
                },
                None => stream.next().await,
            };
            match next {
                Ok(Some(change)) => {
                    seen += 1;
                    let (name, uri) = match &change {
                        Change::ToolsListChanged => ("tools_list_changed", None),
                        Change::PromptsListChanged => ("prompts_list_changed", None),
                        Change::ResourcesListChanged => ("resources_list_changed", None),
                        Change::ResourceUpdated { uri } => ("resource_updated", Some(uri)),
                    };
                    if self.json {
                        Records::emit_value(&json!({"kind": "change", "change": name, "uri": uri}));
                    } else {
                        out!("{name}{}", uri.map(|u| format!(" {u}")).unwrap_or_default());
                    }
                }
                Ok(None) => {
                    self.flush();
                    return Exit::Success;
                }
                Err(e) => {
                    self.flush();
                    eprintln!("error: {e}");
                    return Exit::Transport;
                }
            }
        }
    }
}

/// Annotations are the server's claims, shown as hints, never trusted.
fn hints(annotations: Option<&Value>) -> String {
    let Some(a) = annotations.and_then(Value::as_object) else {
        return String::new();
    };
    let mut out = Vec::new();
    for (key, label) in [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open-world"),
    ] {
        match a.get(key) {
            Some(Value::Bool(true)) => out.push(label.to_owned()),
            Some(Value::Bool(false)) => out.push(format!("not {label}")),
            _ => {}
        }
    }
    out.join(", ")
}

fn human_list(method: Method, pages: &[&RawValue]) -> String {
    let key = match method {
        Method::ToolsList => "tools",
        Method::ResourcesList => "resources",
        Method::ResourcesTemplatesList => "resourceTemplates",
        _ => "prompts",
    };
    let entries: Vec<Value> = pages
        .iter()
        .flat_map(|p| {
            parse(p)
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let colour = output::colour();
    let describe = |e: &Value| output::short(&text_of(e, "description"), 60);
    match method {
        Method::ToolsList => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|t| vec![text_of(t, "name"), describe(t), hints(t.get("annotations"))])
                .collect();
            output::table(&["NAME", "DESCRIPTION", "HINTS (untrusted)"], &rows, colour)
        }
        Method::ResourcesList => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|r| {
                    vec![
                        text_of(r, "uri"),
                        text_of(r, "name"),
                        text_of(r, "mimeType"),
                    ]
                })
                .collect();
            output::table(&["URI", "NAME", "MIME TYPE"], &rows, colour)
        }
        Method::ResourcesTemplatesList => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|r| {
                    vec![
                        text_of(r, "uriTemplate"),
                        text_of(r, "name"),
                        text_of(r, "mimeType"),
                    ]
                })
                .collect();
            output::table(&["URI TEMPLATE", "NAME", "MIME TYPE"], &rows, colour)
        }
        _ => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|p| {
                    let args = p
                        .get("arguments")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let required = a.get("required") == Some(&Value::Bool(true));
                            format!("{}{}", text_of(a, "name"), if required { "*" } else { "" })
                        })
                        .collect::<Vec<_>>()
                        .join(" ");
                    vec![text_of(p, "name"), args, describe(p)]
                })
                .collect();
            output::table(
                &["NAME", "ARGUMENTS (* required)", "DESCRIPTION"],
                &rows,
                colour,
            )
        }
    }
}

/// `structuredContent` pretty (byte-exact numbers), else the content blocks. A strict-mcp
/// server's `{"value": …}` envelope is shown as its value; `--json` keeps the envelope.
fn print_tool_result(raw: &RawValue) {
    if let Some(structured) = member(raw, "structuredContent") {
        let shown = match serde_json::from_str::<std::collections::BTreeMap<String, Box<RawValue>>>(
            structured.get(),
        ) {
            Ok(mut m) if m.len() == 1 && m.contains_key("value") => m.remove("value"),
            _ => None,
        };
        out!("{}", pretty(shown.as_deref().unwrap_or(&structured).get()));
        return;
    }
    print_blocks(&parse(raw));
}

fn print_blocks(result: &Value) {
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out!("{}", block_text(block));
    }
}

/// One content block for people; binary data is summarised, never printed.
fn block_text(block: &Value) -> String {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => text_of(block, "text"),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind} {}, {} base64 characters]",
            text_of(block, "mimeType"),
            block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, str::len)
        ),
        _ => serde_json::to_string_pretty(block).unwrap_or_default(),
    }
}

fn print_contents(raw: &RawValue) {
    for c in parse(raw)
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(text) = c.get("text").and_then(Value::as_str) {
            out!("{text}");
        } else if let Some(blob) = c.get("blob").and_then(Value::as_str) {
            out!(
                "[blob {} {}, {} base64 characters]",
                text_of(c, "uri"),
                text_of(c, "mimeType"),
                blob.len()
            );
        }
    }
}

fn print_prompt(raw: &RawValue) {
    let value = parse(raw);
    if let Some(d) = value.get("description").and_then(Value::as_str) {
        out!("{d}");
    }
    for m in value
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = m.get("content").map(block_text).unwrap_or_default();
        out!("{}: {content}", text_of(m, "role"));
    }
}

/// `check`: audits the selected server (loopback only unless `--allow-remote`); exit 0 when
/// every MUST rule holds (every rule with `--strict`), else 7.
pub async fn check(global: &Global, args: &CheckArgs) -> Exit {
    use crate::cli::check::{self, CheckError, Target};
    if global.timeout == 0 || Duration::from_secs(global.timeout) > MAX_DEADLINE {
        eprintln!(
            "error: --timeout must be 1 to {} seconds",
            MAX_DEADLINE.as_secs()
        );
        return Exit::Usage;
    }
    let chosen = [global.stdio.is_some(), global.url.is_some(), global.demo]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        eprintln!("error: choose exactly one server: --stdio \"CMD ARGS\", --url URL or --demo");
        return Exit::Usage;
    }
    let target = (|| -> Result<Target, Failure> {
        if let Some(url) = &global.url {
            return check::http_target(url, args.allow_remote).map_err(Failure::usage);
        }
        let words = match &global.stdio {
            Some(line) => input::split_words(line)?,
            None => {
                let exe = std::env::current_exe().map_err(|e| Failure {
                    exit: Exit::Transport,
                    message: format!("cannot find this program to run the demo: {e}"),
                })?;
                vec![exe.display().to_string(), "demo".into(), "serve".into()]
            }
        };
        let mut env = Vec::new();
        for pair in &global.env {
            env.push(input::split_pair("--env", "K=V", '=', pair)?);
        }
        Ok(Target::Stdio {
            words,
            env,
            cwd: global.cwd.clone(),
        })
    })();
    let target = match target {
        Ok(t) => t,
        Err(f) => {
            eprintln!("error: {}", f.message);
            return f.exit;
        }
    };
    let mrtr = match &args.mrtr_tool {
        Some(name) => {
            match input::read_arguments(&ArgumentSource::Inline(args.mrtr_args.clone())) {
                Ok(a) => Some(check::MrtrTool {
                    name: name.clone(),
                    arguments: Value::Object(a.map),
                }),
                Err(e) => {
                    eprintln!("error: --mrtr-args: {e}");
                    return Exit::Usage;
                }
            }
        }
        None => None,
    };
    let deadline = Duration::from_secs(global.timeout);
    let verdicts = match check::run(&target, deadline, mrtr.as_ref()).await {
        Ok(v) => v,
        Err(e @ CheckError::Spawn(_)) => {
            eprintln!("error: {e}");
            return Exit::Transport;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::Usage;
        }
    };
    if global.json {
        for v in &verdicts {
            if let Ok(value) = serde_json::to_value(v) {
                let mut record = json!({"kind": "check"});
                if let (Some(r), Value::Object(m)) = (record.as_object_mut(), value) {
                    r.extend(m);
                }
                Records::emit_value(&record);
            }
        }
    } else {
        let rows: Vec<Vec<String>> = verdicts
            .iter()
            .map(|v| {
                vec![
                    v.rule.to_owned(),
                    format!("{:?}", v.class).to_uppercase(),
                    v.requirement.to_owned(),
                    if v.pass { "pass" } else { "FAIL" }.to_owned(),
                    format!("{} -> {}", v.request, check::evidence(&v.answer)),
                ]
            })
            .collect();
        out_raw!(
            "{}",
            output::table(
                &["RULE", "CLASS", "REQ", "VERDICT", "EVIDENCE"],
                &rows,
                output::colour()
            )
        );
    }
    if check::passed(&verdicts, args.strict) {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
