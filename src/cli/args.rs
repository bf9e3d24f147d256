//! The command line (clap): server selection and output flags shared by every client
//! subcommand, then the subcommands.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cli::demo::DemoMode;

/// What `--help` adds after the options: the exit codes and the `--responses` format.
pub const AFTER_HELP: &str = "\
Server selection (one of):
  --stdio \"CMD ARGS\"   spawn CMD (split into words, no shell); --env K=V, --cwd DIR
  --url URL            Streamable HTTP endpoint; --header NAME:VALUE (auth headers);
                       --oauth --oauth-client-id ID authorizes through a loopback redirect
                       (the URL to open is printed on stderr; tokens are kept 0600 in
                       $XDG_CONFIG_HOME/strict-mcp/tokens.json, else ~/.config/...)
  --demo               spawn this binary's demo server (strict-mcp demo serve)

--json prints one JSON record per line, in arrival order, with every answer byte-exact:
  {\"kind\":\"result\"|\"page\"|\"error\"|\"input_required\"|\"tool_error\"|\"task\",\"method\":M,
   \"page\":N (list pages),\"result\":{...} | \"error\":{...}}

--responses FILE answers input requests (MRTR) without prompting:
  {\"rounds\": [ {\"KEY\": {\"action\":\"accept\",\"content\":{...}}}, ... ]}
  Round n is sent as inputResponses of the n-th retry, with the server's requestState
  byte-exact and a fresh request id; when the rounds run out the input request is printed
  and the command exits 6. Without it (or --interactive), no elicitation capability is
  declared. --interactive (stdin a terminal) asks instead: form elicitations field by field,
  URL elicitations as a consent question; a question left unanswered exits 6.

Exit codes:
  0    success
  1    complete result with isError (the tool reported its own failure)
  2    usage error (bad flags, arguments not a JSON object, duplicate keys)
  3    transport failure (server did not start, died, or no reply within --timeout)
  4    JSON-RPC/MCP error (including a server that does not offer 2026-07-28)
  5    invalid or unrecognised result
  6    input required (no --responses round left, or a terminal question unanswered)
  7    check found a rule that does not hold
  8    tasks: the task ended cancelled
  9    tasks: the task was still running when --for ran out
  130  interrupted (Ctrl-C): the call was cancelled and the server shut down";

/// `strict-mcp`: a strict, bounded MCP client for revision 2026-07-28, and a demo server.
#[derive(Debug, Parser)]
#[command(name = "strict-mcp", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// Options shared by every client subcommand.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Server selection and output options (accepted before or after the subcommand).
#[derive(Debug, Args)]
pub struct Global {
    /// Spawn this server command (split into words without a shell) and talk over stdio.
    #[arg(long, global = true, value_name = "CMD ARGS")]
    pub stdio: Option<String>,
    /// Environment variable for the --stdio/--demo child (repeatable).
    #[arg(long, global = true, value_name = "K=V")]
    pub env: Vec<String>,
    /// Working directory for the --stdio/--demo child.
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Talk Streamable HTTP to this endpoint URL.
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    /// Extra HTTP header for every POST, e.g. "Authorization: Bearer …" (repeatable; never
    /// printed).
    #[arg(long, global = true, value_name = "NAME:VALUE")]
    pub header: Vec<String>,
    /// Authorize the --url server with OAuth (authorization code + PKCE, loopback redirect;
    /// the URL to open is printed on stderr); tokens are kept in the user's config directory.
    #[arg(long, global = true)]
    pub oauth: bool,
    /// The client id registered with the authorization server (a public client), for --oauth.
    #[arg(long, global = true, value_name = "ID")]
    pub oauth_client_id: Option<String>,
    /// Spawn the built-in demo server (this binary, `demo serve`) over stdio.
    #[arg(long, global = true)]
    pub demo: bool,
    /// Lossless output: one JSON record per answer, in order, bytes as received.
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds each request may take (1 to 600).
    #[arg(long, global = true, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// Fetch only the first page of a list.
    #[arg(long, global = true)]
    pub single_page: bool,
    /// Print the snapshot digest of the listing (or discovery / read result).
    #[arg(long, global = true)]
    pub digest: bool,
    /// Ask the server for log messages of this request at this level (shown on stderr).
    #[arg(long, global = true, value_name = "LEVEL", value_parser = [
        "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"])]
    pub log_level: Option<String>,
    /// Ask for progress and show it on stderr.
    #[arg(long, global = true)]
    pub progress: bool,
    /// Answer input requests from this file (format below).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        conflicts_with = "interactive"
    )]
    pub responses: Option<PathBuf>,
    /// Answer elicitation requests on the terminal: form fields by schema type (Enter takes
    /// the default), URL mode shows the URL and asks consent (never opened for you). Only
    /// this mode declares the elicitation capability for both form and URL.
    #[arg(long, global = true)]
    pub interactive: bool,
}

