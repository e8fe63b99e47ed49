#!/usr/bin/env bash
# task_new_test.sh - a task of one's own (issue 38, item 1): `kiln task new
# NAME --from TASK` copies a task under a name of its own, keeping its C
# function ("function" in task.json) so the original's kernels still verify,
# with paths that resolve wherever the copy lives; a task whose "function"
# is renamed is built, shown and verified by that name; a bad or taken name,
# an existing destination and an unknown task are refused (exit 2, named).
#
# usage: task_new_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

STARTER=$SRC/kernels/rmsnorm/cpu/starter.c


# verdict_is WHAT STATUS TASK FILE ARGS...: kiln verify FILE ARGS --json
# gives STATUS for TASK.
verdict_is() {
    local what=$1 want=$2 task=$3 file=$4 got
    shift 4
    "$KILN" verify "$file" --task "$task" --no-daemon --timing-ms 200 --json "$@" \
        >"$tmp/v.json" 2>"$tmp/v.err"
    got=$(json_get status "$tmp/v.json" 2>/dev/null)
    [ "$got" = "$want" ] ||
        problem "$what: status '$got', expected $want: $(head -c 400 "$tmp/v.json") $(head -c 300 "$tmp/v.err")"
    [ "$(json_get task "$tmp/v.json" 2>/dev/null)" = "$task" ] || problem "$what: verdict's task is not $task"
}

begin
"$KILN" task new mynorm --from rmsnorm --dir "$tmp/tasks" >"$tmp/new.out" 2>&1 ||
    problem "task new mynorm: exit $?: $(head -c 300 "$tmp/new.out")"
grep -qF "task mynorm: copied from rmsnorm to $tmp/tasks/mynorm (its C function is still rmsnorm)" \
    "$tmp/new.out" || problem "task new said: $(head -c 300 "$tmp/new.out")"
J=$tmp/tasks/mynorm/task.json
[ "$(json_get name "$J")" = mynorm ] || problem "name is $(json_get name "$J")"
[ "$(json_get function "$J")" = rmsnorm ] || problem "function is $(json_get function "$J")"
[ "$(json_get baseline.cpu "$J")" = "$(realpath "$STARTER")" ] ||
    problem "baseline.cpu is $(json_get baseline.cpu "$J"), expected the absolute starter"
[ "$(json_get reference.cpu "$J")" = reference.c ] || problem "reference.cpu is $(json_get reference.cpu "$J")"
cmp -s "$SRC/tasks/rmsnorm/reference.c" "$tmp/tasks/mynorm/reference.c" || problem "reference.c not copied"
cmp -s "$SRC/tasks/rmsnorm/hidden.json" "$tmp/tasks/mynorm/hidden.json" || problem "hidden.json not copied"
KILN_TASKS=$tmp/tasks "$KILN" task show mynorm >"$tmp/show.out" 2>&1 ||
    problem "task show mynorm: exit $?: $(head -c 300 "$tmp/show.out")"
head -1 "$tmp/show.out" | grep -qx "task mynorm (dtype f32)" || problem "show: $(head -1 "$tmp/show.out")"
grep -qF "  void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps);" \
    "$tmp/show.out" || problem "show lacks rmsnorm's signature: $(sed -n 5,6p "$tmp/show.out")"
KILN_TASKS=$tmp/tasks verdict_is "rmsnorm's starter on mynorm" pass mynorm "$STARTER"
end "task new mynorm --from rmsnorm: named mynorm, function rmsnorm, baseline absolute; shown and rmsnorm's starter passes"

begin
# without --dir: $KILN_TASKS/NAME, else ./tasks/NAME
KILN_TASKS=$tmp/tasks "$KILN" task new norm2 --from mynorm >/dev/null 2>"$tmp/err" ||
    problem "task new norm2 (KILN_TASKS): $(head -c 300 "$tmp/err")"
[ -f "$tmp/tasks/norm2/task.json" ] || problem "norm2 not in \$KILN_TASKS"
[ "$(json_get function "$tmp/tasks/norm2/task.json")" = rmsnorm ] || problem "norm2 lost the function"
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && env -u KILN_TASKS "$KILN" task new norm3 --from "$tmp/tasks/norm2") >/dev/null 2>"$tmp/err" ||
    problem "task new norm3 (cwd): $(head -c 300 "$tmp/err")"
[ -f "$tmp/cwd/tasks/norm3/task.json" ] || problem "norm3 not in ./tasks"
"$KILN" task show "$tmp/cwd/tasks/norm3" >"$tmp/show.out" 2>&1 || problem "show norm3: $(head -c 300 "$tmp/show.out")"
KILN_TASKS=$tmp/cwd/tasks verdict_is "rmsnorm's starter on a copy of a copy" pass norm3 "$STARTER"
end "without --dir the copy goes to \$KILN_TASKS/NAME, else ./tasks/NAME; a copy of a copy (a directory) keeps the function and verifies"

