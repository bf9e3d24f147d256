//! The `strict-mcp` command; everything lives in [`strict_mcp::cli`].
#![forbid(unsafe_code)]

fn main() {
    std::process::exit(strict_mcp::cli::main());
}