/// Where tool or prompt arguments come from.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct ArgumentFlags {
    /// Arguments as a JSON object; `-` reads them from stdin.
    #[arg(long = "args", value_name = "JSON|-")]
    pub args: Option<String>,
    /// Arguments from a file holding a JSON object.
    #[arg(long = "args-file", value_name = "FILE")]
    pub args_file: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what server/discover returned: identity, versions, capabilities.
    Discover,
    /// List or call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// List resources and templates, or read one.
    #[command(subcommand)]
    Resources(ResourcesCommand),
    /// List prompts or get one.
    #[command(subcommand)]
    Prompts(PromptsCommand),
    /// Ask for completions of a prompt argument or a template variable.
    Complete(CompleteArgs),
    /// Open subscriptions/listen and print each change.
    Listen(ListenArgs),
    /// Audit a server's strictness: one hand-built request per rule, with evidence.
    Check(CheckArgs),
    /// Load-test one tool: closed-loop calls for a while, then req/s, latency percentiles
    /// and errors.
    Bench(BenchArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// The built-in demo server.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// The Tasks extension (io.modelcontextprotocol/tasks): call a tool the server may run
    /// as a task, then get, wait for, answer or cancel the task by its id. Every request of
    /// these declares the extension; nothing answers a task's input on its own.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Skills extension (io.modelcontextprotocol/skills): list skills, get one entry, or load
    /// one with its files verified.
    #[command(subcommand)]
    Skills(SkillsCommand),
}

/// `tools …`.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool, across pages.
    List,
    /// Call one tool by its exact name.
    Call {
        /// The tool's name (case-sensitive, never rewritten).
        name: String,
        /// The arguments.
        #[command(flatten)]
        arguments: ArgumentFlags,
    },
}

/// `resources …`.
#[derive(Debug, Subcommand)]
pub enum ResourcesCommand {
    /// Every resource, across pages.
    List,
    /// Every resource template, across pages.
    Templates,
    /// Read one resource.
    Read {
        /// The resource URI.
        uri: String,
    },
}

/// `prompts …`.
#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// Every prompt, across pages.
    List,
    /// Get one prompt.
    Get {
        /// The prompt's name.
        name: String,
        /// The arguments (an object of strings).
        #[command(flatten)]
        arguments: ArgumentFlags,
    },
}

/// `complete …`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["prompt", "template"])))]
pub struct CompleteArgs {
    /// Complete an argument of this prompt.
    #[arg(long, value_name = "NAME")]
    pub prompt: Option<String>,
    /// Complete a variable of this resource template.
    #[arg(long, value_name = "URI_TEMPLATE")]
    pub template: Option<String>,
    /// The argument or variable name.
    #[arg(long, value_name = "NAME")]
    pub argument: String,
    /// What has been typed so far.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub value: String,
    /// Already-chosen values of other arguments (repeatable).
    #[arg(long = "context", value_name = "K=V")]
    pub context: Vec<String>,
}

/// `check …`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Fail on SHOULD and policy rules too, not only on MUST rules.
    #[arg(long)]
    pub strict: bool,
    /// Allow a --url whose host is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// A tool that answers its first call with input_required: the MRTR state-integrity
    /// rule calls it once and retries with a tampered requestState (called for real: name
    /// one that is safe to call). Without it, the rule tries at most 3 listed tools
    /// annotated readOnlyHint: true, in list order, with arguments filled from their input
    /// schema (default, const, first enum value, else a least value of the type), and uses
    /// the first that asks for input; every input request is declined.
    #[arg(long, value_name = "NAME")]
    pub mrtr_tool: Option<String>,
    /// The arguments of --mrtr-tool (a JSON object).
    #[arg(
        long,
        value_name = "JSON",
        requires = "mrtr_tool",
        default_value = "{}"
    )]
    pub mrtr_args: String,
}

/// `bench …`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The tool to call.
    #[arg(long)]
    pub tool: String,
    /// Its arguments (one JSON object, sent on every call).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Connections (each its own HTTP transport or stdio child), 1 to 64.
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// Calls in flight per connection, each started when the previous one ends, 1 to 256.
    #[arg(long, default_value_t = 1)]
    pub in_flight: usize,
    /// Measured seconds (up to 600).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of unmeasured calls first (up to 60).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub warmup: f64,
    /// Allow a --url whose host is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
}

