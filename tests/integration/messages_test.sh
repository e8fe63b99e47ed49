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
grep -qF "fix the start kernel, then start a new run" "$tmp/s1.out" ||
    problem "the summary offers no way on: $(tail -3 "$tmp/s1.out")"
grep -q "resume with" "$tmp/s1.out" && problem "a run that would fail the same compile is offered a resume"
# Many errors: the first 20 lines of the compiler's, no more.
for i in $(seq 40); do echo "int e$i = undeclared$i;"; done >"$tmp/many.c"
"$KILN" search rmsnorm --from "$tmp/many.c" --workspace "$tmp/ws2" --iterations 1 --no-daemon \
    >/dev/null 2>"$tmp/s2.err" </dev/null
rc=$?
[ $rc -eq 2 ] || problem "many errors: exit $rc, expected 2"
n=$(sed -n '/^the compiler said (its first 20 lines):$/,/^\[\.\.\.\]$/p' "$tmp/s2.err" | wc -l)
[ "$n" -ge 12 ] && [ "$n" -le 22 ] || problem "many errors: $((n - 2)) lines of the compiler's, expected 10 to 20"
grep -qF "undeclared1'" "$tmp/s2.err" || problem "many errors: not the first: $(head -c 300 "$tmp/s2.err")"
end "a --from kernel that does not compile: exit 2, the file named, the compiler's first lines shown"

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

# 3. --json: one JSON object (one a line for task list), and "t" in every search event
# valid_json WHAT FILE [lines]: FILE is one JSON object (or, with "lines", one a line).
valid_json() {
    python3 -c '
import json, sys
text = open(sys.argv[1]).read()
docs = [json.loads(l) for l in text.splitlines()] if len(sys.argv) > 2 else [json.loads(text)]
assert docs and all(isinstance(d, dict) for d in docs), "not objects"
' "$2" ${3:+lines} 2>"$tmp/json.err" || problem "$1: not valid JSON: $(tail -1 "$tmp/json.err"): $(head -c 300 "$2")"
}
begin
"$KILN" search rmsnorm --workspace "$tmp/ws3" --iterations 1 --timing-ms 100 --no-daemon --json \
    >"$tmp/search.jsonl" 2>"$tmp/search.err" </dev/null || problem "search: $(head -c 400 "$tmp/search.err")"
valid_json "search --json" "$tmp/search.jsonl" lines
python3 -c '
import json, sys, time
events = [json.loads(l) for l in open(sys.argv[1])]
now = time.time()
for e in events:
    t = e.get("t")
    assert isinstance(t, (int, float)) and not isinstance(t, bool), "event %s: t is %r" % (e.get("event"), t)
    assert now - 600 < t <= now + 1, "event %s: t %r is not now" % (e.get("event"), t)
    assert abs(t * 1000 - round(t * 1000)) < 1e-3, "t %r is not to the millisecond" % t
ts = [e["t"] for e in events]
assert ts == sorted(ts), "t goes back: %r" % ts
assert events[0]["event"] == "run" and events[-1]["event"] == "summary", [e["event"] for e in events]
' "$tmp/search.jsonl" 2>"$tmp/t.err" || problem "search events: $(tail -1 "$tmp/t.err")"

"$KILN" status --workspace "$tmp/ws3" --json >"$tmp/status.json" 2>"$tmp/status.err" ||
    problem "status --json: $(head -c 300 "$tmp/status.err")"
valid_json "status --json" "$tmp/status.json"
[ "$(json_get status "$tmp/status.json")" = done ] || problem "status: $(head -c 300 "$tmp/status.json")"
[ "$(json_get kept "$tmp/status.json")" = "$(json_get kept_candidates.# "$tmp/status.json")" ] ||
    problem "status: kept and kept_candidates disagree"
json_get best.commit "$tmp/status.json" | grep -qE '^[0-9a-f]{40}$' || problem "status: no best commit"
[ "$(json_get holder "$tmp/status.json")" = null ] || problem "status: a holder after the run"

"$KILN" export --task rmsnorm -o "$tmp/exp" --workspace "$tmp/ws3" --json >"$tmp/export.json" 2>"$tmp/export.err" ||
    problem "export --json: $(head -c 300 "$tmp/export.err")"
valid_json "export --json" "$tmp/export.json"
json_get 'files[]' "$tmp/export.json" | grep -qx decisions.json || problem "export: files lacks decisions.json"
[ "$(json_get files.# "$tmp/export.json")" = "$(ls "$tmp/exp" | wc -l)" ] || problem "export: files is not DIR's"
[ "$(json_get best.kernel "$tmp/export.json")" = rmsnorm_k1 ] || problem "export: $(head -c 300 "$tmp/export.json")"

