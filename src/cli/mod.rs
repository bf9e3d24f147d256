//! The `strict-mcp` command: a bounded MCP client for revision 2026-07-28 and the
//! demo server it can spawn.
//!
//! Every client subcommand connects the same way (`--stdio`, `--url` or `--demo`), discovers
//! first, makes independent protocol calls, prints either a human view or lossless
//! records ([`output`]) and exits with the code of its outcome class ([`exit::Exit`]).
//! Answers are read through a recording transport ([`tap`]) so the lossless mode shows the
//! bytes the server sent.
#![forbid(unsafe_code)]

/// `println!` that never panics: a closed pipe (`strict-mcp … | head -1`) ends the output,
/// not the process.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `print!` that never panics (see `out!`).
macro_rules! out_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

pub mod args;
pub mod bench;
pub mod check;
pub mod demo;
pub mod exit;
pub mod input;
pub mod interactive;
pub mod output;
pub mod progress;
pub mod session;
pub mod tap;

use clap::{CommandFactory, Parser};

pub use args::Cli;
pub use exit::Exit;

/// Runs the command line `args` (the program name first) and returns the exit status.
#[must_use]
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap's own code: 0 for --help / --version, 2 for a usage error.
            return e.exit_code();
        }
    };
    if let args::Command::Completions { shell } = &cli.command {
        let mut script = Vec::new();
        clap_complete::generate(*shell, &mut Cli::command(), "strict-mcp", &mut script);
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(&script);
        return Exit::Success.code();
    }
    let runtime = match runtime_for(&cli.command).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Transport.code();
        }
    };
    let code = runtime.block_on(run(cli)).code();
    // Background tasks (a stuck reader) must not hold the process open.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

/// The runtime `command` runs on. The demo's stdio server gets a current-thread runtime, as
/// [`Server::run_stdio`](crate::server::Server::run_stdio) documents for a host whose handlers
/// do not block (the demo's never do): its requests are served on the stdin thread, so worker
/// threads would only be started before the first reply, never used (issue #23). Everything
/// else (the clients, the demo over HTTP) keeps two workers.
fn runtime_for(command: &args::Command) -> tokio::runtime::Builder {
    match command {
        args::Command::Demo(args::DemoCommand::Serve { http: None, .. }) => {
            tokio::runtime::Builder::new_current_thread()
        }
        _ => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        }
    }
}

/// Runs the process's own command line.
#[must_use]
pub fn main() -> i32 {
    main_with(std::env::args_os())
}

async fn run(cli: Cli) -> Exit {
    match cli.command {
        args::Command::Demo(args::DemoCommand::Serve {
            http,
            mode,
            page_size,
            app,
            cors_origins,
        }) => match demo::serve(demo::DemoOptions {
            http,
            mode,
            page_size,
            app,
            cors_origins,
        })
        .await
        {
            Ok(()) => Exit::Success,
            Err(e) => {
                eprintln!("error: {e}");
                match e {
                    demo::DemoError::NotLoopback(_) | demo::DemoError::Config(_) => Exit::Usage,
                    _ => Exit::Transport,
                }
            }
        },
        args::Command::Completions { .. } => Exit::Success,
        args::Command::Check(args) => session::check(&cli.global, &args).await,
        args::Command::Bench(args) => bench::run(&cli.global, &args).await,
        command => session::run(&cli.global, command).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::runtime::RuntimeFlavor;

    fn flavor(args: &[&str]) -> RuntimeFlavor {
        let cli = Cli::try_parse_from(args).expect("a valid command line");
        runtime_for(&cli.command)
            .enable_all()
            .build()
            .expect("a runtime")
            .handle()
            .runtime_flavor()
    }

    /// Issue #23 (time to the first stdio reply): the demo's stdio server starts no worker
    /// threads; the demo over HTTP and every client command keep the two workers.
    #[test]
    fn only_the_stdio_demo_server_runs_on_a_current_thread_runtime() {
        assert_eq!(
            flavor(&["strict-mcp", "demo", "serve"]),
            RuntimeFlavor::CurrentThread
        );
        assert_eq!(
            flavor(&["strict-mcp", "demo", "serve", "--mode", "compact"]),
            RuntimeFlavor::CurrentThread
        );
        assert_eq!(
            flavor(&["strict-mcp", "demo", "serve", "--http", "127.0.0.1:0"]),
            RuntimeFlavor::MultiThread
        );
        assert_eq!(
            flavor(&["strict-mcp", "--demo", "tools", "list"]),
            RuntimeFlavor::MultiThread
        );
    }
}
