#!/usr/bin/env bash
# search_slow_verify_test.sh - `kiln search --budget 1s` with a slow verification: the run
# stops on time, the job goes on in kilnd, and --resume collects its
# verdict. The deadline is measured: it takes turns with the timing tests.
# (search_common.sh holds what the search tests share.)
#
# usage: search_slow_verify_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# (Section 9's slow verification, here: its start kernel's calls take
# 50 ms each, slept out.)
# A verification still running when the budget ends is not waited for: the
# run stops on time, the job goes on in kilnd, and --resume collects its
# verdict instead of verifying the start kernel again.
begin
WS9B=$tmp/ws9b
DB9B=$WS9B/.kiln/kiln.db
# slow_rmsnorm.c takes 100 ms a call: its verification takes seconds
# on any machine (a fast kernel's timing may settle within the second).
# Here a copy waits 50 ms a call: its verification (record, then the
# re-record after --resume) still takes over 3 s of waiting alone, on any
# machine, three times the budget, where 200 ms a call and a 4 s timing
# budget took 13 s a job. Were it done before the deadline, the summary's
# reason below would say so and the check fail.
sed 's/now_s() + 0\.1;/now_s() + 0.05;/' "$SRC/tests/integration/slow_rmsnorm.c" >"$tmp/slow50.c"
grep -q 'now_s() + 0\.05;' "$tmp/slow50.c" || problem "could not make the 50 ms copy of slow_rmsnorm.c"
kiln "$tmp/9b.json" "$tmp/9b.err" search rmsnorm --budget 1s --workspace "$WS9B" --json \
    --group decode --timing-ms 1000 --from "$tmp/slow50.c"
[ "$RC" -eq 0 ] || problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/9b.err")"
grep '"event":"summary"' "$tmp/9b.json" | grep -q '"reason":"time budget reached (a verification' ||
    problem "no summary naming the running verification: $(grep summary "$tmp/9b.json" | head -c 300)"
used=$(sq "$DB9B" "SELECT seconds_used FROM runs")
awk -v u="${used:-9}" 'BEGIN {exit !(u <= 1.2)}' ||
    problem "the run used ${used}s of a 1 s budget while a slow verification ran"
job=$(sq "$DB9B" "SELECT record_job FROM candidates WHERE n=0")
st=$(sq "$DB9B" "SELECT state FROM candidates WHERE n=0")
[ -n "$job" ] && [ "$st" = proposed ] ||
    problem "candidate 0 has job '$job' and state '$st', expected a job and 'proposed'"
kiln "$tmp/9c.out" "$tmp/9c.err" search --workspace "$WS9B" --resume last --budget 60s --iterations 1
[ "$RC" -eq 0 ] || problem "resume: exit $RC, expected 0"$'\n'"$(tail_of "$tmp/9c.err")"
again=$(sq "$DB9B" "SELECT record_job || ' ' || state FROM candidates WHERE n=0")
[ "$again" = "$job done" ] || problem "after the resume candidate 0 is '$again', expected '$job done'"
[ -n "$job" ] && c=$(grep -c " job $job " "$DAEMONLOG") && [ "$c" = 1 ] ||
    problem "kilnd ran job $job ${c:-0} times, expected once"
consistent "$WS9B" "$(last_run "$WS9B")"
end "--budget 1s with a slow verification: stops at 1 s, the job goes on, --resume collects it"

t_done
