#!/usr/bin/env bash
# fleet_join_test.sh - `kiln search --fleet DIR` picks up a verifier that
# joins while the search runs (docs/fleet.md), without Slurm: the fleet's
# own job script (scripts/slurm/kilnd.sbatch, which runs alone too) starts
# kilnd on TCP with the fleet's token and writes its endpoint file. One
# daemon is up when the search starts; a second joins once the first has
# judged something; the search must send work to the second too, and every
# candidate is judged once.
#
# usage: fleet_join_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
command -v python3 >/dev/null || skip_all "python3 is needed to read the run database"

T=$tmp
pids=()
# A job script stops its kilnd on SIGTERM and waits for it: give them 5 s
# before the cleanup kills what is left.
stop_jobs() {
    local p i alive
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for ((i = 0; i < 50; i++)); do
        alive=
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=yes; done
        [ -n "$alive" ] || break
        sleep 0.1
    done
}
t_on_exit stop_jobs
cd "$SRC" || exit 2
export KILN_STATE=$T/own-state KILN_BIN=$BUILD KILN_FLEET_HOST=127.0.0.1
FLEET=$T/fleet
mkdir -p "$FLEET"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$FLEET/token"
chmod 600 "$FLEET/token"

# join NAME: the fleet's job script, alone (its job id is its pid), with
# its state under $T; waits for its endpoint file and sets EP to the
# endpoint ("none" if it did not come up). Not run in $(...): the job's
# pid must reach pids here, or cleanup leaves the job and its kilnd
# running after the test.
join() {
    mkdir -p "$T/node-$1"
    TMPDIR=$T/node-$1 bash "$SRC/scripts/slurm/kilnd.sbatch" "$FLEET" --devices cpu \
        >"$T/$1.out" 2>&1 &
    local pid=$!
    pids+=("$pid")
    EP=none
    for ((i = 0; i < 150; i++)); do
        if [ -s "$FLEET/endpoints/$pid.json" ]; then
            EP=$(json_get endpoint "$FLEET/endpoints/$pid.json")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
}

count_from() {   # ENDPOINT: verdicts in the run's database that it gave
    python3 - "$T/ws/.kiln/kiln.db" "$1" <<'PY' 2>/dev/null || echo 0
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
n = 0
for row in db.execute("select verdict, confirm_verdict, record_verdict from candidates"):
    for v in row:
        if v and json.loads(v).get("verifier", {}).get("endpoint") == sys.argv[2]:
            n += 1
print(n)
PY
}

begin
join a
A=$EP
[ "$A" != none ] || { problem "the first kilnd did not come up: $(cat "$T/a.out")"; }
if [ "$A" != none ]; then
    "$KILN" search rmsnorm --drafts 8 --iterations 6 --group decode --timing-ms 200 \
        --fleet "$FLEET" --workspace "$T/ws" >"$T/search.out" 2>&1 &
    search=$!
    B=none
    for ((i = 0; i < 1200; i++)); do
        kill -0 $search 2>/dev/null || break
        if [ "$(count_from "$A")" -ge 1 ]; then
            join b
            B=$EP
            break
        fi
        sleep 0.1
    done
    wait $search
    rc=$?
    [ $rc -eq 0 ] || problem "search: exit $rc: $(tail -5 "$T/search.out")"
    if [ "$B" = none ]; then
        problem "the second kilnd did not join while the search ran: $(cat "$T/b.out" 2>/dev/null)"
    else
        na=$(count_from "$A")
        nb=$(count_from "$B")
        [ "$nb" -ge 1 ] || problem "no verdict from $B, which joined mid-run ($na from $A)"
    fi
    got=$(python3 - "$T/ws/.kiln/kiln.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute("select n, job, verdict, state from candidates where n > 0").fetchall()
bad = [f"#{n} state {s} job '{j}' verdict {'yes' if v else 'no'}" for n, j, v, s in rows
       if s != "done" or (j and not v)]
jobs = [j for _, j, _, _ in rows if j]
dups = {j for j in jobs if jobs.count(j) > 1}
print("\n".join(bad + [f"job {j} shared" for j in dups]) if bad or dups else f"ok {len(rows)}")
PY
)
    case $got in
        "ok 48") ;;
        *) problem "every candidate judged once: $got" ;;
    esac
fi
end "kiln search --fleet: a kilnd that joins mid-run gets work; every candidate judged once"

t_done
