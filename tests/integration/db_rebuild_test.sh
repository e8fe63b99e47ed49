#!/usr/bin/env bash
# db_rebuild_test.sh - a database you can lose (issue 38, item 2): a short
# CPU search, then its .kiln/kiln.db overwritten. status, report and
# export exit 2 naming the file and `kiln db rebuild`; the rebuild moves
# the corrupt file aside (kept) and makes one whose candidates are the
# same (n, iteration, parent, commit, status, stage, code, decision,
# figures, verdicts, source, job ids), whose run row has the same settings,
# whose export is byte-identical (with
# SOURCE_DATE_EPOCH) and which status reads. A workspace without verdict
# notes is refused (exit 2, naming it). About 30 s of CPU timing.
#
# usage: db_rebuild_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools sqlite3 git
export SOURCE_DATE_EPOCH=1700000000
ws=$tmp/ws db=$tmp/ws/.kiln/kiln.db
# Figures the rebuild computes again from the notes' JSON are compared to
# 12 significant digits: the last bit of a double can differ after the
# round trip through text (2.10687331806518 against ...519, once in CI).
g() { local c out=""; for c in "$@"; do out+="${out:+, }printf('%.12g', $c)"; done; echo "$out"; }
cols="n, iteration, draft, parent, commit_id, proposer, state, status, stage, code, decision,
 $(g speedup confirm_speedup speedup_vs_baseline roofline speedup_lo speedup_hi baseline_lo \
     baseline_hi pooled_speedup pooled_lo pooled_hi), hypothesis, reason, why, job, record_job,
 rerecord_job, verdict, confirm_verdict, record_verdict, rerecord_verdict, pooled_verdict, source"
# cands FILE: the candidates table as the comparison reads it.
cands() { sqlite3 "$db" "SELECT $cols FROM candidates ORDER BY run, n" >"$1"; }

begin
"$KILN" search rmsnorm --iterations 2 --drafts 2 --timing-ms 100 --workspace "$ws" \
    >"$tmp/search.out" 2>&1 </dev/null || problem "search: exit $?: $(tail -c 400 "$tmp/search.out")"
cands "$tmp/before"
sqlite3 "$db" "SELECT run, cell, n, commit_id, $(g speedup lo hi) FROM archive ORDER BY cell" >"$tmp/archive.before"
runcols="id, task, backend, dtype, grp, agent, model, seed, branch, start_commit, head_commit, status,
 iterations_done, budget_iterations, drafts, budget_seconds, budget_tokens, best_speedup, base_url,
 from_path, keep_margin, max_regression, objective, parents"
sqlite3 "$db" "SELECT $runcols FROM runs" >"$tmp/runs.before"
n=$(sqlite3 "$db" "SELECT count(*) FROM candidates")
[ "$n" -ge 3 ] || problem "search: $n candidates"
"$KILN" status --workspace "$ws" >"$tmp/status.before" 2>&1 || problem "status before: exit $?"
"$KILN" export --task rmsnorm -o "$tmp/ex1" --workspace "$ws" >/dev/null 2>"$tmp/err" ||
    problem "export before: exit $?: $(head -c 300 "$tmp/err")"
end "a short CPU search, its candidates, status and export saved"
stop_if_failed

begin
# Overwrite the file's first 4 KiB (the header and the schema's page).
head -c 4096 /dev/urandom | dd of="$db" conv=notrunc status=none
cp "$db" "$tmp/corrupt.db"
want="$db: corrupt or not a kiln database"
hint="'kiln db rebuild --workspace $ws' rebuilds it from the git notes"
t_refused "status" "$want" status --workspace "$ws"
grep -qF -- "$hint" "$tmp/err" || problem "status: no rebuild hint: $(head -c 400 "$tmp/err")"
t_refused "report" "$want" report -o "$tmp/r.html" --workspace "$ws"
grep -qF -- "$hint" "$tmp/err" || problem "report: no rebuild hint: $(head -c 400 "$tmp/err")"
t_refused "export" "$want" export --task rmsnorm -o "$tmp/exbad" --workspace "$ws"
grep -qF -- "$hint" "$tmp/err" || problem "export: no rebuild hint: $(head -c 400 "$tmp/err")"
end "a corrupt kiln.db: status, report and export exit 2 naming it and 'kiln db rebuild'"

begin
"$KILN" db rebuild --workspace "$ws" >"$tmp/rebuild.out" 2>"$tmp/err" ||
    problem "db rebuild: exit $?: $(head -c 400 "$tmp/err")"
grep -qF "rebuilt $(readlink -f "$ws")/.kiln/kiln.db from the git notes: 1 run, $n candidates" \
    "$tmp/rebuild.out" || problem "db rebuild: no summary: $(head -c 400 "$tmp/rebuild.out")"
grep -qF "not rebuilt (no note holds them): model usage (llm_calls, tokens)" "$tmp/rebuild.out" ||
    problem "db rebuild: does not say what it could not rebuild"
kept=$(ls "$ws"/.kiln/kiln.db.corrupt-* 2>/dev/null | grep -v -- '-wal$\|-shm$' | head -1)
[ -n "$kept" ] && cmp -s "$kept" "$tmp/corrupt.db" || problem "the corrupt file was not kept as kiln.db.corrupt-TIME"
grep -qF "the old database is kept as $kept" "$tmp/rebuild.out" || problem "db rebuild: does not name the kept file"
end "db rebuild: a new kiln.db from the notes, the corrupt one kept beside it, what is lost said"

