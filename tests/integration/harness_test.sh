#!/usr/bin/env bash
# harness_test.sh - tests/integration/lib.sh, the harness every integration
# test sources, can fail: small tests written here report ok, not ok and
# skip lines and the exit statuses ctest reads (0, 1, 77, 2 on bad usage),
# fail stops a test, a missing t_done is a failure, skip_all and need_gpu
# skip, json_get reads what it is asked, a sanitizer report fails the check
# it came in (a leak of a program whose stderr is /dev/null, UBSan's
# "runtime error:" in a file stderr went to), the cleanup kills what a test
# left running (a daemonized process too) and removes its directory, and
# t_done stops the test's kilnd gracefully. Then a lint, so that it stays
# one harness: every tests/integration/*_test.sh sources lib.sh, calls
# t_init and t_done and is a ctest test, and none (nor a *_common.sh it
# shares) writes a preamble, a report helper or line, a skip, a GPU check,
# a JSON reader or a sanitizer scan of its own; a planted script breaking
# each rule is caught.
#
# usage: harness_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools cc

# sample NAME BODY: a test script sourcing lib.sh (t_init "$@" first, unless
# BODY calls it); run_sample NAME [ARGS...] runs it: its output in $out, its
# status in $rc.
sample() {
    {
        printf '. %q\n' "$SRC/tests/integration/lib.sh"
        [[ $2 == t_init* ]] || printf 't_init "$@"\n'
        printf '%s\n' "$2"
    } >"$tmp/$1_test.sh"
}
# Its output goes to a file, so that what it leaves running cannot hold a
# pipe open, in $T_SAN: the reports it quotes are not this test's own.
run_sample() {
    local name=$1
    shift
    mkdir -p "$T_SAN/samples"
    (cd "$tmp" && bash "$tmp/${name}_test.sh" "$BUILD" "$SRC" "$@" >"$T_SAN/samples/$name.out" 2>&1)
    rc=$?
    out=$(sed -E 's/ \([0-9]+ s\)$//' "$T_SAN/samples/$name.out")   # a check's seconds vary
}
# has TEXT: the sample's output holds the line TEXT (a check's line without its seconds).
has() { grep -qxF -- "$1" <<<"$out" || problem "no line '$1' in:"$'\n'"$out"; }
lacks() { ! grep -qF -- "$1" <<<"$out" || problem "'$1' in:"$'\n'"$out"; }
want_rc() { [ "$rc" = "$1" ] || problem "exit $rc, expected $1:"$'\n'"$out"; }

# ---- the TAP dialect --------------------------------------------------------------

begin
sample report 'begin; end "one"
begin "two"; problem "first line
second line"; end
skip "three"
t_done'
run_sample report
has "ok - one"
has "not ok - two"
has "#   first line"
has "#   second line"
has "skip - three"
has "1 passed, 1 failed, 1 skipped"
want_rc 1
end "ok, not ok with '#' details, skip, the closing line; a failed check is exit 1"

begin
sample passing 'begin; end "one"; t_done'
run_sample passing
has "1 passed, 0 failed"
want_rc 0
sample skipped 'begin; end "one"; skip "two"; t_done 77'
run_sample skipped
want_rc 77
end "exit 0 when every check passed; t_done 77 exits 77 when one was skipped"

begin
sample stops 'begin "one"; fail "cannot go on"; begin; end "two"; t_done'
run_sample stops
has "not ok - one"
has "#   cannot go on"
has "0 passed, 1 failed"
lacks "two"
want_rc 1
sample no_done 'begin; end "one"'
run_sample no_done
has "not ok - the test ended without t_done"
want_rc 1
sample set_e 'set -e; begin "two"; false; end; t_done'
run_sample set_e
has "not ok - two stopped with exit status 1"
want_rc 1
sample stop 'begin; end "one"; stop_if_failed; begin; problem "x"; end "two"; stop_if_failed; begin; end "three"; t_done'
run_sample stop
has "ok - one"
has "1 passed, 1 failed"
lacks "three"
want_rc 1
end "fail and stop_if_failed stop the test (exit 1); a test that ends without t_done, or stops under set -e, fails"

begin
sample args 'echo "args: ${T_ARGS[*]}"; t_done'
run_sample args extra
want_rc 2
grep -q "^usage: .*args_test.sh BUILD_DIR SOURCE_DIR$" <<<"$out" || problem "no usage line: $out"
sample args2 't_init -a "MODE [N]" "$@"; echo "args: ${T_ARGS[*]}"; t_done'
run_sample args2 cpu 3
has "args: cpu 3"
want_rc 0
run_sample args2
want_rc 2
(cd "$tmp" && bash "$tmp/passing_test.sh" "$tmp" "$SRC" >"$tmp/nobuild.out" 2>&1)
[ $? = 2 ] && grep -q "is not an executable" "$tmp/nobuild.out" ||
    problem "a BUILD_DIR without kiln: $(cat "$tmp/nobuild.out")"
