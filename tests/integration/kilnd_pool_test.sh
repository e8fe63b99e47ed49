#!/usr/bin/env bash
# kilnd_pool_test.sh - one search over two kilnds (kiln search --verifiers
# A,B; docs/fleet.md), without Slurm: two daemons on Unix sockets with CPU
# lanes, a tune search with 8 drafts an iteration. Verdicts must come from
# both; then one daemon is killed (SIGKILL) while it holds jobs of the
# search, and the search must finish on the other with every candidate
# judged exactly once: a verdict each, each job id naming the daemon whose
# verdict is recorded, none of the killed daemon's unfinished jobs left
# in the record, no job shared by two candidates. kiln status shows both
# verifiers' throughput. Then a daemon that lost its state (stopped, its
# state directory deleted, a new one on the same socket numbering jobs
# afresh): after --resume every candidate has a verdict of its own source
# (source_sha256 against the stored source), none another's. Then a fleet
# directory with malformed endpoint files: each named, the search goes on.
# Also the errors: a malformed ADDR (exit 2) and an ADDR where nothing
# answers (exit 3), each named.
#
# usage: kilnd_pool_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
command -v python3 >/dev/null || skip_all "python3 is needed to read the run database"
T=$tmp
cd "$SRC" || exit 2
export KILN_STATE=$T/own-state   # no daemon of the user's is touched

# ---- errors -------------------------------------------------------------------

