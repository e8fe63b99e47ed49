#!/usr/bin/env bash
# fleet_slurm_test.sh - kiln fleet against a real, private, single-node Slurm:
# munge with its own key and socket, slurmctld and slurmd on private ports, all
# in a temp directory. Two kilnd jobs on CPU lanes come up through
# `kiln fleet up --slurm`; each verifies a kernel over TCP with the fleet's
# token; `kiln search --fleet` runs 8 drafts an iteration over both, one is
# scancelled mid-run and the search finishes on the other with every
# candidate judged once; fleet status reports the cancelled one down while
# the other still verifies; `kiln fleet down` cancels the rest. Also the errors: a bad
# fleet directory, a token with a wrong mode, no sbatch or scancel.
#
# usage: fleet_slurm_test.sh BUILD_DIR SOURCE_DIR
#
# Exits 77 (skipped, with the reason) where Slurm daemons cannot run here:
# not root, slurm-wlm or munge missing (scripts/setup.sh installs them), or
# the daemons do not start. Kills every daemon it started, even on failure.
. "$(dirname "$0")/lib.sh"
t_init "$@"
chmod 755 "$tmp"   # slurmd and the jobs reach into it
# The jobs first (their kilnds), then the daemons; what carries $tmp in its
# command line (a kilnd, a slurmstepd) the cleanup kills after this.
stop_slurm() {
    local f p
    if [ -f "$tmp/slurm.conf" ] && [ -f "$tmp/slurmctld.pid" ]; then
        SLURM_CONF=$tmp/slurm.conf timeout 10 scancel --partition=kilntest >/dev/null 2>&1
    fi
    for f in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munged.pid"; do
        p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] && kill -TERM "$p" 2>/dev/null
    done
    sleep 0.5
    for f in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munged.pid"; do
        p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
}
t_on_exit stop_slurm
cd "$SRC" || exit 2

# ---- errors that need no Slurm ----------------------------------------------

