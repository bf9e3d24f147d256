#!/usr/bin/env bash
# Runs every interop driver (ts, py, inspector) over stdio and Streamable HTTP
# against a server and prints one summary line "N passed, N failed".
#
#   interop/smoke.sh                       # against the SDK reference server (ref_server.mjs)
#   interop/smoke.sh --capture             # same, and rewrite interop/transcripts/*.txt
#   SMOKE_STDIO_CMD='["path/to/server","--stdio"]' SMOKE_HTTP_CMD='["path/to/server","--http","0"]' \
#       interop/smoke.sh                   # another server: the HTTP command must print
#                                          # {"listening":"http://127.0.0.1:PORT/mcp"} as its first stdout line
# Only loopback addresses are used. Needs .ci/install-peers first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
node="$root/.interop/node/bin/node"
py="$root/.interop/venv/bin/python"
[[ -x "$node" && -x "$py" ]] || { echo "smoke.sh: run .ci/install-peers first" >&2; exit 2; }
export PATH="$root/.interop/node/bin:$PATH"

capture=0
[[ "${1:-}" == "--capture" ]] && capture=1

json_argv() { "$node" -e 'for (const a of JSON.parse(process.argv[1])) console.log(a)' "$1"; }
stdio_cmd=("$node" "$here/node/ref_server.mjs")
http_cmd=("$node" "$here/node/ref_server.mjs" --http 0)
[[ -n "${SMOKE_STDIO_CMD:-}" ]] && mapfile -t stdio_cmd < <(json_argv "$SMOKE_STDIO_CMD")
[[ -n "${SMOKE_HTTP_CMD:-}" ]] && mapfile -t http_cmd < <(json_argv "$SMOKE_HTTP_CMD")

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# start_bg NAME CMD... : runs CMD in the background (pid recorded for cleanup),
# waits for its {"listening":URL} line and stores URL in $bg_url. Not to be
# called inside $(...): the pid must be recorded in this shell.
bg_url=""
start_bg() {
    local name="$1"; shift
    "$@" >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    local i
    bg_url=""
    for ((i = 0; i < 100; i++)); do
        bg_url="$("$node" -e '
            const l = require("node:fs").readFileSync(process.argv[1], "utf8").split("\n")[0];
            try { process.stdout.write(JSON.parse(l).listening ?? ""); } catch {}' "$work/$name.out")"
        [[ -n "$bg_url" ]] && return 0
        sleep 0.1
    done
    echo "smoke.sh: $name did not start; stderr:" >&2
    cat "$work/$name.err" >&2
    return 1
}

start_bg server "${http_cmd[@]}"
url="$bg_url"
case "$url" in http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*) ;; *) echo "smoke.sh: non-loopback URL $url" >&2; exit 1 ;; esac

passed=0
failed=0
# check NAME CMD... : runs a driver, keeps its JSON lines, counts pass/fail by exit code.
check() {
    local name="$1"; shift
    if "$@" >"$work/$name.jsonl" 2>"$work/$name.stderr"; then
        passed=$((passed + 1))
        echo "PASS $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
        sed 's/^/    /' "$work/$name.jsonl" | cut -c1-400
        tail -n 20 "$work/$name.stderr" | sed 's/^/    stderr: /'
    fi
}

mrtr=(--expect-text hello --mrtr-expect-text "confirmed: hi")
if [[ -n "${SMOKE_STDIO_CMD:-}${SMOKE_HTTP_CMD:-}" ]]; then mrtr=(); fi

check ts-stdio "$node" "$here/node/ts_client.mjs" "${mrtr[@]}" -- "${stdio_cmd[@]}"
check ts-http "$node" "$here/node/ts_client.mjs" "${mrtr[@]}" --url "$url"
check py-stdio "$py" "$here/python/py_client.py" "${mrtr[@]}" -- "${stdio_cmd[@]}"
check py-http "$py" "$here/python/py_client.py" "${mrtr[@]}" --url "$url"
check inspector-stdio "$here/inspector.sh" --expect-text hello -- "${stdio_cmd[@]}"
check inspector-http "$here/inspector.sh" --expect-text hello --url "$url"
if [[ -z "${SMOKE_STDIO_CMD:-}${SMOKE_HTTP_CMD:-}" ]]; then
    # SEP-2243 header mirroring (reference server's region_echo, x-mcp-header "Region"),
    # called without a prior tools/list: exercises the -32020 re-list-and-retry path.
    region=(--steps call --tool region_echo --args '{"region":"eu-west","text":"x"}' --expect-text "eu-west: x")
    check ts-http-param "$node" "$here/node/ts_client.mjs" "${region[@]}" --url "$url"
    check py-http-param "$py" "$here/python/py_client.py" "${region[@]}" --url "$url"
    check inspector-http-param "$here/inspector.sh" "${region[@]}" --url "$url"