end "bad usage and a BUILD_DIR without kiln: exit 2"

# ---- skips ------------------------------------------------------------------------

begin
sample skip_all 'begin; end "one"; skip_all "not here"; begin; end "two"; t_done'
run_sample skip_all
has "skipped: not here"
lacks "two"
want_rc 77
sample skip_after 'begin; problem "broken"; end "one"; skip_all "not here"'
run_sample skip_after
want_rc 1
end "skip_all: 'skipped: REASON' and exit 77, or 1 after a failed check"

begin
sample gpu 'need_gpu cuda "it needs one"; begin; end "ran"; t_done'
run_sample gpu
if have_gpu && [ -x "$BUILD/kiln-worker-cuda" ]; then
    has "ok - ran"
    want_rc 0
else
    has "skipped: no NVIDIA GPU or no CUDA build (it needs one)"
    want_rc 77
fi
end "need_gpu skips without a GPU (or the CUDA worker) and runs the test with them"

# ---- isolation ---------------------------------------------------------------------

begin
sample env 'for v in KILN_STATE KILN_SOCKET TMPDIR KILN_TEST_DIR; do
    case ${!v} in "$tmp" | "$tmp"/*) echo "$v under tmp" ;; esac
done
echo "keys: ${OPENAI_API_KEY-unset} ${ANTHROPIC_API_KEY-unset} ${KILN_TASKS-unset}"
echo "git: $GIT_CONFIG_GLOBAL"
t_done'
OPENAI_API_KEY=secret ANTHROPIC_API_KEY=secret KILN_TASKS=/nowhere run_sample env
for v in KILN_STATE KILN_SOCKET TMPDIR KILN_TEST_DIR; do has "$v under tmp"; done
has "keys: unset unset unset"
has "git: /dev/null"
end "kiln and kilnd use the test's directory alone: state, socket, TMPDIR; no keys or tasks of the user's"

# ---- the JSON reader ---------------------------------------------------------------

begin
cat >"$tmp/v.json" <<'EOF'
{"status": "pass", "n": 3, "x": 0.5, "ok": true, "none": null,
 "shapes": [{"id": "v1", "dims": {"rows": 1, "cols": 2048}, "kernel": "k2"},
            {"id": "v2", "dims": {"rows": 4, "cols": 16384}, "kernel": "k1", "alt": [1, 2]}],
 "text": "two\nlines"}
EOF
want() {   # EXPECTED PATH [FILE|-]: json_get PATH prints EXPECTED
    local got
    if [ "${3:-}" = - ]; then got=$(json_get "$2" <"$tmp/v.json"); else got=$(json_get "$2" "$tmp/v.json"); fi
    [ "$got" = "$1" ] || problem "json_get '$2': '$got', expected '$1'"
}
want pass status
want pass .status -
want 3 n
want 0.5 x
want true ok
want null none
want v2 'shapes[1].id'
want v2 shapes.1.id
want 2048 shapes.0.dims.cols
want k1 'shapes[dims.rows=4,dims.cols=16384].kernel'
want "" 'shapes[dims.rows=1,dims.cols=16384].kernel'
want 2 'shapes[id=v2].alt.#'
want 2 'shapes.#'
want "v1
v2" 'shapes[].id'
want '{"rows": 1, "cols": 2048}' shapes.0.dims
want "two
lines" text
json_get shapes.5.id "$tmp/v.json" >/dev/null
[ $? = 1 ] || problem "a missing index: not exit 1"
json_get nothing "$tmp/v.json" >/dev/null
[ $? = 1 ] || problem "a missing key: not exit 1"
[ -z "$(json_get 'shapes[id=v9].kernel' "$tmp/v.json")" ] || problem "a filter that matches nothing printed something"
got=$(printf '{"event":"run"}\nnot json\n{"event":"summary","reason":"time budget reached"}\n' |
      json_get '[event=summary].reason')
[ "$got" = "time budget reached" ] || problem "JSON lines: '$got'"
json_get status "$tmp/nothing.json" 2>/dev/null
[ $? = 2 ] || problem "a missing file: not exit 2"
echo "not json" | json_get status 2>/dev/null
[ $? = 2 ] || problem "input that is not JSON: not exit 2"
end "json_get: keys, indexes, [K=V] filters, [], #, JSON lines, stdin; exit 1 for nothing, 2 for bad input"

# ---- sanitizer reports -------------------------------------------------------------

cat >"$tmp/bad.c" <<'EOF'
/* a leak, or (with "ub") a signed overflow: what the harness must catch */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ub") == 0) {
        int x = argc + 2147483646;
        printf("%d\n", x);
        return 0;
    }
    char *volatile p = malloc(32);
    strcpy(p, "leaked");
    p = NULL;
    return 0;
}
EOF
if cc -fsanitize=address,undefined -g -o "$tmp/bad" "$tmp/bad.c" 2>"$tmp/cc.err"; then
    begin
    sample san "begin; $tmp/bad 2>/dev/null; end 'a leak'
