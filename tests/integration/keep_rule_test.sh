#!/usr/bin/env bash
# keep_rule_test.sh - the search's keep rule (docs/search.md, "Keep rule")
# through the real binaries on the CPU backend: a model (tests/fake_llm)
# answers, in turn, a kernel 2.5x faster by geomean that is 4x slower on one
# shape (reverted, naming it), one as fast as its parent (reverted: its
# interval does not clear the margin) and one 4x faster (kept, its why and
# intervals recorded and shown by status and report); the same run resumed
# keeps its recorded rule and refuses another; --max-regression lets the
# one-shape regression through; the flags' validation errors; and reverify
# exiting 1 for a kernel slower than its recorded interval.
#
# usage: keep_rule_test.sh BUILD_DIR SOURCE_DIR
#
# Needs git and sqlite3.
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools git sqlite3
cd "$SRC" || exit 2
FIX=$SRC/tests/integration/keep
FAST=(--group decode --timing-ms 200)
# kiln ARGS...: stdout to $tmp/out, stderr to $tmp/err, exit status in RC.
kiln() {
    "$KILN" "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
}
sq() { sqlite3 -cmd '.timeout 5000' "$1/.kiln/kiln.db" "$2" 2>&1; }
last_run() { sq "$1" "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1"; }
expect_rc() { [ "$RC" -eq "$1" ] || problem "exit $RC, expected $1; stderr: $(tail -5 "$tmp/err")"; }
expect() {   # FILE REGEX
    grep -qE -e "$2" "$1" || problem "$(basename "$1") lacks '$2':"$'\n'"$(tail -15 "$1")"
}

start_fake() {   # SCRIPT
    local d=$tmp/fake$RANDOM
    mkdir -p "$d"
    printf '%s\n' "$1" >"$d/script"
    fake_llm "$d"
}
answer() {   # FILE HYPOTHESIS
    printf 'Here it is.\n\n```c\n'
    cat "$1"
    printf '```\n\nHYPOTHESIS: %s\n' "$2"
}
answer "$FIX/regress_v4.c" "fast but slow at 3000 columns" >"$tmp/a1.md"
answer "$FIX/same4.c" "the same work" >"$tmp/a2.md"
answer "$FIX/fast.c" "each row once" >"$tmp/a3.md"
search() {   # WS ARGS...: a model search from slow4.c
    local ws=$1
    shift
    OPENAI_API_KEY=test kiln search rmsnorm --agent openai --model fake \
        --base-url "http://127.0.0.1:$PORT/v1" --from "$FIX/slow4.c" --workspace "$ws" \
        "${FAST[@]}" "$@"
}

# ==== 1. the rule with its defaults =============================================

begin
start_fake "ok $tmp/a1.md
ok $tmp/a2.md
ok $tmp/a3.md"
WS=$tmp/ws
search "$WS" --iterations 3
expect "$tmp/out" "keep when the geomean.s interval clears 2% and no shape is surely 3% slower"
expect_rc 0
RUN=$(last_run "$WS")
c1=$(sq "$WS" "SELECT decision || '|' || why FROM candidates WHERE run='$RUN' AND n=1")
case $c1 in
    "revert|reverted: v4 "*" regresses by more than 3% (geomean "*) ;;
    *) problem "candidate 1 (4x slower at v4): '$c1', expected reverted naming v4" ;;
esac
g1=$(sq "$WS" "SELECT speedup > 1.5 FROM candidates WHERE run='$RUN' AND n=1")
[ "$g1" = 1 ] || problem "candidate 1's geomean against its parent is not above 1.5x: $(sq "$WS" "SELECT speedup FROM candidates WHERE run='$RUN' AND n=1")"
# Candidate 2 (as fast as its parent) is reverted by the margin on its first
# record or its re-time, as noise has it: unit_search_loop's revert_on_margin
# and retime_short_of_margin check both with scripted verdicts.
c3=$(sq "$WS" "SELECT decision || '|' || why FROM candidates WHERE run='$RUN' AND n=3")
[[ $c3 =~ ^keep\|kept:\ geomean\ [0-9.]+x\ \[[0-9.]+,\ [0-9.]+\]\ clears\ 2% ]] ||
    problem "candidate 3 (4x faster): '$c3', expected kept with its interval"
