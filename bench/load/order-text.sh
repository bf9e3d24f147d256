#!/usr/bin/env bash
# Builds strict_http-ordered (issue #23, session 11): strict_http linked statically and
# non-PIE (run.sh's strict-static; STATIC=0: as the profile builds it, run.sh's
# strict-relordered with PROFILE=release) with its text laid out so that the functions that
# run, at start-up and per tools/call, sit next to each other. The kernel maps 64 KiB of a file
# around each page fault (fault-around), so a few hundred small functions scattered over
# 4 MiB of text map most of it; packed, they map about their own size.
#
# 1. build strict_http (profile $PROFILE, features $FEATURES; static: --target $TARGET);
# 2. run it under callgrind (--demangle=no) while `loadgen http --conc 4` sends tools/call
#    echo for 3 s, and list the mangled name of every function of the binary that ran
#    ($CARGO_TARGET_DIR/$TARGET/$PROFILE/strict_http.order);
# 3. link it again with `-Wl,--symbol-ordering-file` (rust-lld; the list first, the rest as
#    before; names that are not in the binary are ignored) to strict_http-ordered, and put
#    the plain link back as strict_http.
#
# Only the final link and the bin crate's code generation differ from the plain build; the
# instructions executed do not (bench/README). The order depends on the binary: run it again
# after any change. Settings: CARGO_TARGET_DIR (default bench/load/target), PROFILE (small),
# STATIC (1), FEATURES (strict), NICE (5), LOADGEN (default $CARGO_TARGET_DIR/release/loadgen, built when missing). Needs
# valgrind and python3. Traffic goes
# to 127.0.0.1 only; the server it starts is stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(pwd)/target}
PROFILE=${PROFILE:-small}
NICE=${NICE:-5}
FEATURES=${FEATURES:-strict}
TARGET=x86_64-unknown-linux-gnu
if [[ "${STATIC:-1}" == 1 ]]; then
    export RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static"
    target=(--target "$TARGET")
    dir=$CARGO_TARGET_DIR/$TARGET/$PROFILE
else
    target=()
    dir=$CARGO_TARGET_DIR/$PROFILE
fi
bin=$dir/strict_http
order=$dir/strict_http.order
loadgen=${LOADGEN:-$CARGO_TARGET_DIR/release/loadgen}

if [[ ! -x "$loadgen" ]]; then
    RUSTFLAGS="" nice -n "$NICE" cargo build --release --quiet --bin loadgen
    loadgen=$CARGO_TARGET_DIR/release/loadgen
fi
nice -n "$NICE" cargo build --profile "$PROFILE" "${target[@]}" --quiet --features "$FEATURES" --bin strict_http
cp -a "$bin" "$dir/strict_http-plain"

work=$(mktemp -d)
vpid=""
cleanup() {
    if [[ -n "$vpid" ]]; then kill "$vpid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
MAX_SECONDS=60 valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.out" \
    "$dir/strict_http-plain" >"$work/out" 2>"$work/err" &
vpid=$!
addr=""
for _ in $(seq 300); do
    addr=$(awk '/^LISTENING/ {print $2}' "$work/out")
    [[ -n "$addr" ]] && break
    sleep 0.1
done
[[ -n "$addr" ]] || { cat "$work/err" >&2; echo "order-text: strict_http did not start" >&2; exit 1; }
"$loadgen" http --addr "$addr" --conc 4 --warmup 0 --measure 3 --label profile >&2
kill -TERM "$vpid"
wait "$vpid" 2>/dev/null || true
vpid=""
# Every `fn=` of the binary's object in the callgrind profile (names are compressed: the
# first use of an id carries the name, in fn=, cfn=, ob= or cob= lines alike).
python3 - "$dir/strict_http-plain" "$work/cg.out" >"$order" <<'PY'
import re, sys
binary, profile = sys.argv[1], sys.argv[2]
named = re.compile(r'^\((\d+)\)(?: (.*))?$')
objects, functions, seen, current = {}, {}, {}, None
def resolve(table, value):
    m = named.match(value)
    if not m:
        return value
    if m.group(2) is not None:
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1))
for line in open(profile, errors='replace'):
    key, _, value = line.rstrip('\n').partition('=')
    if key == 'ob':
        current = resolve(objects, value)
    elif key == 'cob':
        resolve(objects, value)
    elif key == 'cfn':
        resolve(functions, value)
    elif key == 'fn':
        name = resolve(functions, value)
        if current == binary and name and not name.startswith('0x'):
            seen.setdefault(name, None)
print('\n'.join(seen))
PY
echo "order-text: $(wc -l <"$order") functions ran" >&2
[[ -s "$order" ]] || { echo "order-text: no function names (stripped binary?)" >&2; exit 1; }
nice -n "$NICE" cargo rustc --profile "$PROFILE" "${target[@]}" --quiet --features "$FEATURES" \
    --bin strict_http -- -C "link-arg=-Wl,--symbol-ordering-file=$order" \
    -C link-arg=-Wl,--no-warn-symbol-ordering
mv "$bin" "$dir/strict_http-ordered"
mv "$dir/strict_http-plain" "$bin"
echo "order-text: $dir/strict_http-ordered" >&2