begin; $tmp/bad ub >/dev/null 2>\$tmp/ub.err; end 'ub'
begin; $tmp/bad ub >/dev/null 2>/dev/null; true; end 'clean'
t_done"
    run_sample san
    has "not ok - a leak"
    grep -q "^#   .*ERROR: LeakSanitizer: detected memory leaks" <<<"$out" || problem "no leak report: $out"
    has "not ok - ub"
    grep -q "^#   .*runtime error: signed integer overflow" <<<"$out" || problem "no UBSan report: $out"
    has "ok - clean"
    want_rc 1
    end "a sanitizer report fails its check: a leak with stderr to /dev/null, UBSan's line in a stderr file"
else
    skip "no -fsanitize=address,undefined compiler here: $(head -c 200 "$tmp/cc.err")"
fi

# ---- the cleanup -------------------------------------------------------------------

begin
nap=$((4000 + $$ % 1000))
sample left "sleep $nap & 
setsid sh -c 'sleep $((nap + 1)) & exit 0'
( sleep $((nap + 2)) ) &
echo \"dir: \$tmp\"
begin; end one; t_done"
run_sample left
want_rc 0
dir=$(sed -n 's/^dir: //p' <<<"$out")
sleep 0.2
left=
for p in /proc/[0-9]*; do
    args=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")
    case $args in "sleep $nap "|"sleep $((nap + 1)) "|"sleep $((nap + 2)) ") left="$left ${p#/proc/}" ;; esac
done
[ -z "$left" ] || { problem "left running after the test: $left"; kill -9 $left 2>/dev/null; }
[ -n "$dir" ] && [ ! -e "$dir" ] || problem "the test's directory '$dir' is still there"
sample keep 'echo "dir: $tmp"; begin; end one; t_done'
KILN_TEST_KEEP=1 run_sample keep
dir=$(sed -n 's/^dir: //p' <<<"$out")
[ -n "$dir" ] && [ -d "$dir" ] || problem "KILN_TEST_KEEP=1: '$dir' is gone"
has "# kept $dir"
rm -rf "$dir"
end "the cleanup kills what a test left (in the background, daemonized) and removes its directory"

begin
sample kilnd '"$KILN" daemon start >/dev/null 2>&1 || echo "no kilnd"
echo "pid: $(kilnd_pid "$KILN_SOCKET")"
begin; end one; t_done'
KILN_TEST_KEEP=1 run_sample kilnd
want_rc 0
dir=$(sed -n 's/^# kept //p' <<<"$out")
pid=$(sed -n 's/^pid: //p' <<<"$out")
[ -n "$pid" ] || problem "no kilnd came up: $out"
[ -n "$dir" ] && grep -q "stopped after" "$dir/state/kilnd.log" 2>/dev/null ||
    problem "kilnd did not stop gracefully: $(tail -3 "$dir/state/kilnd.log" 2>&1)"
[ -z "$pid" ] || ! _t_alive "$pid" || { problem "kilnd $pid still runs"; kill -9 "$pid"; }
rm -rf "$dir"
end "t_done stops the test's kilnd gracefully (a sanitizer build's leak check runs) and waits for it"

# ---- the lint ----------------------------------------------------------------------

