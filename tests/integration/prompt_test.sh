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
# kernel's verdict, the second also the first answer's failure. Needs bash,
# coreutils, grep, git and python3.
. "$(dirname "$0")/lib.sh"
t_init "$@"
cd "$SRC" || exit 2

# ---- the run --------------------------------------------------------------------
mkdir -p "$tmp/bodies"
printf 'ok %s\n' "$SRC/tests/integration/search/noanswer.md" >"$tmp/script"
fake_llm "$tmp" --bodies "$tmp/bodies"
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
    --base-url "http://127.0.0.1:$(cat "$tmp/port")/v1" --iterations 2 --drafts 1 \
    --group decode --timing-ms 200 --workspace "$tmp/ws" >"$tmp/out" 2>"$tmp/err"
rc=$?
begin
[ $rc -eq 0 ] || problem "kiln search exited $rc: $(tail -5 "$tmp/err")"
[ "$(wc -l <"$tmp/log")" = 2 ] || problem "fake_llm saw $(wc -l <"$tmp/log") requests, expected 2"
end "search asks the fake model twice"

# The user prompts in request order (the log's hashes name the bodies).
users=()
while read -r h; do
    f=$tmp/bodies/$h.json
    [ -f "$f" ] && users+=("$(json_get 'messages[role=user].content' "$f")")
done < <(grep -o 'h=[0-9a-f]*' "$tmp/log" | cut -c3-)
[ ${#users[@]} = 2 ] || { begin "request bodies kept"; fail "found ${#users[@]} of 2"; }

# ---- the sections ------------------------------------------------------------------
begin
for want in "Machine (where the parent was measured): CPU " "Measured memory bandwidth: " \
    "Parent's verdict: pass" "Summary: geomean speedup " \
    "| shape | dims | parent | baseline | GB/s | roofline | speedup |" \
    "| v1 | rows=1 cols=1024 | " "Hidden shapes: " "(their sizes are never shown)" \
    "Write the next candidate."; do
    for i in 0 1; do
        grep -qF -- "$want" <<<"${users[$i]}" || problem "request $((i + 1)) lacks '$want'"
    done
done
grep -qE '^(Lagging shapes \(|No shape lags: )' <<<"${users[0]}" ||
    problem "no lagging-shapes line in: $(grep -A12 '^| shape' <<<"${users[0]}")"
grep -qF "Recent attempts" <<<"${users[0]}" && problem "request 1 shows attempts before any"
grep -qE '^#1 .* no fenced code block' <<<"${users[1]}" ||
    problem "request 2 lacks the first answer's failure: $(grep -A3 'Recent attempts' <<<"${users[1]}")"
for i in 0 1; do
    n=$(printf '%s' "${users[$i]}" | wc -c)
    [ "$n" -le 60000 ] || problem "request $((i + 1)): $n characters, over the default 60000"
done
end "the prompt carries the machine, the parent's shapes and call-outs, the last failure"

# ---- no hidden dims ----------------------------------------------------------------
# Every "rows=R cols=C" in a prompt is a visible shape of some group.
visible=$("$KILN" task show rmsnorm | grep -oE '^ +v[0-9]+ +rows=[0-9]+ cols=[0-9]+' |
    grep -oE 'rows=[0-9]+ cols=[0-9]+' | sort -u)
begin
[ -n "$visible" ] || problem "kiln task show listed no visible shapes"
for i in 0 1; do
    while read -r d; do
        [ -z "$d" ] || grep -qxF -- "$d" <<<"$visible" || problem "request $((i + 1)) names '$d', no visible shape"
    done < <(grep -oE 'rows=[0-9]+ cols=[0-9]+' <<<"${users[$i]}" | sort -u)
done
end "no dims in the prompt but visible shapes'"
t_done
