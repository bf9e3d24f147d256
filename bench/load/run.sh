#!/usr/bin/env bash
# Load benchmark for tools/call `echo` (issue #7): builds the harness in release, runs every
# server x concurrency for a bounded time, and prints a table with ratios against the bare
# servers of the same transport, all measured in this one run. The floor of a row is the
# faster of the floor servers measured for it (HTTP: `bare` and `lean`, stdio: `bare`):
# lowest CPU per request for the CPU ratio, highest req/s for the throughput ratio.
#
# Settings (environment):
#   WARMUP=5 MEASURE=10       seconds per run (warm-up excluded from the numbers)
#   CONCS="1 16 64"           HTTP keep-alive connections (CONCS="": no HTTP rows)
#   INFLIGHT="16 64"          pipelined stdio requests in flight (INFLIGHT="": no stdio rows)
#   SERVERS="bare lean tokio rmcp strict"  which servers (lean: HTTP only, tokio: stdio
#                             only; strict needs the `strict` feature to build). HTTP also
#                             takes host variants of strict_http (issue #23, session 10):
#                             strict-mt (multi-thread runtime), strict-h1 (ServeConfig::http2
#                             off), strict-old (the bench's auto-builder loop on a
#                             multi-thread runtime: strict_http until session 9),
#                             strict-arena2 (strict-mt with MALLOC_ARENA_MAX=2, a host
#                             setting); plain strict is strict_http's default (the product's
#                             accept loop on a current-thread runtime). Build variants of
#                             that default (issue #23, session 11; Cargo.toml's profiles):
#                             strict-lto (profile lto: fat LTO, 1 codegen unit), strict-small
#                             (profile small: the same at opt-level "s"), strict-tiny (profile
#                             tiny: opt-level "z"), strict-static (profile $STATIC_PROFILE,
#                             linked statically and non-PIE: RUSTFLAGS="$STATIC_RUSTFLAGS",
#                             built for --target $STATIC_TARGET so build scripts stay
#                             dynamic), strict-ordered (strict-static with the text that
#                             runs laid out together: order-text.sh), strict-relordered
#                             (the release profile's strict_http with such an order:
#                             STATIC=0 PROFILE=release order-text.sh, $BIN/strict_http-ordered),
#                             strict-ltoordered (the same order on the lto profile's
#                             dynamic, PIE build: STATIC=0 PROFILE=lto order-text.sh; issue
#                             #23, session 14)
#   STATIC_PROFILE=small      the profile of strict-static and strict-ordered (small or lto)
#   SMAPS=1                   HTTP: print where the server's pages are (smaps.sh) once it
#                             listens and again after each concurrency's window
#   STRICT=auto|1|0           build the strict-mcp servers (auto: only if they compile)
#   LOADGEN_THREADS=2         tokio worker threads of the load generator
#   BUILD=0                   run the binaries already in $CARGO_TARGET_DIR/release, no build
# Traffic goes to 127.0.0.1 only; every server process is stopped by its pid at the end and
# the HTTP servers also exit by themselves after MAX_SECONDS.
set -euo pipefail
cd "$(dirname "$0")"

WARMUP=${WARMUP:-5}
MEASURE=${MEASURE:-10}
CONCS=${CONCS-"1 16 64"}
INFLIGHT=${INFLIGHT-"16 64"}
SERVERS=${SERVERS:-"bare lean tokio rmcp strict"}
STRICT=${STRICT:-auto}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(pwd)/target}
BIN=$CARGO_TARGET_DIR/release
STATIC_TARGET=x86_64-unknown-linux-gnu
STATIC_PROFILE=${STATIC_PROFILE:-small}
STATIC_RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static"
RESULTS=$(mktemp)
SERVER_PID=""

cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

have_strict=0
if [[ "${BUILD:-1}" == 0 ]]; then
    # BUILD=0: the binaries in $BIN as they are (e.g. built with --features strict,strict-client).
    [[ -x "$BIN/strict_http" ]] && have_strict=1
else
echo "== build (release)" >&2
cargo build --release --quiet --bin loadgen --bin bare_http --bin lean_http --bin bare_stdio --bin tokio_stdio --bin rmcp_http --bin rmcp_stdio
fi
if [[ "$STRICT" != 0 && "${BUILD:-1}" != 0 ]]; then
    if cargo build --release --quiet --features strict --bin strict_http --bin strict_stdio; then
        have_strict=1
    elif [[ "$STRICT" == 1 ]]; then
        echo "strict-mcp servers do not build" >&2
        exit 1
    else
        echo "== strict-mcp servers do not build yet: skipped" >&2
    fi
fi

want() { # want SERVER -> is it selected and built?
    [[ " $SERVERS " == *" $1 "* ]] || return 1
    [[ "$1" != strict* || "$have_strict" == 1 ]]
}

