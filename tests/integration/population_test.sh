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
# baseline) and the model always answers the same file with REP 1: #1 is
# kept and becomes the best, in a cell of its own (REP1 against REP4), and
# later answers repeat it (not verified again). With --seed 1 and two
# elites, kiln_archive_pick draws iterations 2..6 as elite 1, elite 0,
# elite 1, elite 0, best (test_search_archive checks the draws are seeded),
# so iterations 2-3 and the resumed 4-5 each start once from the start
# kernel, whichever order the cells sort in. Prints "ok - NAME" or
# "not ok - NAME" per check; exits 1 if one failed, 2 on bad usage.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD=$(readlink -f -- "$1")
SRC=$(readlink -f -- "$2")
KILN=$BUILD/kiln
FAKE=$BUILD/tests/fake_llm
for x in "$KILN" "$BUILD/kiln-worker" "$FAKE"; do
    [ -x "$x" ] || { echo "$0: $x is not an executable" >&2; exit 2; }
done
for t in jq sqlite3 git; do
    command -v $t >/dev/null || { echo "$0: needs $t" >&2; exit 2; }
done

tmp=$(mktemp -d) || exit 2
FAKEPID=
cleanup() {
    [ -n "$FAKEPID" ] && kill "$FAKEPID" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export KILN_STATE=$tmp/state TMPDIR=$tmp
unset KILN_TASKS OPENAI_BASE_URL
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
cd "$SRC" || exit 2
FIX=$SRC/tests/integration/population
WS=$tmp/ws

failed=0
check() {   # NAME PROBLEM...: ok when no problem was given
    local name=$1
    shift
    if [ $# -eq 0 ]; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        printf '# %s\n' "$@"
        failed=1
    fi
}
sq() { sqlite3 -cmd '.timeout 5000' "$WS/.kiln/kiln.db" "$1" 2>&1; }

{
    printf 'Here it is.\n\n```c\n'
    sed 's/^#define REP 4 /#define REP 1 /' "$FIX/rep.c"
    printf '```\n\nHYPOTHESIS: each row once\n'
} >"$tmp/fast.md"

start_fake() {   # NAME: a fake model answering fast.md, its bodies in $tmp/NAME
    mkdir -p "$tmp/$1/bodies"
    printf 'ok %s\n' "$tmp/fast.md" >"$tmp/$1/script"
    "$FAKE" --port-file "$tmp/$1/port" --script "$tmp/$1/script" --log "$tmp/$1/log" \
        --bodies "$tmp/$1/bodies" 2>"$tmp/$1/err" &
    FAKEPID=$!
    for ((i = 0; i < 100; i++)); do [ -s "$tmp/$1/port" ] && break; sleep 0.05; done
    [ -s "$tmp/$1/port" ] || { echo "$0: fake_llm did not start: $(cat "$tmp/$1/err")" >&2; exit 2; }
    PORT=$(cat "$tmp/$1/port")
}
stop_fake() { kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; FAKEPID=; }
search() {   # ARGS...
    OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
        --base-url "http://127.0.0.1:$PORT/v1" --workspace "$WS" --drafts 1 \
        --group decode --timing-ms 200 "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
}
sanitizer() { grep -m3 -E 'Sanitizer|runtime error:' "$tmp/err"; }
# The user prompts of a session, in request order.
prompts() {   # NAME
    grep -o 'h=[0-9a-f]*' "$tmp/$1/log" | cut -c3- | while read -r h; do
        jq -r '.messages[] | select(.role == "user") | .content' "$tmp/$1/bodies/$h.json"
        echo "=== end of prompt"
    done
}
# The candidates of iterations FROM..TO whose parent is the start kernel.
from_start() {
    sq "SELECT count(*) FROM candidates c JOIN candidates s ON s.run = c.run AND s.n = 0
        WHERE c.run = '$RUN' AND c.iteration BETWEEN $1 AND $2 AND c.parent = s.commit_id"
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
p=()
[ $RC -eq 2 ] || p+=("exit $RC, expected 2")
grep -q -- "--parents must be best or archive" "$tmp/err" || p+=("stderr: $(tail -2 "$tmp/err")")
[ -e "$WS/.kiln/kiln.db" ] && p+=("a workspace was made")
check "--parents sometimes is refused (exit 2)" "${p[@]}"

# ---- session 1: iterations 1-3 ----------------------------------------------------
start_fake s1
search --from "$FIX/rep.c" --seed 1 --iterations 3
stop_fake
RUN=$(sq "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
p=()
[ $RC -eq 0 ] || p+=("kiln search exited $RC: $(tail -5 "$tmp/err")")
[ -z "$(sanitizer)" ] || p+=("sanitizer: $(sanitizer)")
[ "$(sq "SELECT parents FROM runs WHERE id='$RUN'")" = archive ] || p+=("runs.parents is not archive for a model")
[ "$(sq "SELECT decision FROM candidates WHERE run='$RUN' AND n=1")" = keep ] ||
    p+=("#1 (4x faster) was not kept: $(sq "SELECT why FROM candidates WHERE run='$RUN' AND n=1")")
check "a model search with an archive runs" "${p[@]}"

head1=$(sq "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=1")
start=$(sq "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=0")
rows1=$(archive_rows)
p=()
[ "$(sq "SELECT count(*) FROM archive WHERE run='$RUN'")" = 2 ] || p+=("archive: $rows1")
grep -q "REP4 #0 $start" <<<"$rows1" || p+=("the start kernel is not in cell *.REP4: $rows1")
grep -q "REP1 #1 $head1" <<<"$rows1" || p+=("#1 is not in cell *.REP1: $rows1")
m=$(refs_match)
[ -z "$m" ] || p+=("$m")
check "each archive member has its ref refs/kiln/archive/RUN/CELL" "${p[@]}"

p=()
[ "$(from_start 2 3)" -ge 1 ] || p+=("no candidate of iterations 2-3 has the start kernel as its parent: $(sq "SELECT iteration || ' ' || parent FROM candidates WHERE run='$RUN'")")
[ "$(git -C "$WS" rev-parse "kiln/rmsnorm/$RUN")" = "$head1" ] || p+=("the branch moved off the best (#1)")
[ "$(git -C "$WS" rev-list --count "kiln/rmsnorm/$RUN")" = 3 ] || p+=("the branch is not first commit, #0, #1")
check "an iteration's parent can be an elite that is not the best; the branch stays on the best" "${p[@]}"

prompts s1 >"$tmp/p1"
p=()
grep -q "^Parent (an elite of this run's archive, not its best;" "$tmp/p1" || p+=("no prompt names a non-best parent")
grep -q "^Other kernels this run kept (inspirations" "$tmp/p1" || p+=("no prompt shows inspirations")
grep -qE "^#[01] in cell [a-z]+\.REP[14]: [0-9.]+x \[[0-9.]+, [0-9.]+\]" "$tmp/p1" || p+=("no inspiration line with its interval")
grep -q "#define REP" <(sed -n '/^Other kernels this run kept/,/^=== end/p' "$tmp/p1") || p+=("no inspiration source")
check "the prompt shows other elites as inspirations" "${p[@]}"

# ---- session 2: --resume to iteration 6 ------------------------------------------
search --resume last --parents best --iterations 6
p=()
[ $RC -eq 2 ] || p+=("exit $RC, expected 2")
grep -q "chooses parents by --parents archive" "$tmp/err" || p+=("stderr: $(tail -2 "$tmp/err")")
check "--resume refuses another --parents" "${p[@]}"

start_fake s2
search --resume last --iterations 6
stop_fake
p=()
[ $RC -eq 0 ] || p+=("kiln search --resume exited $RC: $(tail -5 "$tmp/err")")
[ -z "$(sanitizer)" ] || p+=("sanitizer: $(sanitizer)")
[ "$(archive_rows)" = "$rows1" ] || p+=("archive changed: $(archive_rows)")
[ "$(from_start 4 5)" -ge 1 ] || p+=("no resumed iteration started from the start kernel")
prompts s2 >"$tmp/p2"
[ "$(grep -c '^Other kernels this run kept' "$tmp/p2")" = 3 ] || p+=("not every resumed prompt shows inspirations")
check "--resume restores the archive (parents and inspirations drawn from it)" "${p[@]}"

# ---- status and report ---------------------------------------------------------------
"$KILN" status --workspace "$WS" >"$tmp/status" 2>&1
p=()
grep -q "^archive (parents: archive): 2 cells" "$tmp/status" || p+=("status: $(cat "$tmp/status")")
grep -qE "^  [a-z]+\.REP1 +#1 ${head1:0:12} [0-9.]+x \[[0-9.]+, [0-9.]+\] vs baseline \(the best\)" "$tmp/status" ||
    p+=("status lacks #1's cell with its interval: $(grep -A3 '^archive' "$tmp/status")")
grep -q "^lineage of the best: #0 -> #1$" "$tmp/status" || p+=("status lacks the lineage")
check "kiln status shows the archive and the best's lineage" "${p[@]}"

"$KILN" report --workspace "$WS" -o "$tmp/r.html" >/dev/null 2>"$tmp/rerr"
p=()
grep -q "<h3>archive</h3>" "$tmp/r.html" || p+=("no archive section: $(cat "$tmp/rerr")")
grep -q "lineage of the best: #0 &rarr; #1" "$tmp/r.html" || p+=("no lineage")
[ "$(grep -c '\.REP[14]</td>' "$tmp/r.html")" = 2 ] || p+=("the report does not list both cells")
check "kiln report shows the archive and the best's lineage" "${p[@]}"

exit $failed
