#!/usr/bin/env bash
# Copies the official 2026-07-28 wire examples into fuzz/corpus/<target>/ (gitignored) as seeds.
# The examples are not committed here; they come from the shared, pinned schema checkout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# Same lookup as the crate's example tests: $(dirname MCP_SCHEMA_PATH)/examples (relative to the
# crate root), else ../shared/schema/2026-07-28/examples; EXAMPLES_DIR overrides both.
crate="$(cd "$here/.." && pwd)"
if [ -n "${EXAMPLES_DIR:-}" ]; then
  examples="$EXAMPLES_DIR"
elif [ -n "${MCP_SCHEMA_PATH:-}" ]; then
  examples="$(cd "$crate" && cd "$(dirname "$MCP_SCHEMA_PATH")" && pwd)/examples"
else
  examples="$crate/../shared/schema/2026-07-28/examples"
fi
if [ ! -d "$examples" ]; then
  echo "seed-corpus: no examples at $examples (set EXAMPLES_DIR)" >&2
  exit 1
fi
# Long seeds (issue #23): texts of 1 KiB or more without control bytes take the scan's and the
# escaper's `quote_run` path (wire::string_run::QUOTE_RUN_MIN_TEXT), which the examples (all
# short) and mutated inputs (control bytes crowd in) rarely reach: a request and a result with
# long strings, plain, with an escaped quote every 64 bytes, and with every escape kind.
long="$(mktemp -d)"
trap 'rm -rf "$long"' EXIT
unit='abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\"'
escapes='\\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \"\u0000 caf\u00e9 '
quoted="" plain="" mixed=""
for _ in $(seq 40); do quoted+="$unit"; plain+="${unit%??}xy"; mixed+="$unit$escapes"; done
mkdir -p "$long/long"
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}' "$quoted" > "$long/long/request-quoted.json"
printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s","note":"%s"}}}' "$plain" "$plain" > "$long/long/request-plain.json"
printf '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}' "$mixed" > "$long/long/request-escapes.json"
printf '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"%s"}],"structuredContent":{"text":"%s"},"resultType":"complete"}}' "$quoted" "$plain" > "$long/long/result-long.json"
for target in stdio_line http_body egress_preflight client_response sse_stream codec_differential; do
  dir="$here/corpus/$target"
  mkdir -p "$dir"
  find "$examples" "$long" -name '*.json' -print0 | while IFS= read -r -d '' f; do
    name="$(basename "$(dirname "$f")")-$(basename "$f")"
    case "$target" in
      # stdio_line: first byte is the chunk size, then the example as compact lines.
      stdio_line) { printf '\x07'; tr -d '\n' < "$f"; printf '\n'; } > "$dir/$name" ;;
      # egress_preflight: 4 header bytes (bounds and kind), then the example as payload.
      egress_preflight) { printf '\xff\xff\x20\x40'; cat "$f"; } > "$dir/$name" ;;
      # sse_stream: first byte seeds the chunk sizes, then the example as one SSE event
      # (a comment, CRLF line ends) followed by a second LF-ended event.
      sse_stream) { printf '\x05: keep-alive\r\nevent: message\r\ndata: '; tr -d '\n' < "$f"; printf '\r\n\r\ndata: '; tr -d '\n' < "$f"; printf '\n\n'; } > "$dir/$name" ;;
      *) cp "$f" "$dir/$name" ;;
    esac
  done
done
# The committed, minimised corpora of the long campaigns (fuzz/corpora/<target>/, each
# <= 2 MiB) join the seeds; server_session's structured inputs live only there.
for dir in "$here"/corpora/*/; do
  [ -d "$dir" ] || continue
  target="$(basename "$dir")"
  mkdir -p "$here/corpus/$target"
  cp "$dir"* "$here/corpus/$target/" 2>/dev/null || true
done
mkdir -p "$here/corpus/server_session"
echo "seed-corpus: $(find "$here/corpus" -type f | wc -l) seeds in $here/corpus"
