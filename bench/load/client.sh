#!/usr/bin/env bash
# Client benchmark for tools/call `echo` (issue #14): builds the client drivers in release and
# runs every client x transport x callers against the same bare servers (bare_http, keep-alive;
# bare_stdio as each driver's child), then prints one table with each client's own CPU per
# round trip and ratios against the bare client of the same transport and against rmcp (its
# cheaper row of the same transport and callers: over HTTP usually `rmcp-pool`), all measured
# in this one run.
#
# Settings (environment):
#   WARMUP=5 MEASURE=10        seconds per row (warm-up excluded from the numbers)
#   CALLERS="1 16"             concurrent closed-loop callers per row
#   TRANSPORTS="http stdio"    which transports
#   CLIENTS="bare strict rmcp rmcp-pool"   which drivers (rmcp-pool: HTTP only, rmcp's
#                              transport with a keep-alive reqwest client)
#   CLIENT_THREADS=2           tokio worker threads of every driver
#   NICE=0 JOBS=               niceness and -j of the cargo build (shared machines)
# Traffic goes to 127.0.0.1 only; the HTTP server is stopped by its pid at the end and also
# exits by itself after MAX_SECONDS; every stdio server is the driver's child and ends with it.
set -euo pipefail
cd "$(dirname "$0")"

WARMUP=${WARMUP:-5}
MEASURE=${MEASURE:-10}
CALLERS=${CALLERS-"1 16"}
TRANSPORTS=${TRANSPORTS-"http stdio"}
CLIENTS=${CLIENTS:-"bare strict rmcp rmcp-pool"}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(pwd)/target}
BIN=$CARGO_TARGET_DIR/release
RESULTS=$(mktemp)
SERVER_PID=""

cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    rm -f "$RESULTS"
}
trap cleanup EXIT

for c in $CLIENTS; do
    case "$c" in
        bare | strict | rmcp | rmcp-pool) ;;
        *) echo "unknown client $c (bare strict rmcp rmcp-pool)" >&2; exit 2 ;;
    esac
done

echo "== build (release)" >&2
nice -n "${NICE:-0}" cargo build --release --quiet ${JOBS:+-j "$JOBS"} --features strict-client \
    --bin bare_client --bin strict_client --bin rmcp_client --bin bare_http --bin bare_stdio

# driver NAME -> the binary of a CLIENTS entry; flags NAME -> its extra flags
driver() {
    case "$1" in
        rmcp-pool) echo "$BIN/rmcp_client" ;;
        *) echo "$BIN/${1}_client" ;;
    esac
}
flags() {
    if [[ "$1" == rmcp-pool ]]; then echo "--pool"; fi
}

if [[ " $TRANSPORTS " == *" http "* ]]; then
    out=$(mktemp)
    rows=$(( $(wc -w <<<"$CLIENTS") * $(wc -w <<<"$CALLERS") ))
    MAX_SECONDS=$(( (WARMUP + MEASURE + 15) * rows + 60 )) "$BIN/bare_http" >"$out" &
    SERVER_PID=$!
    addr=""
    for _ in $(seq 100); do
        addr=$(awk '/^LISTENING/ {print $2}' "$out")
        [[ -n "$addr" ]] && break
        sleep 0.1
    done
    rm -f "$out"
    if [[ -z "$addr" ]]; then echo "bare_http did not start" >&2; exit 1; fi
    for c in $CLIENTS; do
        for n in $CALLERS; do
            echo "== http $c callers=$n" >&2
            # shellcheck disable=SC2046 # the extra flags split on purpose
            "$(driver "$c")" http $(flags "$c") --url "http://$addr/mcp" --pid "$SERVER_PID" --conc "$n" \
                --warmup "$WARMUP" --measure "$MEASURE" --label "$c" | tee -a "$RESULTS" >&2
        done
    done
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
fi

if [[ " $TRANSPORTS " == *" stdio "* ]]; then
    for c in $CLIENTS; do
        [[ "$c" == rmcp-pool ]] && continue
        for n in $CALLERS; do
            echo "== stdio $c callers=$n" >&2
            "$(driver "$c")" stdio --conc "$n" --warmup "$WARMUP" --measure "$MEASURE" \
                --label "$c" -- "$BIN/bare_stdio" | tee -a "$RESULTS" >&2
        done
    done
fi

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, warm-up ${WARMUP}s, measured ${MEASURE}s per row; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# RESULT label transport conc requests errors req_per_s p50 p99 client_cpu server_cpu
awk '
$1 == "RESULT" {
    key = $3 " " $4
    if ($2 == "bare") { bare_rps[key] = $7; bare_cpu[key] = $10 }
    # The rmcp reference is its cheaper row of the transport and callers (over HTTP its
    # pooled client, when that row ran).
    if (($2 == "rmcp" || $2 == "rmcp-pool") && $10 != "-" && (!(key in rmcp_cpu) || $10 + 0 < rmcp_cpu[key] + 0)) { rmcp_cpu[key] = $10 }
    rows[++n] = $0
}
function ratio(a, b) { return (b != "" && b != "-" && b + 0 > 0 && a != "-") ? sprintf("%.2f", a / b) : "-" }
END {
    printf "| transport | client | callers | req/s | p50 µs | p99 µs | client CPU µs/call | server CPU µs/call | errors | req/s vs bare | client CPU vs bare | client CPU vs rmcp |\n"
    printf "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    for (i = 1; i <= n; i++) {
        split(rows[i], f, " ")
        key = f[3] " " f[4]
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[3], f[2], f[4], f[7], f[8], f[9], f[10], f[11], f[6], ratio(f[7], bare_rps[key]), ratio(f[10], bare_cpu[key]), ratio(f[10], rmcp_cpu[key])
    }
}' "$RESULTS"
