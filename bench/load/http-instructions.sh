#!/usr/bin/env bash
# Instructions per HTTP tools/call of one server binary, under callgrind (issue #23): stable on
# a noisy machine, unlike CPU time. The server runs under valgrind; its counters are zeroed
# once it listens (after start-up and `WARMUP` seconds of load), then `loadgen http` drives
# `CONC` keep-alive connections for `MEASURE` seconds and the counters are dumped. Prints one
# line: `INSTR label instructions requests instructions_per_request`, the requests being every
# reply loadgen saw in the dumped window (its warm-up 0, so in-flight requests at the end, at
# most CONC, are the error: < 1 % at the request counts callgrind reaches in 20 s).
#
#   http-instructions.sh LABEL SERVER_BINARY [ENV=VALUE ...]
#   CONC=16 WARMUP=2 MEASURE=20 CARGO_TARGET_DIR=... (loadgen from $CARGO_TARGET_DIR/release)
#   KEEP=FILE: keep the measured window's profile there (for callgrind_annotate)
# Loopback only; the server is stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")"
label=$1
bin=$2
shift 2
CONC=${CONC:-16}
WARMUP=${WARMUP:-2}
MEASURE=${MEASURE:-20}
BIN=${CARGO_TARGET_DIR:-$(pwd)/target}/release
work=$(mktemp -d)
pid=""
cleanup() {
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# Created before the server starts: the wait loop below must not race the redirection (under
# `set -e` an `awk` that finds no file ends the script).
: >"$work/server.out"
env "$@" MAX_SECONDS=$((WARMUP + MEASURE + 120)) valgrind --tool=callgrind \
    --callgrind-out-file="$work/cg.out" "$bin" >"$work/server.out" 2>"$work/valgrind.err" &
pid=$!
addr=""
for _ in $(seq 600); do
    addr=$(awk '/^LISTENING/ {print $2}' "$work/server.out")
    [[ -n "$addr" ]] && break
    sleep 0.1
done
[[ -n "$addr" ]] || { echo "$label did not start" >&2; cat "$work/valgrind.err" >&2; exit 1; }
if (( WARMUP > 0 )); then
    "$BIN/loadgen" http --addr "$addr" --conc "$CONC" --warmup 0 --measure "$WARMUP" \
        --label warmup >/dev/null
fi
callgrind_control -z "$pid" >/dev/null
result=$("$BIN/loadgen" http --addr "$addr" --conc "$CONC" --warmup 0 --measure "$MEASURE" \
    --label "$label")
callgrind_control -d "$pid" >/dev/null
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""
# The dump after zeroing is the file with the highest part number.
dump=$(ls "$work"/cg.out* | sort -V | tail -1)
instr=$(awk '/^summary:/ {print $2}' "$dump")
if [[ -n "${KEEP:-}" ]]; then cp "$dump" "$KEEP"; fi
requests=$(awk '{print $5}' <<<"$result")
echo "INSTR $label $instr $requests $((instr / requests))"
