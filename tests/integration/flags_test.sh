#!/usr/bin/env bash
# flags_test.sh - flags that tell the truth (issue 38, item 3): a duration
# with a bare number after a unit (--budget 1h30), --iterations 0 and
# --timing-ms 0 are refused with the right spelling; `task list` refuses
# what it does not take; a mistyped flag or task name gets "did you mean".
# Every refusal is exit 2, before any workspace exists. No timing.
#
# usage: flags_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

# refused WHAT WANT ARGS...: t_refused, and no workspace was made.
refused() {
    rm -rf "$tmp/ws"
    t_refused "$@"
    [ ! -e "$tmp/ws" ] || problem "$1: a workspace was made"
}

begin
refused "--budget 1h30" "'1h30' (a number after a unit needs one too: 1h30m)" \
    search rmsnorm --budget 1h30 --workspace "$tmp/ws"
refused "--budget 2m30" "needs one too: 2m30s" search rmsnorm --budget 2m30 --workspace "$tmp/ws"
refused "--budget 30m1h" "a duration such as 90s, 30m, 8h or 1h30m" \
    search rmsnorm --budget 30m1h --workspace "$tmp/ws"
refused "--budget 1h1h" "a duration such as" search rmsnorm --budget 1h1h --workspace "$tmp/ws"
refused "--budget 0" "bad value for --budget" search rmsnorm --budget 0 --workspace "$tmp/ws"
refused "--model-failure-window 5m3" "needs one too: 5m3s" \
    search rmsnorm --model-failure-window 5m3 --workspace "$tmp/ws"
# The durations that are right pass the parser: the next refusal is the task's.
for d in 90 90s 30m 8h 1h30m 1.5h 1h2m3s; do
    refused "--budget $d" "no task named 'nosuchtask'" search nosuchtask --budget "$d" --workspace "$tmp/ws"
done
end "durations: a bare number after a unit, units out of order or twice, and zero refused, naming the spelling; 90, 30m, 1h30m, 1.5h taken"

begin
refused "--iterations 0" "(1 or more; leave the flag out for no limit)" \
    search rmsnorm --iterations 0 --workspace "$tmp/ws"
refused "--timing-ms 0 (search)" "bad value for --timing-ms: '0'" \
    search rmsnorm --timing-ms 0 --workspace "$tmp/ws"
refused "--timing-ms 0 (verify)" "--timing-ms needs a positive integer" \
    verify "$SRC/kernels/rmsnorm/cpu/starter.c" --task rmsnorm --timing-ms 0
refused "--timing-ms 0 (reverify)" "bad value for --timing-ms" reverify --timing-ms 0 --workspace "$tmp/ws"
refused "task list --bogus" "unexpected argument '--bogus'" task list --bogus
"$KILN" task list >"$tmp/list.out" 2>&1 && grep -q '^rmsnorm ' "$tmp/list.out" ||
    problem "task list: $(head -3 "$tmp/list.out")"
end "--iterations 0, --timing-ms 0 (search, verify, reverify) and task list --bogus: exit 2, named"

begin
refused "search --iteratons" "unknown flag '--iteratons'; did you mean '--iterations'?" \
    search rmsnorm --iteratons 3 --workspace "$tmp/ws"
refused "search --no-deamon" "did you mean '--no-daemon'?" search rmsnorm --no-deamon --workspace "$tmp/ws"
refused "verify --taks" "did you mean '--task'?" verify "$SRC/kernels/rmsnorm/cpu/starter.c" --taks rmsnorm
refused "status --jsn" "unknown flag '--jsn'; did you mean '--json'?" status --jsn
refused "status --frob" "unexpected argument '--frob'" status --frob
refused "search --frobnicate" "unexpected argument '--frobnicate' (kiln search --help lists the flags)" \
    search rmsnorm --frobnicate --workspace "$tmp/ws"
refused "search rmsnrom" "no task named 'rmsnrom'; did you mean 'rmsnorm'?" \
    search rmsnrom --workspace "$tmp/ws"
refused "task show layernrom" "did you mean 'layernorm'?" task show layernrom
refused "search conv9d" "no task named 'conv9d' (looked in" search conv9d --workspace "$tmp/ws"
# a task of one's own is offered too ($KILN_TASKS)
mkdir -p "$tmp/tasks/mynorm"
KILN_TASKS=$tmp/tasks refused "search mynrom" "did you mean 'mynorm'?" search mynrom --workspace "$tmp/ws"
end "a mistyped flag or task name: did you mean (flags from the command's usage, tasks from \$KILN_TASKS and the built-in ones); none offered when none is close"

t_done
