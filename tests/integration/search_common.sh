# search_common.sh - what the search_*_test.sh scripts share, sourced after
# lib.sh's t_init: the plants and timing options, kiln() (a call with its
# output in files, RC and SECS), the run database and the git workspace
# checked against each other (consistent), a fake model server
# (start_fake) and the model answers built from the plants, and the waits.
# Each script searches through a kilnd of its own, started on demand.
[ -x "$FAKE" ] || { echo "$0: $FAKE is not an executable" >&2; exit 2; }
need_tools git sqlite3
cd "$SRC" || exit 2

PLANTS=$SRC/tests/redteam/cpu
FIX=$SRC/tests/integration/search
FAST=(--group decode --timing-ms 200)
# Which candidate is kept, re-timed or reverted for its speed is
# tests/unit/test_search_loop.c's business, with scripted verdicts: the
# searches here check the real path (the verifier's codes, the model's
# answers, git and the database), and only the tuner's must keep one.
DAEMONLOG=$KILN_STATE/kilnd.log

# kiln OUT ERR ARGS...: run kiln in the foreground, stdout to OUT, stderr to
# ERR; sets RC and SECS.
kiln() {
    local out=$1 err=$2 t0
    shift 2
    t0=$(date +%s)
    "$KILN" "$@" >"$out" 2>"$err"
    RC=$?
    SECS=$(( $(date +%s) - t0 ))
    return 0
}

tail_of() { sed 's/^/  | /' "$1" | tail -n "${2:-15}"; }

sq() {   # DB SQL
    sqlite3 -cmd '.timeout 5000' "$1" "$2" 2>&1
}

last_run() { sq "$1/.kiln/kiln.db" "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1"; }

# ---- git and the database agree ---------------------------------------------------

