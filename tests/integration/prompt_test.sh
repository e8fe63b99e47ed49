#!/usr/bin/env bash
# prompt_test.sh - what `kiln search` asks a model, read from the request
# bodies that tests/fake_llm keeps (--bodies): the machine the parent ran on,
# the parent's verdict and per-shape table with its call-outs, the last
# failure, within the default budget, and no dims but visible shapes'.
#
# usage: prompt_test.sh BUILD_DIR SOURCE_DIR
#
# Runs two iterations of one draft against the real kiln (no kilnd) with a
# model that answers without code: the first request shows the start
# kernel's verdict, the second also the first answer's failure. Prints
# "ok - NAME" or "not ok - NAME" per check; exits 1 if one failed, 2 on bad
# usage. Needs bash, coreutils, grep, git and jq.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD=$(readlink -f -- "$1")
SRC=$(readlink -f -- "$2")
KILN=$BUILD/kiln
FAKE=$BUILD/tests/fake_llm
for x in "$KILN" "$BUILD/kiln-worker" "$FAKE"; do
    [ -x "$x" ] || { echo "$0: $x is not an executable" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
FAKEPID=
cleanup() {
    [ -n "$FAKEPID" ] && kill "$FAKEPID" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export KILN_STATE=$tmp/state TMPDIR=$tmp
unset KILN_TASKS OPENAI_BASE_URL
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
cd "$SRC" || exit 2

failed=0
check() {   # NAME PROBLEM...: ok when no problem was given
    local name=$1
    shift
    if [ $# -eq 0 ]; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        printf '# %s\n' "$@"
        failed=1
    fi
}

# ---- the run --------------------------------------------------------------------
mkdir -p "$tmp/bodies"
printf 'ok %s\n' "$SRC/tests/integration/search/noanswer.md" >"$tmp/script"
"$FAKE" --port-file "$tmp/port" --script "$tmp/script" --log "$tmp/log" \
    --bodies "$tmp/bodies" 2>"$tmp/fake.err" &
FAKEPID=$!
for ((i = 0; i < 100; i++)); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "$0: fake_llm did not start: $(cat "$tmp/fake.err")" >&2; exit 2; }
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
    --base-url "http://127.0.0.1:$(cat "$tmp/port")/v1" --iterations 2 --drafts 1 \
    --group decode --timing-ms 200 --workspace "$tmp/ws" >"$tmp/out" 2>"$tmp/err"
rc=$?
probs=()
[ $rc -eq 0 ] || probs+=("kiln search exited $rc: $(tail -5 "$tmp/err")")
grep -q Sanitizer "$tmp/err" && probs+=("sanitizer report: $(grep -m3 Sanitizer "$tmp/err")")
[ "$(wc -l <"$tmp/log")" = 2 ] || probs+=("fake_llm saw $(wc -l <"$tmp/log") requests, expected 2")
check "search asks the fake model twice" "${probs[@]}"

# The user prompts in request order (the log's hashes name the bodies).
users=()
while read -r h; do
    f=$tmp/bodies/$h.json
    [ -f "$f" ] && users+=("$(jq -r '.messages[] | select(.role == "user") | .content' "$f")")
done < <(grep -o 'h=[0-9a-f]*' "$tmp/log" | cut -c3-)
[ ${#users[@]} = 2 ] || { check "request bodies kept" "found ${#users[@]} of 2"; exit 1; }

# ---- the sections ------------------------------------------------------------------
probs=()
for want in "Machine (where the parent was measured): CPU " "Measured memory bandwidth: " \
    "Parent's verdict: pass" "Summary: geomean speedup " \
    "| shape | dims | parent | baseline | GB/s | roofline | speedup |" \
    "| v1 | rows=1 cols=1024 | " "Hidden shapes: " "(their sizes are never shown)" \
    "Write the next candidate."; do
    for i in 0 1; do
        grep -qF -- "$want" <<<"${users[$i]}" || probs+=("request $((i + 1)) lacks '$want'")
    done
done
grep -qE '^(Lagging shapes \(|No shape lags: )' <<<"${users[0]}" ||
    probs+=("no lagging-shapes line in: $(grep -A12 '^| shape' <<<"${users[0]}")")
grep -qF "Recent attempts" <<<"${users[0]}" && probs+=("request 1 shows attempts before any")
grep -qE '^#1 .* no fenced code block' <<<"${users[1]}" ||
    probs+=("request 2 lacks the first answer's failure: $(grep -A3 'Recent attempts' <<<"${users[1]}")")
for i in 0 1; do
    n=$(printf '%s' "${users[$i]}" | wc -c)
    [ "$n" -le 60000 ] || probs+=("request $((i + 1)): $n characters, over the default 60000")
done
check "the prompt carries the machine, the parent's shapes and call-outs, the last failure" "${probs[@]}"

# ---- no hidden dims ----------------------------------------------------------------
# Every "rows=R cols=C" in a prompt is a visible shape of some group.
visible=$("$KILN" task show rmsnorm | grep -oE '^ +v[0-9]+ +rows=[0-9]+ cols=[0-9]+' |
    grep -oE 'rows=[0-9]+ cols=[0-9]+' | sort -u)
probs=()
[ -n "$visible" ] || probs+=("kiln task show listed no visible shapes")
for i in 0 1; do
    while read -r d; do
        [ -z "$d" ] || grep -qxF -- "$d" <<<"$visible" || probs+=("request $((i + 1)) names '$d', no visible shape")
    done < <(grep -oE 'rows=[0-9]+ cols=[0-9]+' <<<"${users[$i]}" | sort -u)
done
check "no dims in the prompt but visible shapes'" "${probs[@]}"
exit $failed
