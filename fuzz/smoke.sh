#!/usr/bin/env bash
# Fuzz smoke run for CI: seed, build without a sanitizer (works on stable), run every target
# for SECONDS (default 60). Fails if any target finds a crash.
set -euo pipefail
secs="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
./seed-corpus.sh
# cargo-fuzz passes -Z flags to rustc; RUSTC_BOOTSTRAP lets a stable toolchain accept them.
export RUSTC_BOOTSTRAP=1
flags="${FUZZ_BUILD_FLAGS:---release}"
cargo fuzz build --sanitizer none $flags
for target in stdio_line http_body egress_preflight client_response sse_stream codec_differential server_session; do
  echo "== $target ($secs s)"
  cargo fuzz run --sanitizer none $flags "$target" "corpus/$target" -- \
    -dict=mcp.dict -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1
done