# consistent WS RUN [stopped]: the run's branch tip is runs.head_commit, each
# reverted commit is parked under refs/kiln/rejected/RUN/N, each candidate
# commit has a note with the same decision, kept commits are on the branch,
# the working tree is clean and the best-kernel tag exists. Unless "stopped"
# is given, every candidate is done. Adds problems; returns 1 if any.
consistent() {
    local ws=$1 run=$2 partial=${3:-} db=$1/.kiln/kiln.db before=${#probs[@]}
    local branch head tip n dec commit state ref note ndec
    branch=$(sq "$db" "SELECT branch FROM runs WHERE id='$run'")
    head=$(sq "$db" "SELECT head_commit FROM runs WHERE id='$run'")
    if [ -z "$branch" ] || [ -z "$head" ]; then
        problem "consistent $run: no branch or head_commit in runs (branch='$branch' head='$head')"
        return 1
    fi
    tip=$(git -C "$ws" rev-parse -q --verify "refs/heads/$branch^{commit}" 2>&1)
    [ "$tip" = "$head" ] || problem "consistent $run: branch $branch is at '$tip', runs.head_commit is $head"
    local cur
    cur=$(git -C "$ws" symbolic-ref -q HEAD 2>&1)
    [ "$cur" = "refs/heads/$branch" ] || problem "consistent $run: HEAD is '$cur', not refs/heads/$branch"
    while IFS='|' read -r n dec commit state; do
        [ -n "$n" ] || continue
        if [ -z "$partial" ] && [ "$state" != done ]; then
            problem "consistent $run: candidate $n is in state '$state' after a finished run"
        fi
        [ -n "$commit" ] || continue
        if [ "$dec" = revert ]; then
            ref=$(git -C "$ws" rev-parse -q --verify "refs/kiln/rejected/$run/$n" 2>&1)
            [ "$ref" = "$commit" ] ||
                problem "consistent $run: candidate $n reverted at $commit but refs/kiln/rejected/$run/$n is '$ref'"
        elif [ "$dec" = keep ]; then
            git -C "$ws" merge-base --is-ancestor "$commit" "$tip" 2>/dev/null ||
                problem "consistent $run: kept candidate $n ($commit) is not on branch $branch"
        fi
        [ "$state" = done ] || continue   # the note is written by the last step
        if ! note=$(git -C "$ws" notes --ref=kiln-verdict show "$commit" 2>&1); then
            problem "consistent $run: candidate $n ($commit) has no note on refs/notes/kiln-verdict: $note"
            continue
        fi
        line=$(git -C "$ws" notes --ref=kiln show "$commit" 2>&1)
        [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] && grep -q "^kiln: $dec " <<<"$line" ||
            problem "consistent $run: candidate $n: the refs/notes/kiln note is not one line '$dec': ${line:0:200}"
        ndec=$(printf '%s\n' "$note" | grep -o -m 1 '"decision":[[:space:]]*"[a-z]*"' | sed 's/.*"\([a-z]*\)"$/\1/')
        [ "$ndec" = "$dec" ] ||
            problem "consistent $run: candidate $n: note says decision '$ndec', the database '$dec'"
    done < <(sq "$db" "SELECT n, decision, commit_id, state FROM candidates WHERE run='$run' ORDER BY n")
    local dirty
    dirty=$(git -C "$ws" status --porcelain 2>&1)
    [ -z "$dirty" ] || problem "consistent $run: working tree not clean: $dirty"
    git -C "$ws" rev-parse -q --verify refs/tags/kiln/best/rmsnorm/cpu/f32 >/dev/null ||
        problem "consistent $run: tag kiln/best/rmsnorm/cpu/f32 does not exist"
    [ ${#probs[@]} -eq "$before" ]
}

# ---- the fake model server ------------------------------------------------------

# start_fake NAME SCRIPT_TEXT: a fake_llm with that script; sets PORT and FLOG.
start_fake() {
    local d=$tmp/fake-$1 i
    mkdir -p "$d"
    printf '%s\n' "$2" >"$d/script"
    FLOG=$d/log
    fake_llm "$d"
}

# Model answers built from the plants, so they never drift from them.
answer() {   # PLANT HYPOTHESIS
    printf 'Here is a faster kernel.\n\n```c\n'
    cat "$1"
    printf '```\n\nHYPOTHESIS: %s\n' "$2"
}
answer "$PLANTS/rmsnorm_honest_unroll8.c" "unroll by 8 with 8 accumulators" >"$tmp/answer1.md"
answer "$PLANTS/rmsnorm_09_zeros.c" "skip the work, write zeros" >"$tmp/answer2.md"
cp "$FIX/noanswer.md" "$tmp/noanswer.md"

# ---- drafts and duplicates -------------------------------------------------------

# reformat FILE I: the same program spelled another way: a comment line, the
# indentation, spaces and line-end comments varied by I.
reformat() {
    printf '// reformatted copy %s\n' "$2"
    sed -e "s/^    /$(printf '%*s' "$2" '')/" -e 's/ = /  =   /g' -e 's/for (/for(/' \
        -e "s|;\$|; // copy $2|" "$1"
}
# answer_of SOURCE HYPOTHESIS: a model answer holding SOURCE (a file).
answer_of() {
    printf 'A kernel.\n\n```c\n'
    cat "$1"
    printf '```\n\nHYPOTHESIS: %s\n' "$2"
}
# kilnd_jobs: how many jobs kilnd has run so far.
kilnd_jobs() { grep -c ' job j' "$DAEMONLOG" 2>/dev/null; }

# wait_db DB SQL: until the query prints something other than 0 / nothing
# (30 s at most); returns 1 on timeout.
wait_db() {
    local i v
    for ((i = 0; i < 1500; i++)); do
        if [ -f "$1" ]; then
            v=$(sq "$1" "$2")
            [ -n "$v" ] && [ "$v" != 0 ] && case $v in Error*) ;; *) return 0 ;; esac
        fi
        sleep 0.02
    done
    return 1
}
