//! strict-mcp's client as the driver: `Client::connect` (which sends `server/discover` once)
//! over `HttpTransport` (`http`) or `StdioTransport` (`stdio`, the server as its child), then
//! every caller runs `Client::call("echo", ...)` on a clone of the one client and checks the
//! echoed text in the typed result. See `client_bench` for the command line and `RESULT` line.

use std::sync::Arc;

use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::stdio::{CommandSpec, StdioTransport};
use strict_mcp::client::{CallOptions, Client, ClientOptions, Transport};
use strict_mcp::wire::ContentBlock;
use strict_mcp_load::client_bench::{self, Args, Target, Window};
use strict_mcp_load::ECHO_TEXT;

fn main() {
    let args = client_bench::args_or_exit("strict");
    if args.pooled {
        eprintln!("strict_client: --pool is rmcp_client's only");
        std::process::exit(2);
    }
    let rt = client_bench::runtime().expect("tokio runtime");
    match rt.block_on(run(&args)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("strict_client {}: {e}", args.label);
            std::process::exit(1);
        }
    }
}

async fn run(args: &Args) -> Result<String, String> {
    let (transport, pid): (Arc<dyn Transport>, Option<u32>) = match &args.target {
        Target::Http { url, pid } => (
            Arc::new(HttpTransport::new(url, None).map_err(|e| e.to_string())?),
            *pid,
        ),
        Target::Stdio { command } => {
            let (program, rest) = command.split_first().ok_or("no server command")?;
            let spec = rest
                .iter()
                .fold(CommandSpec::new(program), |spec, arg| spec.arg(arg));
            let child = StdioTransport::spawn(&spec).map_err(|e| e.to_string())?;
            let pid = child.process_group();
            (Arc::new(child), Some(pid))
        }
    };
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let window = Window::after(args.warmup, args.measure);
    let callers = client_bench::spawn_callers(
        args.conc,
        window,
        |_| client.clone(),
        |client: Client, _seq| async move {
            let ok = call(&client).await;
            (client, ok)
        },
    );
    let (tally, client_cpu, server_cpu) = client_bench::measure(window, pid, callers).await;
    client.close().await;
    Ok(client_bench::report(
        args, tally, window, client_cpu, server_cpu,
    ))
}

/// One `tools/call echo` through the public API, the way an application calls a tool.
async fn call(client: &Client) -> bool {
    let Ok(result) = client
        .call(
            "echo",
            Some(client_bench::echo_arguments()),
            &CallOptions::default(),
        )
        .await
    else {
        return false;
    };
    result
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::TextContent(t) if t.text == ECHO_TEXT))
}
