#!/usr/bin/env bash
# population_test.sh - the search's archive (docs/search.md, "Population")
# through the real kiln and tests/fake_llm: an iteration's parent can be an
# elite that is not the best, every archive member has a ref, the prompt
# carries inspirations, --resume restores the archive, and status and
# report show it with the best's lineage.
#
# usage: population_test.sh BUILD_DIR SOURCE_DIR
#
# The run starts from population/rep.c (REP 4, 4x slower than the task's
# baseline); the model answers it REP 2 first, then REP 1 always: #1 (2x
# faster) and #2 (2x faster again) are kept and become the best in turn,
# each in a cell of its own (REP4, REP2, REP1), and later answers repeat
# #2 (not verified again). Both surely beat the start kernel against the
# baseline, so it is never a parent nor an inspiration from iteration 2
# on (archive.h); #1 is not surely beaten by #0. With --seed 1 and two
# elites open to draws, kiln_archive_pick draws iterations 3, 4, 5 and 10
# as open elite 0, 1, 0, 1 and 6-9 as the best (test_search_archive
# checks the draws are seeded), so one of iterations 3-4 and one of the
# resumed 5 and 10 start from #1, whichever order the cells sort in.

. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools sqlite3 git
cd "$SRC" || exit 2
FIX=$SRC/tests/integration/population
WS=$tmp/ws

sq() { sqlite3 -cmd '.timeout 5000' "$WS/.kiln/kiln.db" "$1" 2>&1; }

{
    printf 'Here it is.\n\n```c\n'
    sed 's/^#define REP 4 /#define REP 1 /' "$FIX/rep.c"
    printf '```\n\nHYPOTHESIS: each row once\n'
} >"$tmp/fast.md"
{
    printf 'Here it is.\n\n```c\n'
    sed 's/^#define REP 4 /#define REP 2 /' "$FIX/rep.c"
    printf '```\n\nHYPOTHESIS: each row twice\n'
} >"$tmp/half.md"

start_fake() {   # NAME [FILE...]: a fake model answering the FILEs then fast.md, its bodies in $tmp/NAME
    local name=$1
    shift
    mkdir -p "$tmp/$name/bodies"
    printf 'ok %s\n' "$@" "$tmp/fast.md" >"$tmp/$name/script"
    fake_llm "$tmp/$name" --bodies "$tmp/$name/bodies"
}
stop_fake() { kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; FAKEPID=; }
search() {   # ARGS...
    OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
        --base-url "http://127.0.0.1:$PORT/v1" --workspace "$WS" --drafts 1 \
        --group decode --timing-ms 200 "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
}
# The user prompts of a session, in request order.
prompts() {   # NAME
    grep -o 'h=[0-9a-f]*' "$tmp/$1/log" | cut -c3- | while read -r h; do
        json_get 'messages[role=user].content' "$tmp/$1/bodies/$h.json"
        echo "=== end of prompt"
    done
}
# The candidates of iterations FROM..TO whose parent is candidate N.
from_cand() {   # N FROM TO
    sq "SELECT count(*) FROM candidates c JOIN candidates s ON s.run = c.run AND s.n = $1
        WHERE c.run = '$RUN' AND c.iteration BETWEEN $2 AND $3 AND c.parent = s.commit_id"
}
# Every archive row's cell, candidate and commit; and its ref's commit.
archive_rows() { sq "SELECT cell || ' #' || n || ' ' || commit_id FROM archive WHERE run = '$RUN' ORDER BY cell"; }
refs_match() {
    local probs=() cell n commit
    while read -r cell n commit; do
        got=$(git -C "$WS" rev-parse -q --verify "refs/kiln/archive/$RUN/$cell")
        [ "$got" = "$commit" ] || probs+=("refs/kiln/archive/$RUN/$cell is '$got', the archive says $commit")
    done < <(archive_rows)
    printf '%s\n' "${probs[@]}"
}

# ---- a bad --parents is refused before anything is made -------------------------
PORT=1
search --parents sometimes --iterations 1
begin
[ $RC -eq 2 ] || problem "exit $RC, expected 2"
grep -q -- "--parents must be best or archive" "$tmp/err" || problem "stderr: $(tail -2 "$tmp/err")"
[ -e "$WS/.kiln/kiln.db" ] && problem "a workspace was made"
end "--parents sometimes is refused (exit 2)"

