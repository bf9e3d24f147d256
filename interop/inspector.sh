#!/usr/bin/env bash
# Interop driver: the official MCP Inspector CLI (@modelcontextprotocol/inspector
# 2.12.0) in `--cli --protocol-era modern` mode (or its own default era), for
# tools/list and tools/call, and optionally resources and prompts.
#
# Usage:
#   interop/inspector.sh [options] --url http://127.0.0.1:PORT/mcp
#   interop/inspector.sh [options] -- COMMAND [ARGS...]     (stdio)
#   MCP_SERVER_URL=... / MCP_SERVER_CMD='["cmd","arg"]' interop/inspector.sh [options]
#
# Options:
#   --era modern|auto|legacy   passed as --protocol-era (default modern);
#   --era default              no --protocol-era: the CLI's own default (legacy)
#   --steps list,call          subset/order of list,call,resources,read,prompts,prompt
#                              (default list,call)
#   --uri URI                  resource for the read step (default test://static-text)
#   --prompt NAME              prompt for the prompt step (default test_simple_prompt)
#   --tool NAME                tool for the call step (default echo)
#   --args JSON                its arguments (default {"text":"hello"})
#   --expect-text STR          fail the call step unless a text block equals STR
#   --env KEY=VALUE            environment for the stdio server (repeatable); the
#                              Inspector does NOT pass its own environment through
#
# Output: one JSON object per line on stdout:
#   {"driver":"inspector","step":"tools/list","ok":true,"exit":0,"result":{...}}
#   {"driver":"inspector","step":"tools/call","ok":false,"exit":1,"error":{...}}
#   {"driver":"inspector","step":"done","ok":true}
# Exit 0 only if every step succeeded; 1 otherwise; 2 on usage errors.
# Needs .ci/install-peers to have run (Node 24 in .interop/node, npm deps in interop/node).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
node="$root/.interop/node/bin/node"
inspector="$here/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[[ -x "$node" && -f "$inspector" ]] || { echo "inspector.sh: run .ci/install-peers first" >&2; exit 2; }

url="${MCP_SERVER_URL:-}"
cmd=()
if [[ -n "${MCP_SERVER_CMD:-}" ]]; then
    mapfile -t cmd < <("$node" -e 'for (const a of JSON.parse(process.argv[1])) console.log(a)' "$MCP_SERVER_CMD")
fi
era=modern
steps=list,call
tool=echo
args='{"text":"hello"}'
expect_text=""
have_expect=0
uri=test://static-text
prompt=test_simple_prompt
env_args=()
while (($#)); do
    case "$1" in
        --) shift; cmd=("$@"); break ;;
        --url) url="$2"; shift 2 ;;
        --era) era="$2"; shift 2 ;;
        --steps) steps="$2"; shift 2 ;;
        --tool) tool="$2"; shift 2 ;;
        --args) args="$2"; shift 2 ;;
        --uri) uri="$2"; shift 2 ;;
        --prompt) prompt="$2"; shift 2 ;;
        --expect-text) expect_text="$2"; have_expect=1; shift 2 ;;
        --env) env_args+=(-e "$2"); shift 2 ;;
        -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
        *) echo "inspector.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [[ -z "$url" && ${#cmd[@]} -eq 0 ]]; then
    echo "inspector.sh: need --url URL or -- COMMAND [ARGS...]" >&2
    exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Keep the Inspector's catalog, client config and secret store out of the real
# $HOME, in a per-run directory so parallel tests never share (or lock) them.
state="${INSPECTOR_HOME:-$tmp/home}"
mkdir -p "$state"
export HOME="$state"
export MCP_CATALOG_PATH="$state/mcp.json"
export MCP_CLIENT_CONFIG_PATH="$state/client.json"

target=()
if [[ -n "$url" ]]; then
    target=(--server-url "$url" --transport http)
else
    target=("${env_args[@]}" -- "${cmd[@]}")
fi

failed=0
era_args=(--protocol-era "$era")
if [[ "$era" == default ]]; then
    era_args=()
fi

# run STEP_NAME INSPECTOR_ARGS... : runs one inspector invocation, prints one JSON line.
run() {
    local step="$1"; shift
    local rc=0
    "$node" "$inspector" --cli "${era_args[@]}" --format json --connect-timeout 15000 "$@" "${target[@]}" \
        >"$tmp/out" 2>"$tmp/err" || rc=$?
    [[ $rc -eq 0 ]] || failed=1
    cat "$tmp/err" >&2 # the CLI's diagnostics and the stdio server's stderr
    STEP="$step" RC="$rc" EXPECT="$expect_text" HAVE_EXPECT="$have_expect" "$node" -e '
        const fs = require("node:fs");
        const [outFile, errFile] = process.argv.slice(1);
        const parse = t => { t = t.trim(); if (!t) return undefined; try { return JSON.parse(t); } catch { return { raw: t }; } };
        const out = parse(fs.readFileSync(outFile, "utf8"));
        const errText = fs.readFileSync(errFile, "utf8");
        const rc = Number(process.env.RC);
        const line = { driver: "inspector", step: process.env.STEP, ok: rc === 0, exit: rc };
        if (out && out.result !== undefined) line.result = out.result;
        else if (out) line.output = out;
        if (rc !== 0) {
            // The CLI prints its error envelope as the last JSON line on stderr.
            const lines = errText.trim().split("\n").reverse();
            let env;
            for (const l of lines) { try { env = JSON.parse(l); break; } catch {} }
            line.error = (env && env.error) || env || { message: errText.trim() };
        }
        if (line.ok && process.env.STEP === "tools/list") line.tools = (line.result?.tools ?? []).map(t => t.name);
        if (line.ok && process.env.STEP === "tools/call") {
            if (line.result?.isError) { line.ok = false; line.error = { message: "tool returned isError" }; }
            else if (process.env.HAVE_EXPECT === "1") {
                const texts = (line.result?.content ?? []).filter(b => b.type === "text").map(b => b.text);
                if (!texts.includes(process.env.EXPECT)) {
                    line.ok = false;
                    line.error = { message: `expected text ${JSON.stringify(process.env.EXPECT)}, got ${JSON.stringify(texts)}` };
                }
            }
        }
        console.log(JSON.stringify(line));
        process.exit(line.ok ? 0 : 1);
    ' "$tmp/out" "$tmp/err" || failed=1
}

IFS=, read -r -a step_list <<<"$steps"
for s in "${step_list[@]}"; do
    case "$s" in
        list) run tools/list --method tools/list ;;
        call) run tools/call --method tools/call --tool-name "$tool" --tool-args-json "$args" ;;
        resources) run resources/list --method resources/list ;;
        read) run resources/read --method resources/read --uri "$uri" ;;
        prompts) run prompts/list --method prompts/list ;;
        prompt) run prompts/get --method prompts/get --prompt-name "$prompt" ;;
        *) echo "inspector.sh: bad step $s" >&2; exit 2 ;;
    esac
done

if ((failed)); then
    echo '{"driver":"inspector","step":"done","ok":false}'
    exit 1
fi
echo '{"driver":"inspector","step":"done","ok":true}'