"$KILN" doctor --json >"$tmp/doctor.json" 2>&1
rc=$?
[ $rc -le 1 ] || problem "doctor --json: exit $rc"
valid_json "doctor --json" "$tmp/doctor.json"
[ "$(json_get checks.0.check "$tmp/doctor.json")" = build ] || problem "doctor: $(head -c 300 "$tmp/doctor.json")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
bad = [c for c in d["checks"] if not c["ok"]]
assert d["problems"] == len(bad) and d["ok"] == (not bad), "problems %r, failed checks %r" % (d["problems"], bad)
assert all((c["fix"] is None) == c["ok"] for c in d["checks"]), "a fix on a passed check, or none on a failed one"
assert sys.argv[2] == ("1" if bad else "0"), "exit " + sys.argv[2]
' "$tmp/doctor.json" $rc 2>"$tmp/d.err" || problem "doctor: $(tail -1 "$tmp/d.err")"

"$KILN" task list --json >"$tmp/tasks.jsonl" 2>&1 || problem "task list --json: $(head -c 300 "$tmp/tasks.jsonl")"
valid_json "task list --json" "$tmp/tasks.jsonl" lines
[ "$(wc -l <"$tmp/tasks.jsonl")" = "$("$KILN" task list | wc -l)" ] || problem "task list: --json has another count"
grep -q '"name":"rmsnorm".*"cpu_dtypes":\["f32"\]' "$tmp/tasks.jsonl" || problem "task list: no rmsnorm f32"
for c in status export doctor "task list"; do
    # shellcheck disable=SC2086
    "$KILN" $c --help | grep -q -- --json || problem "kiln $c --help does not document --json"
done
end "--json: search events carry t (epoch seconds, ms); status, export, doctor and task list print valid JSON"

# 4. a workspace kiln cannot write is not "in use"; one whose lock is held is.
# Root writes through chmod, so the read-only copy is a read-only bind mount
# in a mount namespace of its own (gone with the command; nothing to undo);
# elsewhere, chmod.
ro=$tmp/ro
mkdir -p "$ro"
# search_in WS ARGS...: kiln search rmsnorm in WS, stdout and stderr in $tmp/ro.out.
search_in() {
    local ws=$1
    shift
    "$KILN" search rmsnorm --workspace "$ws" --iterations 1 --no-daemon "$@" >"$tmp/ro.out" 2>&1 </dev/null
}
begin
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    unshare -m bash -c 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 99
        shift 2; exec "$@"' _ "$tmp/ws3" "$ro" \
        "$KILN" search rmsnorm --workspace "$ro" --iterations 1 --no-daemon >"$tmp/ro.out" 2>&1 </dev/null
    rc=$?
    how="a read-only bind mount"
elif [ "$(id -u)" != 0 ]; then
    cp -a "$tmp/ws3/." "$ro/" && chmod -R a-w "$ro"
    search_in "$ro"
    rc=$?
    how="chmod -R a-w"
else
    rc=99
fi
if [ $rc = 99 ]; then
    skip "a read-only workspace (root, and no mount namespace to bind one read-only in)"
else
    [ $rc -eq 2 ] || problem "$how: exit $rc, expected 2: $(head -c 400 "$tmp/ro.out")"
    grep -qF "kiln search: the workspace $ro is not writable ($ro/.kiln/lock: " "$tmp/ro.out" ||
        problem "$how: $(head -c 400 "$tmp/ro.out")"
    grep -qF "make it writable or choose another --workspace" "$tmp/ro.out" ||
        problem "$how: no way out: $(head -c 400 "$tmp/ro.out")"
    grep -q "another kiln search" "$tmp/ro.out" && problem "$how: still says another search"
    end "a read-only workspace ($how): exit 2, not writable, the path and the way out"
fi
chmod -R u+w "$ro" 2>/dev/null

begin
flock "$tmp/ws3/.kiln/lock" sleep 60 &
holder=$!
t_bg $holder
for _ in $(seq 50); do flock -n "$tmp/ws3/.kiln/lock" true || break; sleep 0.1; done
search_in "$tmp/ws3"
rc=$?
[ $rc -eq 2 ] || problem "held: exit $rc, expected 2: $(head -c 400 "$tmp/ro.out")"
grep -qF "another kiln search is using the workspace $tmp/ws3" "$tmp/ro.out" ||
    problem "held: $(head -c 400 "$tmp/ro.out")"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
end "a workspace whose lock is held: another kiln search is using it"

t_done
