#!/usr/bin/env bash
# pipeline_test.sh - a search hands every draft of an iteration to kilnd
# before it waits for the first verdict (issue 14: pipelining), so kilnd
# can compile one while it times another. A tune search with --drafts 3
# runs one iteration through a kilnd of its own; kilnd writes each job's
# idempotency key when it accepts the job and its result when it ends, so
# every draft's key must predate the first draft's result. The same run
# with --no-daemon verifies the drafts one by one and must decide the same
# way (each draft verified once: one job per draft, none twice).
#   pipeline_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -eo pipefail
T=$tmp

begin "all three drafts were with kilnd before the first verdict"
"$KILN" search rmsnorm --drafts 3 --iterations 1 --group decode --timing-ms 200 \
    --socket "$T/k.sock" --workspace "$T/ws" > "$T/out.txt" 2>&1 || fail "search:"$'\n'"$(cat "$T/out.txt")"
"$KILN" daemon stop --socket "$T/k.sock" > /dev/null
py=$(python3 - "$T/ws/.kiln/kiln.db" "$KILN_STATE" 2>&1 <<'PY'
import os, sqlite3, sys
db, state = sys.argv[1], sys.argv[2]
rows = sqlite3.connect(db).execute(
    "select n, job from candidates where iteration = 1 order by n").fetchall()
jobs = [j for _, j in rows]
if len(jobs) != 3 or not all(jobs):
    sys.exit(f"expected 3 drafts with a job each, got {rows}")
if len(set(jobs)) != 3:
    sys.exit(f"a draft was verified under another's job: {jobs}")
keyed = {}
for k in os.listdir(os.path.join(state, "keys")):
    p = os.path.join(state, "keys", k)
    keyed[open(p).read().strip()] = os.stat(p).st_mtime_ns
first_result = min(os.stat(os.path.join(state, "results", j + ".json")).st_mtime_ns for j in jobs)
late = [j for j in jobs if keyed.get(j, 1 << 62) > first_result]
if late:
    sys.exit(f"drafts {late} reached kilnd only after a draft's verdict: not pipelined")
PY
) || fail "$py"
end

begin "the lane's busy share: said by the summary, kept by the run, within the lane's time"

# How busy kilnd's lane was (search lane_busy.h): the summary says it, the
# run row keeps the seconds, and they are no more than the lane's time.
grep -Eq 'verifier lanes busy [0-9.]+%' "$T/out.txt" ||
    fail "the summary does not say how busy the verifier's lanes were:"$'\n'"$(cat "$T/out.txt")"
py=$(python3 - "$T/ws/.kiln/kiln.db" 2>&1 <<'PY'
import sqlite3, sys
busy, lane, used = sqlite3.connect(sys.argv[1]).execute(
    "select lane_busy_s, lane_s, seconds_used from runs").fetchone()
# one cpu lane, asked at the session's start and end: its lane-seconds are
# that span, within the run's wall time; three drafts and the start kernel
# were timed on it, so it was busy for part of it
if not (lane and 0 < lane <= used + 1):
    sys.exit(f"lane_s {lane} for a run of {used} s on one lane")
if not (busy and 0 < busy <= lane):
    sys.exit(f"lane_busy_s {busy} of lane_s {lane}")
print(f"the lane was busy {busy:.1f} of {lane:.1f} s")
PY
) || fail "$py"
end "$py"

begin "an in-process search reports no lane share"

# In process there is no lane to ask: the summary claims nothing.
"$KILN" search rmsnorm --drafts 2 --iterations 1 --group decode --timing-ms 200 \
    --no-daemon --workspace "$T/ws2" > "$T/out2.txt" 2>&1 || fail "search --no-daemon:"$'\n'"$(cat "$T/out2.txt")"
! grep -q 'lanes busy' "$T/out2.txt" || fail "an in-process search reports lanes busy"
end
t_done