/// `listen …`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Tool list changes.
    #[arg(long)]
    pub tools: bool,
    /// Prompt list changes.
    #[arg(long)]
    pub prompts: bool,
    /// Resource list changes.
    #[arg(long)]
    pub resources: bool,
    /// Updates of this resource (repeatable).
    #[arg(long = "uri", value_name = "URI")]
    pub uris: Vec<String>,
    /// Stop after this many changes.
    #[arg(long, value_name = "N")]
    pub max_changes: Option<u64>,
    /// Stop after this many seconds (at most 600).
    #[arg(long = "for", value_name = "SECS")]
    pub duration: Option<u64>,
}

/// `demo …`.
#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Serve the demo over stdio, or over HTTP on a loopback address.
    Serve {
        /// Serve Streamable HTTP on this loopback address (port 0 picks one; the URL is
        /// printed as {"listening": URL}).
        #[arg(long, value_name = "127.0.0.1:PORT")]
        http: Option<SocketAddr>,
        /// How tools are published (default direct; compact with --app).
        #[arg(long, value_enum)]
        mode: Option<DemoMode>,
        /// Entries per list page (to see pagination with a small value).
        #[arg(long, value_name = "N", default_value_t = crate::cli::demo::DEFAULT_PAGE_SIZE)]
        page_size: usize,
        /// Serve the demo MCP Apps shell (compact mode): a small app that shows tool results.
        #[arg(long)]
        app: bool,
        /// Answer this browser origin with CORS over --http (repeatable; loopback origins only).
        #[arg(long = "cors-origin", value_name = "ORIGIN")]
        cors_origins: Vec<String>,
    },
}

/// `tasks …`: every request declares the Tasks extension. Exit codes as for `tools call`,
/// and for a wait: 0 completed, 1 completed with isError, 4 failed (the task's JSON-RPC
/// error), 6 input required (answer with `tasks update`), 8 cancelled, 9 still running when
/// --for ran out (wait again by its id).
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Call a tool declaring the extension: prints the task when the server makes the call
    /// one (resultType "task"), else the result as `tools call` does.
    Call {
        /// The tool's name (case-sensitive, never rewritten).
        name: String,
        /// The arguments.
        #[command(flatten)]
        arguments: ArgumentFlags,
        /// Then wait for the task as `tasks wait` does.
        #[arg(long)]
        wait: bool,
        /// With --wait: the longest wait, in seconds (1 to 3600).
        #[arg(long = "for", value_name = "SECS", default_value_t = 60)]
        duration: u64,
    },
    /// tasks/get once: the task's current state, its result inlined once completed (exit 0
    /// whatever the state).
    Get {
        /// The task id.
        task_id: String,
    },
    /// Poll tasks/get until the task ends or asks for input: every pollIntervalMs the server
    /// gives (kept within 50 ms to 10 s), else backing off from 250 ms to 10 s.
    Wait {
        /// The task id.
        task_id: String,
        /// The longest wait, in seconds (1 to 3600).
        #[arg(long = "for", value_name = "SECS", default_value_t = 60)]
        duration: u64,
    },
    /// tasks/update: answer outstanding input requests of the task (read first with
    /// tasks/get): a JSON object keyed like its inputRequests, a subset allowed.
    Update {
        /// The task id.
        task_id: String,
        /// The answers, e.g. '{"confirm":{"action":"accept","content":{"ok":true}}}'; `-`
        /// reads them from stdin.
        #[arg(long, value_name = "JSON|-")]
        input: String,
    },
    /// tasks/cancel: ask the server to cancel the task (cooperative: `tasks get` shows how
    /// it ended).
    Cancel {
        /// The task id.
        task_id: String,
    },
}

/// `skills …` (only against a server that declares the Skills extension; exit 5 otherwise).
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every listed skill, across pages (no file is read).
    List,
    /// One skill's entry by its SKILL.md URI (`skills/get`), listed or not.
    Get {
        /// The skill's SKILL.md URI.
        uri: String,
    },
    /// Get the entry, read and verify SKILL.md (size, digest, frontmatter) and print it;
    /// with FILE, also read and verify that file of the skill and print it instead.
    Load {
        /// The skill's SKILL.md URI.
        uri: String,
        /// A file of the skill: a URI from its entry, or a path relative to its directory.
        file: Option<String>,
    },
}
