#!/usr/bin/env bash
# search_tune_test.sh - `kiln search` with the offline tuner, from the task's tunable
# kernel: a kept setting (> 1.2x), the git workspace and the run database
# agree, hypotheses in git log, the same seed proposes the same. The keep
# rests on timing: it takes turns with the other timing tests.
# (search_common.sh holds what the search tests share.)
#
# usage: search_tune_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 1. the offline tuner ==========================================================

begin
WS1=$tmp/ws1
kiln "$tmp/1.out" "$tmp/1.err" search rmsnorm --iterations 4 --seed 7 --workspace "$WS1" "${FAST[@]}"
RUN1=
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/1.err")"
else
    DB1=$WS1/.kiln/kiln.db
    RUN1=$(last_run "$WS1")
    best=$(sq "$DB1" "SELECT max(speedup_vs_baseline) FROM candidates WHERE run='$RUN1' AND n>0 AND decision='keep'")
    if [ -z "$best" ]; then
        problem "no candidate after the start was kept:"$'\n'"$(sq "$DB1" "SELECT n, decision, hypothesis, reason FROM candidates")"
    elif ! awk -v b="$best" 'BEGIN { exit !(b > 1.2) }'; then
        problem "best kept speedup_vs_baseline is $best, expected > 1.2 (the tunable kernel's settings reach 2-4x)"
    fi
    # The tuner starts from the task's tunable kernel, not the baseline.
    start=$(sq "$DB1" "SELECT hypothesis FROM candidates WHERE run='$RUN1' AND n=0")
    case $start in *kernels/rmsnorm/cpu/tunable.c) ;; *) problem "the start is '$start', expected kernels/rmsnorm/cpu/tunable.c" ;; esac
    consistent "$WS1" "$RUN1"
    br=$(sq "$DB1" "SELECT branch FROM runs WHERE id='$RUN1'")
    log=$(git -C "$WS1" log --format=%s "$br" 2>&1)
    grep -Eq '^[A-Z_]+ [0-9]+ -> [0-9]+(, [A-Z_]+ [0-9]+ -> [0-9]+)*$' <<<"$log" ||
        problem "git log $br has no 'KNOB a -> b' hypothesis line:"$'\n'"$log"
    # Every candidate commit's message starts with its hypothesis.
    while IFS='|' read -r n hyp commit; do
        [ -n "$commit" ] || continue
        subj=$(git -C "$WS1" log -1 --format=%s "$commit" 2>&1)
        [ "$subj" = "$hyp" ] || problem "candidate $n: commit subject '$subj', hypothesis '$hyp'"
    done < <(sq "$DB1" "SELECT n, hypothesis, commit_id FROM candidates WHERE run='$RUN1' AND n>0")
    # The same seed in a fresh workspace proposes the same first hypothesis.
    kiln "$tmp/1b.out" "$tmp/1b.err" search rmsnorm --iterations 1 --seed 7 --workspace "$tmp/ws1b" "${FAST[@]}"
    if [ "$RC" -ne 0 ]; then
        problem "second search (same seed): exit $RC"$'\n'"$(tail_of "$tmp/1b.err")"
    else
        h1=$(sq "$DB1" "SELECT hypothesis FROM candidates WHERE run='$RUN1' AND n=1")
        h2=$(sq "$tmp/ws1b/.kiln/kiln.db" "SELECT hypothesis FROM candidates WHERE n=1")
        [ -n "$h1" ] && [ "$h1" = "$h2" ] ||
            problem "same --seed 7, different first hypotheses: '$h1' vs '$h2'"
    fi
fi
end "tune search from the tunable kernel: a kept setting (> 1.2x), git and database agree, hypotheses in git log, same seed same proposal"

t_done