begin
# A task whose function is renamed: the wrapper, signature, reference and
# the missing-function verdict go by "function".
F=$tmp/tasks/fnorm
"$KILN" task new fnorm --from rmsnorm --dir "$tmp/tasks" >/dev/null 2>&1 || problem "task new fnorm"
sed 's/void rmsnorm(/void fnorm_fn(/' "$STARTER" >"$F/base.c"
sed -i 's/rmsnorm_reference/fnorm_fn_reference/' "$F/reference.c"
python3 -S -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["function"]="fnorm_fn"; d["baseline"]["cpu"]="base.c"; json.dump(d,open(p,"w"))' "$F/task.json"
KILN_TASKS=$tmp/tasks "$KILN" task show fnorm >"$tmp/show.out" 2>&1 || problem "show fnorm: $(head -c 300 "$tmp/show.out")"
grep -qF "  void fnorm_fn(const float *x," "$tmp/show.out" || problem "show fnorm: $(sed -n 5,6p "$tmp/show.out")"
KILN_TASKS=$tmp/tasks verdict_is "fnorm_fn kernel" pass fnorm "$F/base.c"
KILN_TASKS=$tmp/tasks verdict_is "rmsnorm kernel on fnorm" fail fnorm "$STARTER"
[ "$(json_get reason "$tmp/v.json")" = "the candidate does not define fnorm_fn(), the task's function (kiln task show fnorm)" ] ||
    problem "reason: $(json_get reason "$tmp/v.json")"
python3 -S -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["function"]="fnorm-fn"; json.dump(d,open(p,"w"))' "$F/task.json"
KILN_TASKS=$tmp/tasks t_refused "bad function" "/fnorm/task.json: field 'function': 'fnorm-fn' is not a C identifier" \
    task show fnorm
end "\"function\": fnorm_fn: shown, built and verified by it, a kernel without it named; a bad one refused naming task.json and the field"

begin
# The copy's own name: its branch, best tag and export are mynorm's; the
# exported kernel renames the function it defines (rmsnorm).
WS=$tmp/ws
KILN_TASKS=$tmp/tasks "$KILN" search mynorm --iterations 3 --group decode --timing-ms 200 \
    --workspace "$WS" >"$tmp/search.out" 2>&1 </dev/null || problem "search mynorm: exit $?: $(tail -c 400 "$tmp/search.out")"
git -C "$WS" branch --list 'kiln/*' >"$tmp/branches"
grep -q '^[* ] kiln/mynorm/' "$tmp/branches" || problem "no kiln/mynorm branch: $(cat "$tmp/branches")"
! grep -q 'rmsnorm' "$tmp/branches" || problem "a rmsnorm branch: $(cat "$tmp/branches")"
[ "$(git -C "$WS" tag --list 'kiln/best/*')" = kiln/best/mynorm/cpu/f32 ] ||
    problem "best tags: $(git -C "$WS" tag --list 'kiln/best/*' | tr '\n' ' ')"
KILN_TASKS=$tmp/tasks "$KILN" export --task mynorm -o "$tmp/ex" --workspace "$WS" >"$tmp/ex.out" 2>&1 ||
    problem "export mynorm: exit $?: $(tail -c 400 "$tmp/ex.out")"
grep -qx '#define rmsnorm mynorm_k1' "$tmp/ex/mynorm_k1.c" 2>/dev/null ||
    problem "mynorm_k1.c does not rename rmsnorm: $(head -5 "$tmp/ex/mynorm_k1.c" 2>&1)"
cc -std=c17 -Wall -Wextra -Werror -O1 -shared -fPIC -I"$tmp/ex" -I"$SRC/worker/cpu" "$tmp/ex"/*.c -lm \
    -o "$tmp/ex.so" 2>"$tmp/cc.err" || problem "the export does not compile: $(head -c 400 "$tmp/cc.err")"
nm -D "$tmp/ex.so" | grep -q ' T mynorm_dispatch$' || problem "the export has no mynorm_dispatch"
end "a search of mynorm keeps its own branch and best tag; its export renames the kernel's rmsnorm"

begin
before=$(cat "$J")
t_refused "existing destination" "kiln task new: $tmp/tasks/mynorm already exists" \
    task new mynorm --from rmsnorm --dir "$tmp/tasks"
[ "$(cat "$J")" = "$before" ] || problem "existing destination: task.json changed"
KILN_TASKS=$tmp/tasks t_refused "existing destination (KILN_TASKS)" "$tmp/tasks/mynorm already exists" \
    task new mynorm --from softmax
t_refused "bad name" "kiln task new: 'my-norm' is not a task name" task new my-norm --from rmsnorm --dir "$tmp/tasks"
t_refused "digit first" "'2norm' is not a task name" task new 2norm --from rmsnorm --dir "$tmp/tasks"
t_refused "built-in name" "a task named 'softmax' already exists ($SRC/tasks/softmax)" \
    task new softmax --from rmsnorm --dir "$tmp/other"
t_refused "unknown --from" "kiln task new: --from nosuch: no task named 'nosuch'" \
    task new mine --from nosuch --dir "$tmp/other"
t_refused "no --from" "kiln task new: --from TASK missing" task new mine --dir "$tmp/other"
t_refused "no NAME" "kiln task new: NAME missing" task new --from rmsnorm
t_refused "unknown flag" "unexpected argument '--bogus'" task new mine --from rmsnorm --bogus
[ ! -e "$tmp/other" ] && [ ! -e "$tmp/tasks/my-norm" ] && [ ! -e "$tmp/tasks/2norm" ] ||
    problem "a refusal left a directory behind"
end "refused with exit 2 and named: existing destination (untouched), bad name, a built-in task's name, unknown or missing --from, missing NAME, unknown flag"

t_done