fi

if ((capture)); then
    out="$here/transcripts"
    mkdir -p "$out"
    tap="$here/node/wire_tap.mjs"
    for client in ts py inspector; do
        case "$client" in
            ts) run=("$node" "$here/node/ts_client.mjs") ;;
            py) run=("$py" "$here/python/py_client.py") ;;
            inspector) run=("$here/inspector.sh") ;;
        esac
        : >"$work/$client-stdio.log"
        "${run[@]}" -- "$node" "$tap" stdio --log "$work/$client-stdio.log" -- "${stdio_cmd[@]}" >/dev/null 2>&1 || true
        : >"$work/$client-http.log"
        start_bg "proxy-$client" "$node" "$tap" http --listen 0 --target "$url" --log "$work/$client-http.log"
        proxy="$bg_url"
        "${run[@]}" --url "$proxy" >/dev/null 2>&1 || true
        sleep 0.3
        : >"$work/$client-http-param.log"
        start_bg "proxy-$client-param" "$node" "$tap" http --listen 0 --target "$url" --log "$work/$client-http-param.log"
        proxy="$bg_url"
        "${run[@]}" --url "$proxy" --steps call --tool region_echo --args '{"region":"eu-west","text":"x"}' >/dev/null 2>&1 || true
        sleep 0.3
        for t in stdio http http-param; do
            {
                case "$t" in
                    stdio) echo "# $client client -> ${stdio_cmd[*]##*/} over stdio: connect, discover, tools/list, tools/call echo, MRTR confirm_echo" ;;
                    http) echo "# $client client -> ${http_cmd[*]##*/} over Streamable HTTP: connect, discover, tools/list, tools/call echo, MRTR confirm_echo" ;;
                    http-param) echo "# $client client -> ${http_cmd[*]##*/} over Streamable HTTP: tools/call region_echo with NO prior tools/list (x-mcp-header / Mcp-Param-Region, -32020 recovery)" ;;
                esac
                echo "# captured by interop/smoke.sh --capture (interop/node/wire_tap.mjs); Date headers vary per run"
                echo
                # pids -> proc=1,2,... in order of appearance (proc=1 may be a probe sibling)
                awk '{ if (match($0, /pid=[0-9]+/)) { p = substr($0, RSTART + 4, RLENGTH - 4); if (!(p in m)) m[p] = ++n;
                       $0 = substr($0, 1, RSTART - 1) "proc=" m[p] substr($0, RSTART + RLENGTH) } print }' "$work/$client-$t.log" |
                    sed -E "s/^([Dd]ate): .*/\\1: <date>/; s#127\\.0\\.0\\.1:[0-9]+#127.0.0.1:PORT#g; s#$root/##g"
            } >"$out/$client-$t.txt"
        done
    done
    if [[ -z "${SMOKE_HTTP_CMD:-}" ]]; then
        # The same TS session against the reference server in SSE response mode.
        start_bg server-sse "$node" "$here/node/ref_server.mjs" --http 0 --sse
        sse_url="$bg_url"
        : >"$work/ts-http-sse.log"
        start_bg proxy-ts-sse "$node" "$tap" http --listen 0 --target "$sse_url" --log "$work/ts-http-sse.log"
        proxy="$bg_url"
        "$node" "$here/node/ts_client.mjs" --url "$proxy" >/dev/null 2>&1 || true
        sleep 0.3
        {
            echo "# ts client -> ref_server.mjs --http --sse (responseMode 'sse': every response is a text/event-stream)"
            echo "# captured by interop/smoke.sh --capture (interop/node/wire_tap.mjs); Date headers vary per run"
            echo
            sed -E "s/^([Dd]ate): .*/\\1: <date>/; s#127\\.0\\.0\\.1:[0-9]+#127.0.0.1:PORT#g" "$work/ts-http-sse.log"
        } >"$out/ts-http-sse.txt"
    fi
    # How the server under test answers hand-built edge cases (diff these
    # between the SDK reference server and strict-mcp).
    "$node" "$here/node/http_probe.mjs" "$url" >"$out/edge-cases-http.jsonl"
    "$node" "$here/node/stdio_probe.mjs" -- "${stdio_cmd[@]}" >"$out/edge-cases-stdio.jsonl"
    echo "transcripts written to interop/transcripts/"
fi

echo "interop: $passed passed, $failed failed"
((failed == 0))
