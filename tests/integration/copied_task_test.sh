#!/usr/bin/env bash
# copied_task_test.sh - a task copied under a new name: the reference keeps
# the old task's function name (a clear error saying what to rename), then
# uses the fixed name kiln_reference (works); a candidate that does not
# define the task's function fails to compile saying so.
#   copied_task_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
T=$tmp
export KILN_TASKS=$T/tasks
begin "a reference with the old name is named as such"
mkdir -p "$KILN_TASKS"
cp -r "$SRC/tasks/rmsnorm" "$KILN_TASKS/rms2"
mkdir -p "$KILN_TASKS/rms2/base"
sed 's/\brmsnorm(/rms2(/' "$SRC/kernels/rmsnorm/cpu/starter.c" >"$KILN_TASKS/rms2/base/starter.c"
cp "$SRC/kernels/rmsnorm/cuda/starter.cu" "$KILN_TASKS/rms2/base/starter.cu"
sed 's/"name": "rmsnorm"/"name": "rms2"/; s|"cpu": "../../kernels/rmsnorm/cpu/starter.c"|"cpu": "base/starter.c"|;
     s|"cuda": "../../kernels/rmsnorm/cuda/starter.cu"|"cuda": "base/starter.cu"|' \
    "$SRC/tasks/rmsnorm/task.json" >"$KILN_TASKS/rms2/task.json"
cp "$KILN_TASKS/rms2/base/starter.c" "$T/mine.c"

"$KILN" verify "$T/mine.c" --task rms2 --group decode --timing-ms 100 --no-daemon >"$T/a.out" 2>"$T/a.err"
rc=$?
[ $rc = 3 ] || fail "old reference name: exit $rc, expected 3: $(head -c 300 "$T/a.err")"
grep -q "defines neither rms2_reference nor kiln_reference" "$T/a.err" ||
    fail "the error does not say what to rename: $(head -c 300 "$T/a.err")"
grep -qi internal "$T/a.err" && fail "the error calls itself internal: $(head -c 300 "$T/a.err")"
end

begin "a reference named kiln_reference works in a copied task"

sed -i 's/rmsnorm_reference/kiln_reference/' "$KILN_TASKS/rms2/reference.c"
"$KILN" verify "$T/mine.c" --task rms2 --group decode --timing-ms 100 --no-daemon >"$T/b.out" 2>"$T/b.err"
rc=$?
[ $rc = 0 ] || fail "kiln_reference: exit $rc: $(tail -c 300 "$T/b.out") $(head -c 300 "$T/b.err")"
end

begin "a candidate without the task's function fails to compile, saying so"

"$KILN" verify "$SRC/kernels/rmsnorm/cpu/starter.c" --task rms2 --group decode --no-daemon --json \
    >"$T/c.json" 2>"$T/c.err"
rc=$?
[ $rc = 1 ] || fail "candidate without rms2(): exit $rc, expected 1"
grep -q "does not define rms2()" "$T/c.json" || fail "no word about rms2(): $(head -c 300 "$T/c.json")"
end
t_done
