//! The `strict-mcp` command; everything lives in [`strict_mcp::cli`].
#![forbid(unsafe_code)]

#[cfg(unix)]
fn main() {
    std::process::exit(strict_mcp::cli::main());
}

/// The stdio transport (process groups, signals) is Unix-only, and so is the command.
#[cfg(not(unix))]
fn main() {
    eprintln!("strict-mcp: this command needs a Unix system");
    std::process::exit(3);
}
