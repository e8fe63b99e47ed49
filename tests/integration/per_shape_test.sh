#!/usr/bin/env bash
# per_shape_test.sh - `kiln search --objective per-shape` end to end on the
# CPU backend with the offline tuner, through the real kilnd: every keep
# after the start kernel surely beats an incumbent at a shape it names, no
# re-time against the parent is asked for, the summary (text and --json)
# lists each visible shape's incumbent, a kept kernel, and `kiln export`
# serves each visible shape with exactly that incumbent. What is kept rests
# on timing, so the checks are the rule's invariants, not a count of keeps.
#
# usage: per_shape_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
WS=$tmp/ws
sq() { sqlite3 -cmd '.timeout 5000' "$WS/.kiln/kiln.db" "$1" 2>&1; }

begin
"$KILN" search rmsnorm --objective per-shape --iterations 3 --drafts 3 --group decode \
    --timing-ms 150 --workspace "$WS" --json >"$tmp/search.json" 2>"$tmp/search.err" </dev/null
rc=$?
[ $rc -eq 0 ] || problem "search: exit $rc: $(tail -5 "$tmp/search.err")"
run=$(sq "SELECT id FROM runs")
[ "$(sq "SELECT objective FROM runs")" = per-shape ] || problem "the run's objective: $(sq "SELECT objective FROM runs")"
bad=$(sq "SELECT n || ': ' || why FROM candidates WHERE decision='keep' AND n > 0
          AND why NOT LIKE 'kept: surely fastest at %'")
[ -z "$bad" ] || problem "keeps without a won shape: $bad"
bad=$(sq "SELECT n || ': ' || why FROM candidates WHERE decision='revert' AND status='pass'
          AND why NOT LIKE 'reverted: surely fastest at no shape (closest: %'
          AND why NOT LIKE 'reverted: no shape where it may beat the incumbent by %'")
[ -z "$bad" ] || problem "passing reverts without the per-shape rule's reason: $bad"
[ "$(sq "SELECT count(*) FROM candidates WHERE confirm_job <> '' OR confirm_verdict IS NOT NULL")" = 0 ] ||
    problem "a re-time against the parent was asked for"
[ "$(sq "SELECT count(*) FROM candidates WHERE decision='keep' AND n > 0 AND
         (record_verdict IS NULL OR rerecord_verdict IS NULL)")" = 0 ] ||
    problem "a keep without its record and re-record against the baseline"
end "per-shape search: each keep surely beats an incumbent at a shape it names; reverts say why; no re-time against the parent"

begin
# the summary event's incumbents: one per visible shape, each a kept kernel
python3 - "$tmp/search.json" "$WS/.kiln/kiln.db" >"$tmp/inc.txt" 2>&1 <<'PY' || problem "summary: $(cat "$tmp/inc.txt")"
import json, sqlite3, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
summary = [e for e in events if e.get("event") == "summary"]
assert summary, "no summary event"
inc = summary[-1].get("incumbents")
assert isinstance(inc, list) and len(inc) == 6, f"incumbents: {inc!r}"
db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
kept = {n for (n,) in db.execute("select n from candidates where decision='keep'")}
for i in inc:
    assert i["candidate"] in kept, f"{i} is not a kept candidate ({sorted(kept)})"
    assert i["lo"] <= i["speedup"] <= i["hi"], f"{i}: the point outside its interval"
for i in inc:
    print(i["shape"], i["candidate"])
PY
end "the summary names every visible shape's incumbent, each a kept kernel"

begin
export SOURCE_DATE_EPOCH=1767225600
"$KILN" export --task rmsnorm --workspace "$WS" -o "$tmp/exp" >"$tmp/export.out" 2>&1 ||
    problem "export: $(tail -5 "$tmp/export.out")"
# decisions.json: each visible shape's kernel is the incumbent's candidate
python3 - "$tmp/exp/decisions.json" "$tmp/inc.txt" >"$tmp/cmp.txt" 2>&1 <<'PY' || problem "export vs incumbents: $(cat "$tmp/cmp.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
by_name = {k["name"]: k["candidate"] for k in d["kernels"]}
want = dict(l.split() for l in open(sys.argv[2]) if l.strip())
seen = 0
for s in d["shapes"]:
    if s.get("groups") != "decode" or not s["ids"].startswith("v"):
        continue
    sid = s["ids"].split(",")[0]
    if sid not in want:
        continue
    seen += 1
    got = by_name.get(s["kernel"])
    assert str(got) == want[sid], f"{sid}: the export serves #{got}, the incumbent is #{want[sid]}"
assert seen == 6, f"{seen} visible decode shapes in decisions.json"
PY
end "kiln export serves each visible shape with its incumbent"

t_done