begin
cands "$tmp/after"
diff "$tmp/before" "$tmp/after" >"$tmp/cands.diff" ||
    problem "candidates differ after the rebuild: $(head -c 600 "$tmp/cands.diff")"
sqlite3 "$db" "SELECT $runcols FROM runs" >"$tmp/runs.after"
diff "$tmp/runs.before" "$tmp/runs.after" >"$tmp/runs.diff" ||
    problem "the run's row differs after the rebuild: $(head -c 600 "$tmp/runs.diff")"
"$KILN" export --task rmsnorm -o "$tmp/ex2" --workspace "$ws" >/dev/null 2>"$tmp/err" ||
    problem "export after: exit $?: $(head -c 300 "$tmp/err")"
diff -r "$tmp/ex1" "$tmp/ex2" >"$tmp/ex.diff" || problem "export differs: $(head -c 600 "$tmp/ex.diff")"
"$KILN" status --workspace "$ws" >"$tmp/status.after" 2>"$tmp/err" ||
    problem "status after: exit $?: $(head -c 300 "$tmp/err")"
for line in "candidates $n, kept" "best: #" "archive (parents: best)" "lineage of the best: #0" \
    "keep rule: geomean's lower end above"; do
    grep -qF -- "$line" "$tmp/status.after" || problem "status after lacks \"$line\""
done
[ "$(grep '^best: ' "$tmp/status.before")" = "$(grep '^best: ' "$tmp/status.after")" ] ||
    problem "status: another best: $(grep '^best: ' "$tmp/status.after")"
sqlite3 "$db" "SELECT run, cell, n, commit_id, $(g speedup lo hi) FROM archive ORDER BY cell" >"$tmp/archive.after"
diff "$tmp/archive.before" "$tmp/archive.after" >"$tmp/archive.diff" ||
    problem "the archive differs: $(head -c 400 "$tmp/archive.diff")"
end "after the rebuild: the same candidates, run settings and archive, a byte-identical export, status reads it"

begin
# A second rebuild keeps both old files; a note copied onto another
# candidate's commit (git notes copy) is left out, not taken for it.
c1=$(sqlite3 "$db" "SELECT commit_id FROM candidates WHERE n=1")
c2=$(sqlite3 "$db" "SELECT commit_id FROM candidates WHERE n=2")
git -C "$ws" notes --ref=kiln-verdict copy -f "$c1" "$c2" 2>/dev/null || problem "cannot copy the note"
# Damage past the header (pages of the tables) is named as well.
head -c 8192 /dev/urandom | dd of="$db" bs=1 seek=16384 conv=notrunc status=none
t_refused "status, damaged pages" "$db: corrupt or not a kiln database" status --workspace "$ws"
"$KILN" db rebuild --workspace "$ws" >"$tmp/rebuild2.out" 2>"$tmp/err" ||
    problem "second db rebuild: exit $?: $(head -c 400 "$tmp/err")"
grep -qF "1 note on a commit that is not its candidate's (copied?), left out" "$tmp/rebuild2.out" ||
    problem "the copied note is not said: $(head -c 400 "$tmp/rebuild2.out")"
[ "$(sqlite3 "$db" "SELECT group_concat(n) FROM candidates WHERE commit_id IN ('$c1', '$c2')")" = 1 ] ||
    problem "the copied note made a candidate: $(sqlite3 "$db" "SELECT n, commit_id FROM candidates")"
[ -f "$kept" ] && cmp -s "$kept" "$tmp/corrupt.db" || problem "the second rebuild lost the corrupt file"
[ "$(ls "$ws"/.kiln/kiln.db.corrupt-* | grep -cv -- '-wal$\|-shm$')" -eq 2 ] ||
    problem "not two old files kept: $(ls "$ws"/.kiln)"
end "damaged pages named; a second rebuild keeps both old files; a note copied onto another commit is left out"

begin
# A workspace whose search never decided a candidate: no verdict notes.
git -C "$ws" notes --ref=kiln-verdict list >/dev/null 2>&1 || problem "the search wrote no verdict notes"
cp -r "$ws" "$tmp/nonotes"
rm -f "$tmp/nonotes"/.kiln/kiln.db.corrupt-*
git -C "$tmp/nonotes" update-ref -d refs/notes/kiln-verdict
t_refused "rebuild without notes" "workspace $tmp/nonotes: no kiln verdict notes (refs/notes/kiln-verdict): nothing to rebuild" \
    db rebuild --workspace "$tmp/nonotes"
[ -f "$tmp/nonotes/.kiln/kiln.db" ] && ! ls "$tmp/nonotes"/.kiln/kiln.db.corrupt-* >/dev/null 2>&1 ||
    problem "a refused rebuild moved the database"
rm -f "$tmp/nonotes"/.kiln/kiln.db*
t_refused "status, kiln.db gone" "$tmp/nonotes/.kiln/kiln.db: no kiln database; 'kiln db rebuild --workspace $tmp/nonotes' rebuilds it" \
    status --workspace "$tmp/nonotes"
t_refused "rebuild of no workspace" "workspace $tmp/none: no such directory" db rebuild --workspace "$tmp/none"
t_refused "db without a subcommand" "usage: kiln db rebuild" db
end "db rebuild refused (exit 2, named) without verdict notes or a workspace; the database left; a lost kiln.db named"

t_done