iv=$(sq "$WS" "SELECT speedup_lo < speedup AND speedup < speedup_hi AND confirm_lo > 1.02 AND baseline_lo > 0 FROM candidates WHERE run='$RUN' AND n=3")
[ "$iv" = 1 ] || problem "candidate 3's intervals: $(sq "$WS" "SELECT speedup_lo, speedup, speedup_hi, confirm_lo, baseline_lo FROM candidates WHERE run='$RUN' AND n=3")"
rule=$(sq "$WS" "SELECT keep_margin || ' ' || max_regression || ' ' || objective FROM runs WHERE id='$RUN'")
[ "$rule" = "0.02 0.03 geomean" ] || problem "runs records the rule as '$rule', expected '0.02 0.03 geomean'"
git -C "$WS" log --format=%B -n 1 "refs/kiln/rejected/$RUN/1" | grep -q "decision: revert - reverted: v4 " ||
    problem "the commit message of candidate 1 lacks its why"
end "defaults: a geomean win that regresses v4 is reverted, a 4x one is kept with its interval"

begin
kiln status --workspace "$WS"
expect_rc 0
expect "$tmp/out" "^keep rule: geomean's lower end above 1\.020x, no shape surely below 0\.970x"
expect "$tmp/out" "^kept #3: geomean [0-9.]+x \[[0-9.]+, [0-9.]+\] vs parent, pooled \(first [0-9.]+x \[[0-9.]+, [0-9.]+\], re-timed [0-9.]+x \[[0-9.]+, [0-9.]+\]\), [0-9.]+x \[[0-9.]+, [0-9.]+\] vs baseline$"
expect "$tmp/out" "^  kept: geomean .* clears 2%"
expect "$tmp/out" "^best: #3 .*x \[[0-9.]+, [0-9.]+\] against the task's baseline .*; two records pooled$"
kiln report --workspace "$WS" -o "$tmp/r.html"
expect_rc 0
expect "$tmp/r.html" "kept candidates and why"
expect "$tmp/r.html" "<td class=\"num\">[0-9.]+x \[[0-9.]+, [0-9.]+\]</td>"
expect "$tmp/r.html" "kept(:|&#58;) geomean"
expect "$tmp/r.html" "geomean [0-9.]+x \[[0-9.]+, [0-9.]+\], min"
end "status and report show the kept candidate's geomean with its interval and why"

# ==== 1b. claims are pooled re-timed measurements, lessons too ====================