# The binary of an HTTP server variant: the build variants live in their profile's directory.
variant_bin() {
    case "$1" in
        strict-lto) echo "$CARGO_TARGET_DIR/lto/strict_http" ;;
        strict-small) echo "$CARGO_TARGET_DIR/small/strict_http" ;;
        strict-tiny) echo "$CARGO_TARGET_DIR/tiny/strict_http" ;;
        strict-static) echo "$CARGO_TARGET_DIR/$STATIC_TARGET/$STATIC_PROFILE/strict_http" ;;
        strict-ordered) echo "$CARGO_TARGET_DIR/$STATIC_TARGET/$STATIC_PROFILE/strict_http-ordered" ;;
        strict-relordered) echo "$BIN/strict_http-ordered" ;;
        strict-ltoordered) echo "$CARGO_TARGET_DIR/lto/strict_http-ordered" ;;
        *) echo "$BIN/${1%%-*}_http" ;;
    esac
}

if [[ "$have_strict" == 1 && "${BUILD:-1}" != 0 ]]; then
    for s in strict-lto strict-small strict-tiny; do
        if want "$s"; then
            cargo build --profile "${s#strict-}" --quiet --features strict --bin strict_http
        fi
    done
    if want strict-static; then
        RUSTFLAGS="$STATIC_RUSTFLAGS" cargo build --profile "$STATIC_PROFILE" \
            --target "$STATIC_TARGET" --quiet --features strict --bin strict_http
    fi
    if want strict-ordered; then PROFILE=$STATIC_PROFILE ./order-text.sh; fi
    if want strict-relordered; then STATIC=0 PROFILE=release ./order-text.sh; fi
    if want strict-ltoordered; then STATIC=0 PROFILE=lto ./order-text.sh; fi
fi

# The environment of an HTTP server variant (strict_http reads STRICT_*; see its docs).
variant_env() {
    case "$1" in
        strict-mt) echo "STRICT_RUNTIME=multi" ;;
        strict-h1) echo "STRICT_HTTP2=0" ;;
        strict-old) echo "STRICT_ACCEPT=bench STRICT_RUNTIME=multi" ;;
        strict-arena2) echo "STRICT_RUNTIME=multi MALLOC_ARENA_MAX=2" ;;
        *) echo "" ;;
    esac
}

# HTTP: one server process per server, every concurrency against it.
for s in bare lean rmcp strict strict-mt strict-h1 strict-old strict-arena2 \
    strict-lto strict-small strict-tiny strict-static strict-ordered strict-relordered \
    strict-ltoordered; do
    want "$s" || continue
    [[ -n "${CONCS// /}" ]] || continue
    out=$(mktemp)
    # shellcheck disable=SC2046 # the variant's settings are words on purpose
    env $(variant_env "$s") MAX_SECONDS=$(( (WARMUP + MEASURE + 10) * 4 + 30 )) \
        "$(variant_bin "$s")" >"$out" &
    SERVER_PID=$!
    addr=""
    for _ in $(seq 100); do
        addr=$(awk '/^LISTENING/ {print $2}' "$out")
        [[ -n "$addr" ]] && break
        sleep 0.1
    done
    if [[ -z "$addr" ]]; then echo "${s}_http did not start" >&2; exit 1; fi
    if [[ "${SMAPS:-0}" == 1 ]]; then sleep 1; ./smaps.sh "$SERVER_PID" "$s/idle" >&2; fi
    for c in $CONCS; do
        echo "== http $s conc=$c" >&2
        "$BIN/loadgen" http --addr "$addr" --pid "$SERVER_PID" --conc "$c" \
            --warmup "$WARMUP" --measure "$MEASURE" --label "$s" | tee -a "$RESULTS" >&2
        if [[ "${SMAPS:-0}" == 1 ]]; then ./smaps.sh "$SERVER_PID" "$s/conc=$c" >&2; fi
    done
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    rm -f "$out"
done

# stdio: the load generator spawns a fresh server per run and closes its stdin at the end.
for s in bare tokio rmcp strict; do
    want "$s" || continue
    for n in $INFLIGHT; do
        echo "== stdio $s inflight=$n" >&2
        "$BIN/loadgen" stdio --inflight "$n" --warmup "$WARMUP" --measure "$MEASURE" \
            --label "$s" -- "$BIN/${s}_stdio" | tee -a "$RESULTS" >&2
    done
done

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, warm-up ${WARMUP}s, measured ${MEASURE}s per row; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
$1 == "RESULT" {
    key = $3 " " $4
    if ($2 == "bare" || $2 == "lean") {
        if (!(key in base_rps) || $7 + 0 > base_rps[key] + 0) base_rps[key] = $7
        if ($10 != "-" && (!(key in base_cpu) || $10 + 0 < base_cpu[key] + 0)) base_cpu[key] = $10
    }
    rows[++n] = $0
}
END {
    printf "| transport | server | conc | req/s | p50 µs | p99 µs | server CPU µs/req | VmHWM KiB | errors | req/s vs floor | CPU/req vs floor |\n"
    printf "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    for (i = 1; i <= n; i++) {
        split(rows[i], f, " ")
        key = f[3] " " f[4]
        rr = (key in base_rps && base_rps[key] > 0) ? sprintf("%.2f", f[7] / base_rps[key]) : "-"
        cr = (key in base_cpu && base_cpu[key] + 0 > 0 && f[10] != "-") ? sprintf("%.2f", f[10] / base_cpu[key]) : "-"
        hwm = (f[11] == "") ? "-" : f[11]
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[3], f[2], f[4], f[7], f[8], f[9], f[10], hwm, f[6], rr, cr
    }
}' "$RESULTS"
rm -f "$RESULTS"