# ---- session 1: iterations 1-4 ----------------------------------------------------
start_fake s1 "$tmp/half.md"
search --from "$FIX/rep.c" --seed 1 --iterations 4
stop_fake
RUN=$(sq "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
begin
[ $RC -eq 0 ] || problem "kiln search exited $RC: $(tail -5 "$tmp/err")"
[ "$(sq "SELECT parents FROM runs WHERE id='$RUN'")" = archive ] || problem "runs.parents is not archive for a model"
for n in 1 2; do
    [ "$(sq "SELECT decision FROM candidates WHERE run='$RUN' AND n=$n")" = keep ] ||
        problem "#$n (2x faster than its parent) was not kept: $(sq "SELECT why FROM candidates WHERE run='$RUN' AND n=$n")"
done
end "a model search with an archive runs"

head1=$(sq "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=2")
mid=$(sq "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=1")
start=$(sq "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=0")
rows1=$(archive_rows)
begin
[ "$(sq "SELECT count(*) FROM archive WHERE run='$RUN'")" = 3 ] || problem "archive: $rows1"
grep -q "REP4 #0 $start" <<<"$rows1" || problem "the start kernel is not in cell *.REP4: $rows1"
grep -q "REP2 #1 $mid" <<<"$rows1" || problem "#1 is not in cell *.REP2: $rows1"
grep -q "REP1 #2 $head1" <<<"$rows1" || problem "#2 is not in cell *.REP1: $rows1"
m=$(refs_match)
[ -z "$m" ] || problem "$m"
end "each archive member has its ref refs/kiln/archive/RUN/CELL"

begin
[ "$(from_cand 0 2 4)" = 0 ] || problem "an iteration after the first started from the start kernel, which #1 and #2 surely beat: $(sq "SELECT iteration || ' ' || parent FROM candidates WHERE run='$RUN'")"
[ "$(from_cand 1 3 4)" = 1 ] || problem "not one of iterations 3-4 has #1 (an elite, not the best) as its parent: $(sq "SELECT iteration || ' ' || parent FROM candidates WHERE run='$RUN'")"
[ "$(git -C "$WS" rev-parse "kiln/rmsnorm/$RUN")" = "$head1" ] || problem "the branch moved off the best (#2)"
[ "$(git -C "$WS" rev-list --count "kiln/rmsnorm/$RUN")" = 4 ] || problem "the branch is not first commit, #0, #1, #2"
end "an iteration's parent can be an elite that is not the best, never one every other surely beats"

prompts s1 >"$tmp/p1"
insp() { sed -n '/^Other kernels this run kept/,/^=== end/p' "$1"; }
begin
grep -q "^Parent (an elite of this run's archive, not its best;" "$tmp/p1" || problem "no prompt names a non-best parent"
grep -q "^Other kernels this run kept (inspirations" "$tmp/p1" || problem "no prompt shows inspirations"
grep -qE "^#[12] in cell [a-z]+\.REP[12]: [0-9.]+x \[[0-9.]+, [0-9.]+\]" "$tmp/p1" || problem "no inspiration line with its interval"
grep -qE "^  per shape: v1 [0-9.]+x v2 [0-9.]+x" <(insp "$tmp/p1") || problem "no inspiration's per-shape speedups: $(insp "$tmp/p1" | head -3)"
grep -q "#define REP" <(insp "$tmp/p1") || problem "no inspiration source"
grep -qE "^#0 in cell" <(insp "$tmp/p1") && problem "the start kernel, surely beaten, is shown as an inspiration"
end "the prompt shows other elites as inspirations, with their per-shape speedups, never the start kernel"

# ---- session 2: --resume to iteration 10 ------------------------------------------
search --resume last --parents best --iterations 10
begin
[ $RC -eq 2 ] || problem "exit $RC, expected 2"
grep -q "chooses parents by --parents archive" "$tmp/err" || problem "stderr: $(tail -2 "$tmp/err")"
end "--resume refuses another --parents"

start_fake s2
search --resume last --iterations 10
stop_fake
begin
[ $RC -eq 0 ] || problem "kiln search --resume exited $RC: $(tail -5 "$tmp/err")"
[ "$(archive_rows)" = "$rows1" ] || problem "archive changed: $(archive_rows)"
[ "$(from_cand 1 5 10)" = 1 ] || problem "not one resumed iteration started from #1"
[ "$(from_cand 0 5 10)" = 0 ] || problem "a resumed iteration started from the start kernel"
prompts s2 >"$tmp/p2"
[ "$(grep -c '^Other kernels this run kept' "$tmp/p2")" = 6 ] || problem "not every resumed prompt shows inspirations"
end "--resume restores the archive (parents and inspirations drawn from it)"

# ---- status and report ---------------------------------------------------------------
"$KILN" status --workspace "$WS" >"$tmp/status" 2>&1
begin
grep -q "^archive (parents: archive): 3 cells" "$tmp/status" || problem "status: $(cat "$tmp/status")"
grep -qE "^  [a-z]+\.REP1 +#2 ${head1:0:12} [0-9.]+x \[[0-9.]+, [0-9.]+\] vs baseline \(the best\)" "$tmp/status" ||
    problem "status lacks #2's cell with its interval: $(grep -A3 '^archive' "$tmp/status")"
grep -q "^lineage of the best: #0 -> #1 -> #2$" "$tmp/status" || problem "status lacks the lineage"
end "kiln status shows the archive and the best's lineage"

"$KILN" report --workspace "$WS" -o "$tmp/r.html" >/dev/null 2>"$tmp/rerr"
begin
grep -q "<h3>archive</h3>" "$tmp/r.html" || problem "no archive section: $(cat "$tmp/rerr")"
grep -q "lineage of the best: #0 &rarr; #1 &rarr; #2" "$tmp/r.html" || problem "no lineage"
[ "$(grep -c '\.REP[124]</td>' "$tmp/r.html")" = 3 ] || problem "the report does not list the three cells"
end "kiln report shows the archive and the best's lineage"

t_done