# close A B: 0 when A and B agree to 1e-6 relative (awk: sqlite3 may lack sqrt).
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-6 * a) }'; }
gm() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.12g", sqrt(a * b) }'; }
begin
row=$(sq "$WS" "SELECT speedup || '|' || confirm_speedup || '|' || pooled_speedup || '|' ||
    json_extract(record_verdict, '$.summary.geomean_speedup') || '|' ||
    json_extract(rerecord_verdict, '$.summary.geomean_speedup') || '|' || speedup_vs_baseline || '|' ||
    json_extract(pooled_verdict, '$.summary.geomean_speedup') || '|' || record_job || '|' ||
    rerecord_job || '|' || why FROM candidates WHERE run='$RUN' AND n=3")
IFS='|' read -r first retime claim rec rerec vsb pooledv job rejob why3 <<<"$row"
# Per shape the pool is the geometric mean of the two ratios, so its
# geomean is the geometric mean of the two geomeans, unless a shape's two
# intervals did not overlap (then the lower is taken, and why says so).
if [[ $why3 != *"do not overlap"* ]]; then
    close "$claim" "$(gm "$first" "$retime")" ||
        problem "vs parent: claimed $claim, not the pool of $first and its re-time $retime"
    close "$vsb" "$(gm "$rec" "$rerec")" ||
        problem "vs baseline: claimed $vsb, not the pool of the record $rec and the re-record $rerec"
    # The two records differ (two fresh workers), and the claim is neither one.
    if [ "$rec" != "$rerec" ]; then
        [ "$vsb" != "$rec" ] && [ "$vsb" != "$rerec" ] ||
            problem "vs baseline: claimed $vsb is one of the records ($rec, $rerec), not their pool"
    fi
else
    # Apart, the lower is taken (pooled.c): per shape, or the lower record's
    # geomean when the geomeans' intervals are apart; never above the pool.
    awk -v c="$vsb" -v g="$(gm "$rec" "$rerec")" 'BEGIN { exit !(c > 0 && c <= g * 1.000001) }' ||
        problem "vs baseline: claimed $vsb above the pool $(gm "$rec" "$rerec") though intervals were apart"
    awk -v c="$claim" -v g="$(gm "$first" "$retime")" 'BEGIN { exit !(c > 0 && c <= g * 1.000001) }' ||
        problem "vs parent: claimed $claim above the pool $(gm "$first" "$retime") though intervals were apart"
fi
close "$vsb" "$pooledv" || problem "speedup_vs_baseline $vsb is not the stored pooled verdict's $pooledv"
[ -n "$job" ] && [ -n "$rejob" ] && [ "$job" != "$rejob" ] ||
    problem "record and re-record are not two jobs: '$job' '$rejob'"
best=$(sq "$WS" "SELECT best_speedup FROM runs WHERE id='$RUN'")
close "$best" "$vsb" || problem "runs.best_speedup $best is not the pooled $vsb"
start=$(sq "$WS" "SELECT (rerecord_verdict IS NOT NULL) || (pooled_verdict IS NOT NULL) FROM candidates WHERE run='$RUN' AND n=0")
[ "$start" = 11 ] || problem "the start kernel was not measured twice and pooled ($start)"
git -C "$WS" notes --ref=kiln-verdict show "$(sq "$WS" "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=3")" 2>/dev/null |
    grep -q '"pooled"' || problem "candidate 3's verdict note has no pooled verdict"
# Lessons: candidates 1 and 2 were screened out without a re-time: their
# clear speed (2.5x by geomean, or none) teaches nothing; 3's pooled one does.
nl=$(sq "$WS" "SELECT count(*) FROM lessons WHERE run='$RUN' AND kind='lesson' AND candidate IN (1, 2)")
[ "$nl" = 0 ] || problem "$nl speed lesson(s) from a single measurement: $(sq "$WS" "SELECT candidate, action FROM lessons WHERE run='$RUN' AND candidate IN (1, 2)")"
l3=$(sq "$WS" "SELECT count(*) FROM lessons WHERE run='$RUN' AND kind='lesson' AND candidate=3 AND action LIKE 'each row once made it %x faster' AND json_extract(evidence, '$.measured') LIKE 'pooled%'")
[ "$l3" = 1 ] || problem "no pooled speed lesson for candidate 3: $(sq "$WS" "SELECT candidate, kind, action, evidence FROM lessons WHERE run='$RUN'")"
e3=$(sq "$WS" "SELECT effect FROM lessons WHERE run='$RUN' AND kind='lesson' AND candidate=3")
close "$e3" "$claim" || problem "candidate 3's lesson effect $e3 is not the pooled claim $claim"
end "best, status and lessons rest on pooled re-timed measurements (record + re-record, verdict + re-time)"

# ==== 2. resume keeps the recorded rule ==========================================

begin
search "$WS" --resume "$RUN" --keep-margin 5%
expect_rc 2
expect "$tmp/err" "run $RUN keeps candidates with --keep-margin 2%; --keep-margin 5% cannot change that"
search "$WS" --resume "$RUN" --objective min
expect_rc 2
expect "$tmp/err" "keeps candidates by --objective geomean; --objective min cannot change that"
search "$WS" --resume "$RUN" --keep-margin 2% --iterations 3
expect_rc 0
rule=$(sq "$WS" "SELECT keep_margin || ' ' || max_regression || ' ' || objective FROM runs WHERE id='$RUN'")
[ "$rule" = "0.02 0.03 geomean" ] || problem "after the resume runs records '$rule'"
end "--resume keeps the run's keep rule; another --keep-margin or --objective is refused (exit 2)"

# ==== 3. the flags change the decision ===========================================

begin
start_fake "ok $tmp/a1.md"
WS2=$tmp/ws2
search "$WS2" --iterations 1 --max-regression 90%
expect_rc 0
RUN2=$(last_run "$WS2")
c1=$(sq "$WS2" "SELECT decision || '|' || why FROM candidates WHERE run='$RUN2' AND n=1")
case $c1 in
    "keep|kept: geomean "*" clears 2%, no shape surely below 0.100x"*) ;;
    *) problem "with --max-regression 90% candidate 1 is '$c1', expected kept" ;;
