#!/usr/bin/env bash
# search_resume_test.sh - `kiln search` stopped mid-run: kill -9 during a
# verification, then --resume (it finishes, nothing verified twice), and
# Ctrl-C (status stopped, exit 130), then --resume; git and the run
# database agree after each.
# (search_common.sh holds what the search tests share.)
#
# usage: search_resume_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 6. kill -9 in the middle, then resume ==================================================

begin
WS6=$tmp/ws6
DB6=$WS6/.kiln/kiln.db
jobs_before=$(grep -c ' job j' "$DAEMONLOG" 2>/dev/null)
"$KILN" search rmsnorm --iterations 3 --workspace "$WS6" --json "${FAST[@]}" >"$tmp/6.json" 2>"$tmp/6.err" &
pid=$!
t_bg "$pid"
if ! wait_db "$DB6" "SELECT count(*) FROM candidates WHERE n=1 AND job<>''"; then
    problem "candidate 1 never got a job"$'\n'"$(tail_of "$tmp/6.err")"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
else
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    st=$(sq "$DB6" "SELECT n || ':' || state FROM candidates ORDER BY n")
    echo "# killed with candidates: $(echo $st)"
    kiln "$tmp/6b.out" "$tmp/6b.err" search --workspace "$WS6" --resume last "${FAST[@]}"
    if [ "$RC" -ne 0 ]; then
        problem "resume: exit $RC, expected 0"$'\n'"$(tail_of "$tmp/6b.err")"
    else
        RUN6=$(last_run "$WS6")
        runs=$(sq "$DB6" "SELECT count(*) FROM runs")
        [ "$runs" = 1 ] || problem "$runs runs in the database, expected 1 (resume continues the run)"
        its=$(sq "$DB6" "SELECT iterations_done || ' ' || status FROM runs WHERE id='$RUN6'")
        [ "$its" = "3 done" ] || problem "runs.iterations_done/status '$its', expected '3 done'"
        ids=$(sq "$DB6" "SELECT job FROM candidates WHERE job<>'' UNION ALL SELECT confirm_job FROM candidates WHERE confirm_job<>'' UNION ALL SELECT record_job FROM candidates WHERE record_job<>'' UNION ALL SELECT rerecord_job FROM candidates WHERE rerecord_job<>''")
        nids=0
        for id in $ids; do
            nids=$((nids + 1))
            c=$(grep -c " job $id " "$DAEMONLOG")
            [ "$c" = 1 ] || problem "kilnd job $id appears $c times in kilnd.log, expected once"
        done
        dup=$(printf '%s\n' $ids | sort | uniq -d)
        [ -z "$dup" ] || problem "job ids recorded twice in the database: $dup"
        # Nothing verified that the database does not know of either.
        jobs_after=$(grep -c ' job j' "$DAEMONLOG")
        [ $((jobs_after - jobs_before)) = "$nids" ] ||
            problem "kilnd ran $((jobs_after - jobs_before)) jobs for this run, the database records $nids"
        consistent "$WS6" "$RUN6"
    fi
fi
end "kill -9 during a verification, then --resume last: finishes, nothing verified twice, consistent"

# ==== 7. Ctrl-C ==============================================================================

begin
WS7=$tmp/ws7
DB7=$WS7/.kiln/kiln.db
"$KILN" search rmsnorm --from "$FIX/many_knobs.c" --iterations 20 --workspace "$WS7" "${FAST[@]}" \
    >"$tmp/7.out" 2>"$tmp/7.err" &
pid=$!
t_bg "$pid"
if ! wait_db "$DB7" "SELECT count(*) FROM candidates WHERE n=1"; then
    problem "candidate 1 never appeared"$'\n'"$(tail_of "$tmp/7.err")"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
else
    kill -INT "$pid"
    for ((i = 0; i < 600; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        problem "still running 60 s after one SIGINT"
        kill -9 "$pid"
    fi
    wait "$pid"
    RC=$?
    [ "$RC" -eq 130 ] || problem "exit $RC after one SIGINT, expected 130"$'\n'"$(tail_of "$tmp/7.err")"
    RUN7=$(last_run "$WS7")
    st=$(sq "$DB7" "SELECT status || ' ' || iterations_done FROM runs WHERE id='$RUN7'")
    case $st in
        "stopped "[01]) ;;
        *) problem "runs.status/iterations_done '$st', expected 'stopped' after at most one iteration" ;;
    esac
    grep -q interrupted "$tmp/7.out" || problem "the summary does not say interrupted:"$'\n'"$(tail_of "$tmp/7.out")"
    consistent "$WS7" "$RUN7" stopped
    kiln "$tmp/7b.out" "$tmp/7b.err" search --workspace "$WS7" --resume last --iterations 2 "${FAST[@]}"
    if [ "$RC" -ne 0 ]; then
        problem "resume: exit $RC, expected 0"$'\n'"$(tail_of "$tmp/7b.err")"
    else
        st=$(sq "$DB7" "SELECT status || ' ' || iterations_done FROM runs WHERE id='$RUN7'")
        [ "$st" = "done 2" ] || problem "after the resume runs.status/iterations_done is '$st', expected 'done 2'"
        consistent "$WS7" "$RUN7"
    fi
fi
end "Ctrl-C: stops after the current step with status stopped and exit 130, consistent; --resume last --iterations 2 completes"

t_done