# lint DIR TESTS: what is wrong with the scripts in DIR (nothing: all is
# well), TESTS holding the command lines of the registered tests. Comment
# lines are left out; code in heredocs (C, Python) is read too, so the rules
# name shell forms only. This file, which spells the rules out, is held to
# the first four only.
lint() {
    local dir=$1 tests=$2 f name code
    local helpers='ok|not_ok|pass|fail|check|report|finish|begin|end|problem|skip|skip_all'
    helpers+='|have_gpu|need_gpu|need_nvcc|find_nvcc|nvcc_memo|need_tools|fake_llm|json_get|field'
    helpers+='|san_check|sanitizer|sanitizer_check|cleanup|stop_if_failed|t_[a-z_]+'
    for f in "$dir"/*_test.sh "$dir"/*_common.sh; do
        [ -e "$f" ] || continue
        name=${f##*/}
        code=$(grep -v '^[[:space:]]*#' "$f")
        if [[ $name == *_test.sh ]]; then
            grep -qxF '. "$(dirname "$0")/lib.sh"' <<<"$code" || echo "$name: does not source lib.sh"
            grep -qE '^t_init( |$)' <<<"$code" || echo "$name: no t_init"
            grep -qE '(^|[[:space:]])t_done( |$)' <<<"$code" || echo "$name: no t_done"
            grep -qE "integration/$name([\" ]|\$)" "$tests" || echo "$name: not a ctest test"
        fi
        [ "$name" != harness_test.sh ] || continue   # this file names the rules
        grep -nE "^[[:space:]]*(function[[:space:]]+)?($helpers)[[:space:]]*\(\)" <<<"$code" |
            sed "s|^|$name: a harness helper of its own: |"
        grep -nE "(echo|printf)[[:space:]]+[\"'](ok|not ok|skip)( -|:)|(echo|printf).*passed, .*failed|SKIP:|FAIL:" <<<"$code" |
            sed "s|^|$name: a report line of its own: |"
        grep -nE "exit 77|mktemp|(^|[;&|[:space:]])trap[[:space:]]" <<<"$code" |
            sed "s|^|$name: a preamble or skip of its own: |"
        grep -nE "nvidia-smi -L|-e /dev/nvidia0" <<<"$code" | sed "s|^|$name: a GPU check of its own: |"
        grep -nE "(^|[^[:alnum:]_])jq([[:space:]]|$)|python3 -c .*json" <<<"$code" |
            sed "s|^|$name: a JSON reader of its own: |"
        grep -nE "Sanitizer|runtime error" <<<"$code" | sed "s|^|$name: a sanitizer scan of its own: |"
    done
}

# The command lines of the registered tests (ctest -N -V shows them), and
# the add_test lines of tests/CMakeLists.txt: a test this build leaves out
# (the sanitizer build leaves out integration_family_compile, which runs no
# kiln code) is still registered.
ctest --test-dir "$BUILD" -N -V 2>/dev/null | grep -E '(Test command|[0-9]+: Test command):' >"$tmp/tests.txt"
listed=$(grep -c "integration/harness_test.sh" "$tmp/tests.txt" || true)
grep -E 'add_test\(' "$SRC/tests/CMakeLists.txt" | grep -v '^[[:space:]]*#' >>"$tmp/tests.txt"

begin
[ "$listed" -gt 0 ] || problem "ctest -N -V lists no integration test: $(head -3 "$tmp/tests.txt")"
bad=$(lint "$SRC/tests/integration" "$tmp/tests.txt")
[ -z "$bad" ] || problem "$bad"
end "every integration test sources lib.sh, calls t_init and t_done, is a ctest test, and writes no harness part of its own"

begin
mkdir -p "$tmp/plant"
cp "$SRC/tests/integration/doctor_test.sh" "$tmp/plant/"
plant() {   # NAME CODE: a script that sources lib.sh and breaks a rule
    printf '%s\n' '. "$(dirname "$0")/lib.sh"' 't_init "$@"' "$2" 't_done' >"$tmp/plant/$1_test.sh"
    echo "x/integration/$1_test.sh " >>"$tmp/tests.txt"
}
plant tap 'ok() { echo "ok - $1"; }'
plant line 'echo "not ok - it failed"'
plant summary 'echo "$n passed, $m failed"'
plant skip77 '[ -e /x ] || exit 77'
plant tmp 'T=$(mktemp -d)'
plant trap "trap 'rm -rf \$T' EXIT"
plant gpu 'if [ ! -e /dev/nvidia0 ]; then :; fi'
plant jq 'v=$(jq -r .status v.json)'
plant pyjson "v=\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"status\"])' v.json)"
plant san 'grep -q LeakSanitizer err.txt && echo leak'
printf '%s\n' '#!/usr/bin/env bash' 'echo hi' >"$tmp/plant/bare_test.sh"
printf '%s\n' 'field() { :; }' >"$tmp/plant/x_common.sh"
got=$(lint "$tmp/plant" "$tmp/tests.txt")
for want in "tap_test.sh: a harness helper" "line_test.sh: a report line" "summary_test.sh: a report line" \
    "skip77_test.sh: a preamble or skip" "tmp_test.sh: a preamble or skip" "trap_test.sh: a preamble or skip" \
    "gpu_test.sh: a GPU check" "jq_test.sh: a JSON reader" "pyjson_test.sh: a JSON reader" \
    "san_test.sh: a sanitizer scan" "bare_test.sh: does not source lib.sh" "bare_test.sh: no t_init" \
    "bare_test.sh: no t_done" "bare_test.sh: not a ctest test" "x_common.sh: a harness helper"; do
    grep -qF "$want" <<<"$got" || problem "not caught: $want"
done
grep -q "^doctor_test.sh" <<<"$got" && problem "a good script was blamed: $(grep '^doctor_test.sh' <<<"$got")"
[ ${#probs[@]} -eq 0 ] || problem "the lint said:"$'\n'"$got"
end "the lint catches a script with its own helper, report line, skip, temp dir, trap, GPU check, JSON reader or sanitizer scan, or without lib.sh"

t_done
