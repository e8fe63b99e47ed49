#!/usr/bin/env bash
# messages_test.sh - messages that tell the truth (issue 38, item 3): a
# start kernel that does not compile is bad input (exit 2) naming the file
# and showing the compiler; a candidate with the wrong signature is told
# the task's prototype; --json output of status, export, doctor and task
# list is JSON, and every search event carries "t"; a workspace kiln
# cannot write is not reported as one in use.
#
# usage: messages_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

STARTER=$SRC/kernels/rmsnorm/cpu/starter.c
SIG='void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)'

# 1. a start kernel that does not compile
printf '#include <stdint.h>\nint broken( {\n' >"$tmp/bad.c"
begin
"$KILN" search rmsnorm --from "$tmp/bad.c" --workspace "$tmp/ws1" --iterations 1 --no-daemon \
    >"$tmp/s1.out" 2>"$tmp/s1.err" </dev/null
rc=$?
[ $rc -eq 2 ] || problem "exit $rc, expected 2: $(head -c 400 "$tmp/s1.err")"
grep -qF "kiln search: the start kernel $tmp/bad.c does not compile" "$tmp/s1.err" ||
    problem "stderr does not name the file: $(head -c 400 "$tmp/s1.err")"
grep -qF "the compiler said:" "$tmp/s1.err" || problem "no compiler log: $(head -c 400 "$tmp/s1.err")"
grep -qE "source.c:2:[0-9]+: error:" "$tmp/s1.err" ||
    problem "the compiler's error line is missing: $(head -c 600 "$tmp/s1.err")"
grep -qF "failed (the start kernel $tmp/bad.c does not compile)" "$tmp/s1.out" ||
    problem "the summary's line: $(grep failed "$tmp/s1.out")"
end "a --from kernel that does not compile: exit 2, the file named, the compiler's lines shown"

# 2. a candidate with the wrong signature (an extra parameter; wrong types)
sed 's/float eps)/float eps, int extra)/' "$STARTER" >"$tmp/extra.c"
sed 's/int32_t rows, int32_t cols/int rows, double cols/' "$STARTER" >"$tmp/types.c"
begin
for f in extra types; do
    "$KILN" verify "$tmp/$f.c" --task rmsnorm --group decode --timing-ms 100 >"$tmp/$f.out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || problem "$f: exit $rc, expected 1: $(head -c 400 "$tmp/$f.out")"
    grep -qF "fail (stage compile, compile-error): the candidate's rmsnorm() does not match the task's signature: expected $SIG (kiln task show rmsnorm)" "$tmp/$f.out" ||
        problem "$f: no expected prototype: $(head -c 600 "$tmp/$f.out")"
    grep -qF "conflicting types for 'rmsnorm'" "$tmp/$f.out" ||
        problem "$f: the compiler's error is not shown: $(head -c 600 "$tmp/$f.out")"
done
"$KILN" task show rmsnorm | grep -qF "  $SIG;" || problem "kiln task show rmsnorm has another prototype"
end "a wrong signature: exit 1, the task's prototype beside the compiler's error"

t_done