begin
out=$("$KILN" search rmsnorm --verifiers "$T/a.sock,tcp://localhost" --workspace "$T/ws0" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "address 2 ('tcp://localhost')" <<<"$out" || problem "no port: exit $rc: $out"
out=$("$KILN" search rmsnorm --verifiers "$T/a.sock,,$T/b.sock" --workspace "$T/ws0" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "address 2 (''): an empty address" <<<"$out" || problem "empty: exit $rc: $out"
out=$("$KILN" search rmsnorm --verifiers "$T/nobody.sock" --workspace "$T/ws0" 2>&1)
rc=$?
[ $rc -eq 3 ] && grep -q "verifier $T/nobody.sock (1 of 1) does not answer" <<<"$out" ||
    problem "nothing there: exit $rc: $out"
out=$("$KILN" search rmsnorm --verifiers "$T/a.sock" --socket "$T/a.sock" --workspace "$T/ws0" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "give one of --socket, --verifiers" <<<"$out" || problem "with --socket: exit $rc: $out"
[ ! -e "$T/a.sock" ] || problem "a kilnd was started on demand at an ADDR of --verifiers"
out=$("$KILN" search rmsnorm --fleet "$T/no-fleet" --workspace "$T/ws0" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "no-fleet is not a fleet directory" <<<"$out" || problem "--fleet: exit $rc: $out"
end "errors: a malformed or empty ADDR (exit 2), one where nothing answers (exit 3), each named"

# ---- two daemons, one search ----------------------------------------------------

start_kilnd() {   # NAME
    "$KILND" --foreground --socket "$T/$1.sock" --state "$T/st-$1" --devices cpu --compile-jobs 2 \
        >"$T/$1.log" 2>&1 &
    t_bg $!
    T_SOCKETS+=("$T/$1.sock")   # t_done stops it gracefully: its leak check runs
    eval "PID_$1=$!"
    for ((i = 0; i < 100; i++)); do
        [ -S "$T/$1.sock" ] && return 0
        sleep 0.1
    done
    echo "$0: kilnd $1 did not start: $(cat "$T/$1.log")" >&2
    exit 1
}
start_kilnd a
start_kilnd b

# count_from_db WS ENDPOINT: verdicts in WS's run database that ENDPOINT gave.
count_from() { count_from_db "$T/ws" "$1"; }
count_from_db() {
    python3 - "$1/.kiln/kiln.db" "$2" <<'PY' 2>/dev/null || echo 0
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

"$KILN" search rmsnorm --drafts 8 --iterations 4 --group decode --timing-ms 200 \
    --verifiers "$T/a.sock,$T/b.sock" --workspace "$T/ws" >"$T/search.out" 2>&1 &
search_pid=$!
t_bg $search_pid

# Kill a once both have judged something and a holds jobs of the search
# that it has not finished (its spool): those must be judged by b.
killed=""
for ((i = 0; i < 1200; i++)); do
    kill -0 $search_pid 2>/dev/null || break
    if [ "$(count_from "$T/a.sock")" -ge 1 ] && [ "$(count_from "$T/b.sock")" -ge 1 ]; then
        if [ "$(ls "$T/st-a/spool" 2>/dev/null | grep -c '\.json$')" -ge 2 ]; then
            kill -9 "$PID_a"
            wait "$PID_a" 2>/dev/null
            # Unfinished: spooled, no result stored (a result is stored
            # before its spool entry goes).
            for f in "$T"/st-a/spool/j*.json; do
                id=$(basename "$f" .json)
                [ -e "$T/st-a/results/$id.json" ] || killed="$killed $id"
            done
            [ -n "$killed" ] && break
        fi
    fi
    sleep 0.1
done
wait $search_pid
rc=$?

begin
[ -n "$killed" ] || problem "never saw both daemons judge and a hold two unfinished jobs; output: $(tail -5 "$T/search.out")"
[ $rc -eq 0 ] || problem "the search exited $rc: $(tail -8 "$T/search.out")"
grep -q "done (iteration budget reached)" "$T/search.out" || problem "the search did not finish its 4 iterations: $(tail -8 "$T/search.out")"
end "a search over two kilnds finishes after one of them is killed while it holds jobs"

begin
result=$(python3 - "$T/ws/.kiln/kiln.db" "$T/a.sock" "$T/b.sock" "$killed" <<'PY' 2>&1
import json, sqlite3, sys
db, a, b, killed = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
def tag(addr):   # kilnd_pool.c: 12 hex digits of FNV-1a 64
    h = 1469598103934665603
    for ch in addr.encode():
        h = ((h ^ ch) * 1099511628211) & (2**64 - 1)
    return "%012x" % (h & 0xffffffffffff)
tags = {tag(a): a, tag(b): b}
con = sqlite3.connect(db)
cols = {r[1] for r in con.execute("pragma table_info(candidates)")}
steps = ["", "confirm_", "record_"] + (["rerecord_"] if "rerecord_job" in cols else [])
names = [s.rstrip("_") or "verdict" for s in steps]
rows = con.execute("select n, state, " + ", ".join(f"{s}job, {s}verdict" for s in steps) +
                   " from candidates order by n").fetchall()
bad, by = [], {a: 0, b: 0}
seen = set()
for n, state, *cells in rows:
    if state != "done":
        bad.append(f"#{n} is {state}, not done")
    for which, (job, verdict) in zip(names, zip(cells[0::2], cells[1::2])):
        if not job and not verdict:
            continue
        if n > 0 and which == "verdict" and not verdict:
            bad.append(f"#{n}: job {job} but no verdict")
            continue
        if not job or not verdict:
            bad.append(f"#{n} {which}: job {job!r}, verdict {'yes' if verdict else 'none'}")
            continue
        raw, _, t = job.partition("@")
        ep = json.loads(verdict).get("verifier", {}).get("endpoint")
        if tags.get(t) != ep:
            bad.append(f"#{n} {which}: job {job} names {tags.get(t)} but {ep} judged it")
        if t == tag(a) and raw in killed:
            bad.append(f"#{n} {which}: job {job} was unfinished on the killed daemon, yet recorded")
        if job in seen:
            bad.append(f"#{n} {which}: job {job} is another candidate's too")
        seen.add(job)
        by[ep] = by.get(ep, 0) + 1
drafts = [r for r in rows if r[0] > 0]
if len(drafts) != 32:
    bad.append(f"{len(drafts)} candidates, expected 32 (4 iterations of 8 drafts)")
if not by[a] or not by[b]:
    bad.append(f"verdicts by endpoint: {by}")
print("\n".join(bad) if bad else f"ok {by[a]} {by[b]}")
PY
)
case $result in
    ok*) echo "# verdicts: $(cut -d' ' -f2 <<<"$result") from a (killed), $(cut -d' ' -f3 <<<"$result") from b" ;;
    *) problem "$result" ;;
esac
end "every candidate judged once: a verdict each from the daemon its job names, the killed daemon's unfinished jobs judged elsewhere"

begin
out=$("$KILN" status --workspace "$T/ws" 2>&1)
grep -q "^verifiers: 2 (verdicts per hour" <<<"$out" || problem "no verifiers line: $out"
for s in a b; do
    grep -qE "^  $T/$s.sock +[^,]+, lanes cpu: [0-9]+ verdicts?, [0-9]+/h, [0-9.]+ s each$" <<<"$out" ||
        problem "no throughput line for $s: $(grep -A3 '^verifiers' <<<"$out")"
done
end "kiln status: verdicts per hour of each verifier"

# ---- a daemon that lost its state: the sha256 guard ---------------------------------
# A search over c and d is killed (kill -9) while candidates hold job ids
# of c with no verdict yet; c stops (SIGTERM), its state directory is
# deleted, and a new kilnd starts on the same socket with a fresh one, so
# it numbers its jobs afresh. Other jobs (another source) are put in it
# first, so that each recorded id of c names one of them there; the resumed
# search must find that those verdicts are not of its candidates' sources
# (source_sha256) and send the sources again: every candidate ends with a
# verdict of its own source.

start_kilnd c
start_kilnd d
# pending DB TAG: "N STEP JOB" of each step whose job id has TAG and no verdict.
pending() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
cols = {r[1] for r in con.execute("pragma table_info(candidates)")}
for s in ["", "confirm_", "record_", "rerecord_"]:
    if f"{s}job" not in cols:
        continue
    for n, job in con.execute(f"select n, {s}job from candidates where {s}job like ? and {s}verdict is null",
                              ("%@" + sys.argv[2],)):
        print(n, s or "verdict_", job)
PY
}
tag_c=$(python3 -c '
import sys
h = 1469598103934665603
for ch in sys.argv[1].encode():
    h = ((h ^ ch) * 1099511628211) & (2**64 - 1)
print("%012x" % (h & 0xffffffffffff))' "$T/c.sock")
"$KILN" search rmsnorm --drafts 8 --iterations 3 --group decode --timing-ms 200 \
    --verifiers "$T/c.sock,$T/d.sock" --workspace "$T/ws2" >"$T/search2.out" 2>&1 &
search_pid=$!
t_bg $search_pid
held=""
for ((i = 0; i < 1200; i++)); do
    kill -0 $search_pid 2>/dev/null || break
    if [ "$(count_from_db "$T/ws2" "$T/c.sock")" -ge 1 ]; then
        held=$(pending "$T/ws2/.kiln/kiln.db" "$tag_c")
        if [ "$(grep -c . <<<"$held")" -ge 2 ]; then
            kill -9 $search_pid
            wait $search_pid 2>/dev/null
            held=$(pending "$T/ws2/.kiln/kiln.db" "$tag_c")   # as the killed search left it
            break
        fi
        held=""
    fi
    sleep 0.1
done
kill -TERM "$PID_c"
wait "$PID_c" 2>/dev/null
rm -rf "$T/st-c"
start_kilnd c
# Fill the new c up to the highest raw id recorded for c, with another source.
top=$(sed -n 's/.* j0*\([0-9][0-9]*\)@.*/\1/p' <<<"$held" | sort -n | tail -1)
{ echo "/* another source: not a candidate of the search */"; cat "$SRC/tasks/rmsnorm/reference.c"; } >"$T/other.c"
vpids=()
for ((k = 0; k < ${top:-0}; k++)); do
    "$KILN" verify "$T/other.c" --task rmsnorm --group decode --timing-ms 100 --socket "$T/c.sock" \
        >"$T/other-$k.out" 2>&1 &
    vpids+=($!)
done
vbad=0
for p in "${vpids[@]}"; do wait "$p" || [ $? -eq 1 ] || vbad=$((vbad + 1)); done
"$KILN" search --resume last --verifiers "$T/c.sock,$T/d.sock" --workspace "$T/ws2" \
    >"$T/search3.out" 2>&1
rc=$?

begin
[ -n "$held" ] || problem "never saw two steps hold a job of c without a verdict; output: $(tail -5 "$T/search2.out")"
[ -n "$top" ] && [ "$vbad" -eq 0 ] || problem "filling the new c with $top jobs: $vbad failed ($(cat "$T"/other-0.out 2>/dev/null | tail -3))"
[ $rc -eq 0 ] || problem "the resumed search exited $rc: $(tail -8 "$T/search3.out")"
grep -q "done (iteration budget reached)" "$T/search3.out" || problem "the resumed search did not finish: $(tail -8 "$T/search3.out")"
result=$(python3 - "$T/ws2/.kiln/kiln.db" "$held" <<'PY' 2>&1
import hashlib, json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
held = [l.split() for l in sys.argv[2].splitlines() if l.strip()]
cols = {r[1] for r in con.execute("pragma table_info(candidates)")}
steps = [s for s in ["", "confirm_", "record_", "rerecord_"] if f"{s}job" in cols]
rows = con.execute("select n, state, source, " + ", ".join(f"{s}job, {s}verdict" for s in steps) +
                   " from candidates order by n").fetchall()
bad, jobs, checked = [], {}, 0
for n, state, source, *cells in rows:
    if state != "done":
        bad.append(f"#{n} is {state}, not done")
    if n > 0 and not cells[1]:
        bad.append(f"#{n} has no verdict")
    sha = hashlib.sha256(source.encode()).hexdigest() if source else None
    for s, job, verdict in zip(steps, cells[0::2], cells[1::2]):
        if not verdict:
            continue
        got = json.loads(verdict).get("source_sha256")
        if sha is None or got != sha:
            bad.append(f"#{n} {s or 'verdict_'}: job {job}: verdict of source {got}, candidate's is {sha}")
        checked += 1
        if job in jobs:
            bad.append(f"#{n} {s or 'verdict_'}: job {job} is also #{jobs[job]}'s")
        jobs[job] = n
now = {(str(n), s or "verdict_"): cells for n, _, _, *cells in rows for s in steps}
for n, step, job in held:
    cells = now.get((n, step))
    if cells and cells[steps.index("" if step == "verdict_" else step) * 2] == job:
        bad.append(f"#{n} {step}: still job {job}, which the new daemon gave to another source")
drafts = [r for r in rows if r[0] > 0]
if len(drafts) != 24:
    bad.append(f"{len(drafts)} candidates, expected 24 (3 iterations of 8 drafts)")
print("\n".join(bad) if bad else f"ok {checked} {len(held)}")
PY
)
case $result in
    ok*) echo "# $(cut -d' ' -f2 <<<"$result") verdicts checked, $(cut -d' ' -f3 <<<"$result") jobs of c re-sent" ;;
    *) problem "$result" ;;
esac
end "a daemon that lost its state: every candidate a verdict of its own source (sha256), none another's"

# ---- a fleet directory with a malformed endpoint file ---------------------------------

mkdir -p "$T/fleet/endpoints"
(umask 077 && echo "not-used-by-unix-sockets" >"$T/fleet/token")
printf '{"endpoint":"%s","host":"here","lanes":["cpu"]}\n' "$T/d.sock" >"$T/fleet/endpoints/good.json"
printf '{"endpoint":"%s",' "$T/c.sock" >"$T/fleet/endpoints/broken.json"
printf '{"endpoint":"tcp://nowhere:0"}\n' >"$T/fleet/endpoints/badport.json"
"$KILN" search rmsnorm --drafts 2 --iterations 1 --group decode --timing-ms 200 \
    --fleet "$T/fleet" --workspace "$T/ws3" >"$T/search4.out" 2>&1
rc=$?
begin
[ $rc -eq 0 ] || problem "the search exited $rc: $(tail -5 "$T/search4.out")"
grep -q "^kiln search: --fleet: skipping what is not an endpoint file: .*$T/fleet/endpoints/broken.json: not JSON" \
    "$T/search4.out" || problem "broken.json not named: $(head -3 "$T/search4.out")"
grep -q "$T/fleet/endpoints/badport.json: endpoint 'tcp://nowhere:0': the port must be" "$T/search4.out" ||
    problem "badport.json not named: $(head -3 "$T/search4.out")"
n=$(count_from_db "$T/ws3" "$T/d.sock")
[ "$n" -ge 2 ] || problem "$n verdicts from the good endpoint, expected 2 drafts' at least"
n=$(count_from_db "$T/ws3" "$T/c.sock")
[ "$n" -eq 0 ] || problem "$n verdicts from c, named only by the broken file"
end "a fleet with malformed endpoint files: each named with why, the search goes on with the good one"

t_done