begin
touch "$tmp/afile"
out=$("$KILN" fleet status --dir "$tmp/afile" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "afile is not a fleet directory" <<<"$out" || problem "a file as DIR: exit $rc: $out"
out=$("$KILN" fleet up --slurm --dir "$tmp/no/such/dir" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "cannot create the fleet directory" <<<"$out" || problem "DIR without a parent: exit $rc: $out"
end "errors: a fleet directory that is a file or cannot be made (exit 2, named)"

begin
mkdir -p "$tmp/loose" && printf 'abcdefghijklmnopqrstuvwxyz\n' >"$tmp/loose/token" && chmod 644 "$tmp/loose/token"
out=$(PATH=/usr/bin:/bin "$KILN" fleet up --slurm --dir "$tmp/loose" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "has mode 0644: it must be 0600" <<<"$out" || problem "up: exit $rc: $out"
out=$("$KILN" fleet status --dir "$tmp/loose" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "0644" <<<"$out" || problem "status: exit $rc: $out"
end "errors: a token file with mode 0644 is refused (exit 2, the mode and the fix named)"

begin
mkdir -p "$tmp/nobin" "$tmp/f0"
out=$(PATH=$tmp/nobin "$KILN" fleet up --slurm --dir "$tmp/f0" 2>&1)
rc=$?
[ $rc -eq 3 ] && grep -q "sbatch not found on PATH" <<<"$out" || problem "no sbatch: exit $rc: $out"
[ "$(stat -c %a "$tmp/f0/token" 2>/dev/null)" = 600 ] || problem "up did not make DIR/token with mode 0600"
echo 12345 >"$tmp/f0/jobs"
out=$(PATH=$tmp/nobin "$KILN" fleet down --dir "$tmp/f0" 2>&1)
rc=$?
[ $rc -eq 3 ] && grep -q "scancel not found on PATH" <<<"$out" || problem "no scancel: exit $rc: $out"
[ -f "$tmp/f0/jobs" ] || problem "down without scancel removed the job list"
end "errors: no sbatch or scancel on PATH (exit 3, named); the token is made 0600"

# ---- a private Slurm ----------------------------------------------------------

[ "$(id -u)" -eq 0 ] || skip_all "Slurm daemons need root here (run as root to test kiln fleet)"
for b in munged slurmctld slurmd sbatch scancel squeue sinfo; do
    command -v "$b" >/dev/null || skip_all "$b is missing: scripts/setup.sh --deps-only installs slurm-wlm and munge"
done
host=$(hostname)
base=$((30000 + ($$ * 7) % 30000))
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/fleet"
chmod 700 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/munge.key" && chmod 600 "$tmp/munge/munge.key"
timeout 20 munged --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.sock" --pid-file="$tmp/munged.pid" \
    --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/seed" --force >"$tmp/log/munged.out" 2>&1 ||
    skip_all "munged does not start: $(tail -2 "$tmp/log/munged.out" "$tmp/log/munged.log" 2>/dev/null | tr '\n' ' ')"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=kilntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmUser=root
SlurmdUser=root
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=kilntest Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$tmp/slurm.conf
timeout 20 slurmctld -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 ||
    skip_all "slurmctld does not start: $(tail -2 "$tmp/log/slurmctld.out")"
timeout 20 slurmd -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 || skip_all "slurmd does not start: $(tail -2 "$tmp/log/slurmd.out")"
# A deadline, not a count: a client call to a slurmctld that does not
# answer waits its own MessageTimeout (CI once timed the test out here).
node_state() { timeout 5 sinfo -h -o %t 2>/dev/null; }
t_up=$SECONDS
while [ $((SECONDS - t_up)) -lt 20 ] && [ "$(node_state)" != idle ]; do sleep 0.2; done
[ "$(node_state)" = idle ] ||
    skip_all "the private Slurm node is not idle after 20 s: $(timeout 5 sinfo -h 2>&1 | head -2; tail -2 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log")"
echo "# private Slurm up: $host, ports $base-$((base + 1)), $(slurmctld -V)"

# ---- kiln fleet on it -----------------------------------------------------------

export TMPDIR=$tmp   # the jobs' kilnd state directories land here (and are cleaned with it)
# The jobs' kilnds listen on loopback: the node's name may not resolve here
# (kilnd.sbatch's $KILN_FLEET_HOST; sbatch passes the environment on).
export KILN_FLEET_HOST=127.0.0.1
F=$tmp/fleet
HONEST=kernels/rmsnorm/cpu/starter.c

# verify_at ENDPOINT NAME: an honest kernel through ENDPOINT passes (a noisy
# "suspect" is the verifier's call, not the fleet's) and names ENDPOINT.
verify_at() {
    local out rc
    out=$(KILN_TOKEN_FILE=$F/token timeout -k 5 90 "$KILN" verify "$HONEST" --task rmsnorm --socket "$1" \
        --json --timing-ms 200 --group decode 2>"$tmp/verify.err" </dev/null | tr -d ' \t\n')
    rc=$?
    grep -qE '^\{"status":"(pass|suspect)"' <<<"$out" ||
        { problem "$2: exit $rc: ${out:0:200} $(head -c 300 "$tmp/verify.err")"; return; }
    grep -q "\"verifier\":{\"host\":\"[^\"]*\",\"endpoint\":\"$1\",\"lane\":\"cpu\"}" <<<"$out" ||
        problem "$2: the verdict does not name $1 and lane cpu: $(grep -o '"verifier":{[^}]*}' <<<"$out")"
}
endpoint_of() { json_get endpoint "$F/endpoints/$1.json" 2>/dev/null; }

begin
out=$("$KILN" fleet up --slurm --dir "$F" --nodes 2 --devices cpu -- --time=5 2>&1)
rc=$?
[ $rc -eq 0 ] || problem "fleet up: exit $rc: $out"
mapfile -t jobs < <(sed -n 's/^submitted kilnd job \([0-9]*\)$/\1/p' <<<"$out")
[ ${#jobs[@]} -eq 2 ] || problem "expected two jobs submitted: $out"
for ((i = 0; i < 150; i++)); do
    [ "$(ls "$F/endpoints" 2>/dev/null | grep -c '^[0-9]*\.json$')" -ge 2 ] && break
    sleep 0.2
done
for j in "${jobs[@]}"; do
    grep -qE '^tcp://[^:]+:[0-9]+$' <<<"$(endpoint_of "$j")" ||
        problem "job $j wrote no endpoint: $(cat "$F/endpoints/$j.json" "$F"/logs/kilnd-"$j".out 2>&1 | head -5)"
    grep -q '"lanes":\["cpu"\]' "$F/endpoints/$j.json" 2>/dev/null || problem "job $j's endpoint lacks lanes [cpu]"
done
end "fleet up --slurm --nodes 2: two kilnd jobs, each writes its endpoint (tcp, lanes, job, pid)"
if [ ${#jobs[@]} -ne 2 ] || [ -z "$(endpoint_of "${jobs[1]:-x}")" ]; then
    stop_if_failed
fi
EP0=$(endpoint_of "${jobs[0]}")
EP1=$(endpoint_of "${jobs[1]}")

begin
verify_at "$EP0" "job ${jobs[0]}"
verify_at "$EP1" "job ${jobs[1]}"
[ "$EP0" != "$EP1" ] || problem "both daemons have the endpoint $EP0"
end "kiln verify through each endpoint with the fleet's token: the verdict names the endpoint and lane"

begin
out=$("$KILN" fleet status --dir "$F" 2>&1)
rc=$?
[ $rc -eq 0 ] || problem "exit $rc"
for j in "${jobs[@]}"; do
    grep -qE "^job $j  $(endpoint_of "$j")  up  lanes cpu  queued 0  active 0  done 1$" <<<"$out" ||
        problem "no up line with one job done for $j"
done
grep -q "^2 up, 0 down" <<<"$out" || problem "no '2 up, 0 down' summary"
[ ${#probs[@]} -eq 0 ] || problem "output: $out"
end "fleet status: both up, lanes, queue and jobs done"

# count_from ENDPOINT: verdicts in the search's run database from ENDPOINT.
count_from() {
    python3 - "$tmp/ws/.kiln/kiln.db" "$1" <<'PY' 2>/dev/null || echo 0
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(sum(1 for row in db.execute("select verdict, confirm_verdict, record_verdict from candidates")
          for v in row if v and json.loads(v).get("verifier", {}).get("endpoint") == sys.argv[2]))
PY
}

# One search over the fleet, 8 drafts an iteration; once both daemons have
# judged and the first holds jobs of it, its Slurm job is cancelled (kilnd
# gets SIGTERM: its running job finishes, its queued ones are refused) and
# the search must finish on the other with every candidate judged once.
begin
command -v python3 >/dev/null || problem "python3 is needed to read the run database"
"$KILN" search rmsnorm --fleet "$F" --drafts 8 --iterations 4 --group decode --timing-ms 200 \
    --workspace "$tmp/ws" >"$tmp/search.out" 2>&1 </dev/null &
search_pid=$!
cancelled=""
judged=""   # both have judged: once true, it stays true, and python is slow to ask
for ((i = 0; i < 3000 && ${#probs[@]} == 0; i++)); do
    kill -0 $search_pid 2>/dev/null || break
    if [ -z "$judged" ] && [ "$(count_from "$EP0")" -ge 1 ] && [ "$(count_from "$EP1")" -ge 1 ]; then
        judged=yes
    fi
    if [ -n "$judged" ] &&
        [ "$(ls "$tmp/kiln-fleet-${jobs[0]}/spool" 2>/dev/null | grep -c '\.json$')" -ge 2 ]; then
        timeout 10 scancel "${jobs[0]}"
        cancelled=yes
        break
    fi
    sleep 0.05
done
timeout 150 tail --pid=$search_pid -f /dev/null ||
    { problem "the search did not finish in 150 s: $(tail -5 "$tmp/search.out")"; kill -TERM $search_pid 2>/dev/null; }
wait $search_pid
rc=$?
[ -n "$cancelled" ] || problem "never saw both daemons judge while ${jobs[0]} held two jobs: $(tail -5 "$tmp/search.out")"
[ $rc -eq 0 ] && grep -q "done (iteration budget reached)" "$tmp/search.out" ||
    problem "the search exited $rc: $(tail -8 "$tmp/search.out")"
result=$(python3 - "$tmp/ws/.kiln/kiln.db" "$EP0" "$EP1" <<'PY' 2>&1
import json, sqlite3, sys
db, a, b = sys.argv[1:4]
def tag(addr):   # judge/kilnd_pool.c: 12 hex digits of FNV-1a 64
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
bad, by, seen = [], {a: 0, b: 0}, set()
for n, state, *cells in rows:
    if state != "done":
        bad.append(f"#{n} is {state}, not done")
    for which, job, verdict in zip(names, cells[0::2], cells[1::2]):
        if n > 0 and which == "verdict" and not verdict:
            bad.append(f"#{n}: no verdict (job {job!r})")
        if not job and not verdict:
            continue
        ep = json.loads(verdict).get("verifier", {}).get("endpoint") if verdict else None
        if not job or not verdict or tags.get(job.partition("@")[2]) != ep:
            bad.append(f"#{n} {which}: job {job!r} but the verdict is from {ep}")
        if job in seen:
            bad.append(f"#{n} {which}: job {job} is another candidate's too")
        seen.add(job)
        by[ep] = by.get(ep, 0) + 1
if len([r for r in rows if r[0] > 0]) != 32:
    bad.append(f"{len(rows) - 1} candidates, expected 32 (4 iterations of 8 drafts)")
if not by[a] or not by[b]:
    bad.append(f"verdicts by endpoint: {by}")
print("\n".join(bad) if bad else f"ok {by[a]} {by[b]}")
PY
)
case $result in
    ok*) echo "# verdicts: $(cut -d' ' -f2 <<<"$result") from $EP0 (cancelled), $(cut -d' ' -f3 <<<"$result") from $EP1" ;;
    *) problem "$result" ;;
esac
out=$("$KILN" status --workspace "$tmp/ws" 2>&1)
for ep in "$EP0" "$EP1"; do
    grep -qE "^  $ep +[^,]+, lanes cpu: [0-9]+ verdicts?, [0-9]+/h" <<<"$out" || problem "kiln status has no throughput line for $ep: $(grep -A3 '^verifiers' <<<"$out")"
done
end "kiln search --fleet: 8 drafts over both daemons; one scancelled mid-run; the search finishes, every candidate judged once"

begin
for ((i = 0; i < 100; i++)); do
    "$KILN" fleet status --dir "$F" >"$tmp/st.out" 2>&1
    rc=$?
    # Down for good once kilnd has exited (while it stops it may still
    # accept a connection and close it unanswered).
    grep -q "^job ${jobs[0]} .* down .*(cannot connect" "$tmp/st.out" && break
    sleep 0.2
done
[ $rc -eq 1 ] || problem "fleet status exit $rc with one daemon down, expected 1"
grep -qE "^job ${jobs[0]}  $EP0  down  lanes cpu  \(cannot connect" "$tmp/st.out" || problem "job ${jobs[0]} not reported down"
grep -qE "^job ${jobs[1]}  $EP1  up " "$tmp/st.out" || problem "job ${jobs[1]} not reported up"
grep -q "^1 up, 1 down" "$tmp/st.out" || problem "no '1 up, 1 down' summary"
[ ${#probs[@]} -eq 0 ] || problem "output: $(cat "$tmp/st.out")"
verify_at "$EP1" "job ${jobs[1]} after the other was cancelled"
end "the scancelled daemon: fleet status reports it down (exit 1), the other still verifies"

begin
out=$("$KILN" fleet down --dir "$F" 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -q "cancelled 2 kilnd jobs" <<<"$out" || problem "fleet down: exit $rc: $out"
for ((i = 0; i < 100; i++)); do
    [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break
    sleep 0.2
done
[ -z "$(squeue -h 2>&1)" ] || problem "jobs still in Slurm: $(squeue -h 2>&1)"
left=$(ls "$F/endpoints")
[ -z "$left" ] && [ ! -e "$F/jobs" ] || problem "left in the fleet directory: $left $(ls "$F")"
for ((i = 0; i < 50; i++)); do
    kilnds=$(for p in /proc/[0-9]*/cmdline; do tr '\0' ' ' 2>/dev/null <"$p" | grep "kilnd.*$tmp"; done)
    [ -z "$kilnds" ] && break
    sleep 0.2
done
[ -z "$kilnds" ] || problem "kilnd processes left: $kilnds"
for j in "${jobs[@]}"; do   # kilnd's stderr reached the job's output (so would a sanitizer's)
    grep -q "stopped after" "$F/logs/kilnd-$j.out" 2>/dev/null ||
        problem "job $j's kilnd did not stop gracefully: $(tail -3 "$F/logs/kilnd-$j.out" 2>&1)"
done
out=$("$KILN" fleet status --dir "$F" 2>&1)
[ $? -eq 1 ] && grep -q "^0 up, 0 down" <<<"$out" || problem "status after down: $out"
end "fleet down: jobs cancelled, endpoint files removed, no kilnd left, no sanitizer report"
t_done