esac
rule=$(sq "$WS2" "SELECT keep_margin || ' ' || max_regression || ' ' || objective FROM runs WHERE id='$RUN2'")
[ "$rule" = "0.02 0.9 geomean" ] || problem "runs records '$rule'"
start_fake "ok $tmp/a1.md"
WS3=$tmp/ws3
search "$WS3" --iterations 1 --max-regression 90% --objective v4
expect_rc 0
c1=$(sq "$WS3" "SELECT decision || '|' || why FROM candidates WHERE run=(SELECT id FROM runs) AND n=1")
case $c1 in
    "revert|reverted: v4 "*" does not clear 2%") ;;
    *) problem "with --objective v4 candidate 1 is '$c1', expected reverted on v4" ;;
esac
end "--max-regression 90% keeps the v4 regression; --objective v4 reverts it"

# ==== 4. validation, before any workspace ========================================

begin
for bad in "--keep-margin 2|--keep-margin: '2' is not a percentage" \
           "--keep-margin -1%|--keep-margin: '-1%' is not a percentage" \
           "--max-regression 100%|--max-regression: '100%' is not a percentage" \
           "--max-regression 3%%|--max-regression: '3%%' is not a percentage" \
           "--objective v7|--objective 'v7': expected geomean, min, per-shape or a visible shape of rmsnorm's cpu group decode \(v1 to v6\)" \
           "--objective mean|--objective 'mean': expected geomean, min" \
           "--objective v0|--objective 'v0': expected"; do
    args=${bad%%|*}
    msg=${bad#*|}
    # shellcheck disable=SC2086
    kiln search rmsnorm --workspace "$tmp/never" --group decode $args
    [ "$RC" -eq 2 ] || problem "$args: exit $RC, expected 2"
    grep -qE -e "$msg" "$tmp/err" || problem "$args: stderr lacks '$msg': $(cat "$tmp/err")"
done
[ -e "$tmp/never" ] && problem "a refused search left a workspace behind"
kiln search --help
expect "$tmp/out" "--keep-margin P"
expect "$tmp/out" "--max-regression P"
expect "$tmp/out" "--objective O"
kiln help search
expect "$tmp/out" "--objective O"
end "bad --keep-margin, --max-regression and --objective exit 2 with a clear message; --help lists them"

# ==== 5. reverify: slower beyond the interval ====================================

begin
start=$(sq "$WS" "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=0")
kept=$(sq "$WS" "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=3")
# The start kernel (4x slower) claims the kept kernel's record: re-measured,
# its interval lies wholly below the claimed one.
git -C "$WS" notes --ref=kiln-verdict copy -f "$kept" "$start" 2>"$tmp/gerr" ||
    problem "cannot copy the note: $(cat "$tmp/gerr")"
kiln reverify --workspace "$WS" "$start" --timing-ms 200
expect_rc 1
expect "$tmp/out" "REGRESSION: slower: geomean [0-9.]+x \[[0-9.]+, [0-9.]+\] -> [0-9.]+x \[[0-9.]+, [0-9.]+\], wholly below the recorded interval"
kiln reverify --workspace "$WS" "$start" --timing-ms 200 --json
expect_rc 1
expect "$tmp/out" '"old_interval":\[[0-9.]+,[0-9.]+\],"new_interval":\['
end "reverify exits 1 for a kernel whose new interval lies below its recorded one"

t_done
