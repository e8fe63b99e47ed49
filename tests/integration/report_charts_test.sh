#!/usr/bin/env bash
# report_charts_test.sh - what `kiln report` draws (issue 38, item 4), on two
# short CPU searches of rmsnorm in one workspace: reverted candidates, whose
# speedup against the baseline is an estimate, as hollow diamonds and kept
# ones as filled circles, the legend saying so, the best-so-far line only at
# kept points; the per-shape charts as steps (M, then H and V only); and
# `report --task` opening with the best kept kernel per visible shape across
# the runs, its numbers, run and candidate those sqlite3 reads from the
# database. report_check.py parses the pages (html.parser).
#
# usage: report_charts_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools python3 sqlite3
WS=$tmp/ws
DB=$WS/.kiln/kiln.db
CHECK=$SRC/tests/integration/report_check.py

# search N: a short search; its start kernel can be judged suspect on a
# loaded machine (the timer cross-checks), so it gets three tries.
search() {
    local attempt
    for attempt in 1 2 3; do
        "$KILN" search rmsnorm --iterations 3 --drafts 2 --timing-ms 100 --workspace "$WS" \
            >"$tmp/s$1.out" 2>"$tmp/s$1.err" </dev/null && return 0
    done
    problem "search $1 failed 3 times: $(tail -n 5 "$tmp/s$1.err")"
}

begin
search 1
search 2
stop_if_failed
NRUNS=$(sqlite3 "$DB" "SELECT count(*) FROM runs WHERE task='rmsnorm'")
LAST=$(sqlite3 "$DB" "SELECT id FROM runs ORDER BY id DESC LIMIT 1")
[ "$(sqlite3 "$DB" "SELECT count(*) FROM candidates WHERE run='$LAST' AND decision='revert'")" -gt 0 ] ||
    problem "run $LAST reverted nothing: no estimate to draw"
end "two short searches of rmsnorm in one workspace ($NRUNS runs)"

begin
"$KILN" report --workspace "$WS" -o "$tmp/run.html" >"$tmp/r.out" 2>&1 ||
    problem "kiln report exited $?: $(cat "$tmp/r.out")"
grep -qxF "wrote $tmp/run.html (1 run)" "$tmp/r.out" || problem "report said: $(cat "$tmp/r.out")"
sqlite3 "$DB" "SELECT n, decision FROM candidates WHERE run='$LAST' ORDER BY n" >"$tmp/cands"
python3 "$CHECK" runs "$tmp/run.html" "$tmp/cands" >"$tmp/check.out" 2>&1 ||
    problem "report_check.py runs:"$'\n'"$(cat "$tmp/check.out")"
end "one run: kept filled circles, reverted hollow diamonds, the legend, best-so-far at kept points, per-shape steps"

begin
"$KILN" report --task rmsnorm --workspace "$WS" -o "$tmp/task.html" >"$tmp/t.out" 2>&1 ||
    problem "kiln report --task exited $?: $(cat "$tmp/t.out")"
grep -qxF "wrote $tmp/task.html ($NRUNS runs)" "$tmp/t.out" || problem "report --task said: $(cat "$tmp/t.out")"
# Each visible shape of each kept candidate's verdict against the baseline
# (pooled, else the one record), over every run of the task.
sqlite3 "$DB" "SELECT c.run, c.n, json_extract(s.value, '\$.id'), json_extract(s.value, '\$.speedup')
    FROM candidates c JOIN runs r ON r.id = c.run,
         json_each(coalesce(c.pooled_verdict, c.record_verdict), '\$.shapes') s
    WHERE r.task = 'rmsnorm' AND c.decision = 'keep' AND json_extract(s.value, '\$.visible')
      AND json_extract(s.value, '\$.speedup') > 0" >"$tmp/shapes"
[ -s "$tmp/shapes" ] || problem "sqlite3 found no kept verdict at a visible shape"
python3 "$CHECK" task "$tmp/task.html" "$tmp/shapes" "$NRUNS" >"$tmp/check.out" 2>&1 ||
    problem "report_check.py task:"$'\n'"$(cat "$tmp/check.out")"
end "report --task: the across-runs table first, its best per shape, run and candidate as sqlite3 reads them"

# The checker can fail: a page with the old straight lines, filled
# estimates and no across table is caught.
begin
sed -e 's/class="est" \(data-n="[0-9]*" data-status="[a-z]*"\) fill="none"/class="est" \1 fill="#2b9348"/' \
    -e 's/H\([0-9.]*\)V/L\1,0V/' "$tmp/run.html" >"$tmp/bad.html"
python3 "$CHECK" runs "$tmp/bad.html" "$tmp/cands" >"$tmp/bad.out" 2>&1 && problem "a planted page passed"
grep -q "expected a hollow diamond" "$tmp/bad.out" || problem "filled estimates not caught: $(head -3 "$tmp/bad.out")"
grep -q "is not M then H/V steps" "$tmp/bad.out" || problem "a non-step path not caught: $(head -3 "$tmp/bad.out")"
python3 "$CHECK" task "$tmp/run.html" "$tmp/shapes" "$NRUNS" >"$tmp/bad.out" 2>&1 && problem "a page without the table passed"
grep -q "the first heading is \['run " "$tmp/bad.out" || problem "a missing table not caught: $(head -3 "$tmp/bad.out")"
end "report_check.py catches filled estimates, straight segments and a missing across table"

t_done
