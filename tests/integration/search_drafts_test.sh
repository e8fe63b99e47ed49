#!/usr/bin/env bash
# search_drafts_test.sh - the drafts of one `kiln search` iteration: their requests
# differ (temperatures 0.2, 0.5, 0.8), a source verified before (reformatted
# or not) is a duplicate that never reaches kilnd, and a copy of the parent
# is reverted as such, never verified.
# (search_common.sh holds what the search tests share.)
#
# usage: search_drafts_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ---- diverse drafts and no source verified twice ---------------------------------

# The drafts of an iteration ask different things: a direction each and a
# temperature each (0.2, 0.5, 0.8 for three), so no two request bodies of
# an iteration are the same (fake_llm logs t= and a hash of each body).
begin
start_fake drafts "ok $tmp/noanswer.md"
WS3D=$tmp/ws3d
OPENAI_API_KEY=test kiln "$tmp/3d.out" "$tmp/3d.err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 2 --drafts 3 --workspace "$WS3D" "${FAST[@]}"
[ "$RC" -eq 0 ] || problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/3d.err")"
[ "$(wc -l <"$FLOG")" = 6 ] || problem "fake_llm saw $(wc -l <"$FLOG") requests, expected 6:"$'\n'"$(tail_of "$FLOG")"
for it in 1 2; do
    lines=$(sed -n "$((it * 3 - 2)),$((it * 3))p" "$FLOG")
    temps=$(grep -o ' t=[^ ]*' <<<"$lines" | sort | tr -d '\n')
    [ "$temps" = " t=0.2 t=0.5 t=0.8" ] || problem "iteration $it: temperatures '$temps', expected 0.2, 0.5 and 0.8"
    hashes=$(grep -o ' h=[0-9a-f]*' <<<"$lines" | sort -u | wc -l)
    [ "$hashes" = 3 ] || problem "iteration $it: $hashes different request bodies among 3:"$'\n'"$lines"
done
end "diverse drafts: the 3 requests of an iteration differ, temperatures 0.2, 0.5 and 0.8"

# Answers that repeat a source verified before, reformatted or not, are
# recorded as duplicates of it and never reach kilnd. The drafts of an
# iteration ask at once, so which of the first two is verified depends on
# the order they reach the fake; the other is its duplicate.
begin
reformat "$PLANTS/rmsnorm_09_zeros.c" 1 >"$tmp/zeros1.c"
reformat "$PLANTS/rmsnorm_09_zeros.c" 2 >"$tmp/zeros2.c"
answer_of "$PLANTS/rmsnorm_09_zeros.c" "write zeros" >"$tmp/z0.md"
answer_of "$tmp/zeros1.c" "write zeros, tidier" >"$tmp/z1.md"
answer_of "$tmp/zeros2.c" "write zeros, tidier still" >"$tmp/z2.md"
start_fake dups "ok $tmp/z0.md
ok $tmp/z1.md
ok $tmp/z2.md
ok $tmp/z0.md"
WS3E=$tmp/ws3e
DB3E=$WS3E/.kiln/kiln.db
jobs_before=$(kilnd_jobs)
OPENAI_API_KEY=test kiln "$tmp/3e.out" "$tmp/3e.err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 2 --drafts 2 --workspace "$WS3E" "${FAST[@]}"
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/3e.err")"
else
    RUN3E=$(last_run "$WS3E")
    ver=$(sq "$DB3E" "SELECT n || ':' || status || ':' || code FROM candidates WHERE run='$RUN3E' AND n>0 AND job<>''")
    k=${ver%%:*}
    case $ver in
        [12]":fail:wrong-output") ;;
        *) problem "verified candidates (n:status:code) are '$ver', expected one of #1, #2 failing as wrong-output" ;;
    esac
    dups=$(sq "$DB3E" "SELECT count(*) FROM candidates WHERE run='$RUN3E' AND n>0 AND job='' AND
                       confirm_job='' AND record_job='' AND rerecord_job='' AND code='duplicate' AND decision='revert' AND
                       status='fail' AND reason LIKE 'same source as candidate #$k,%'")
    [ "$dups" = 3 ] || problem "$dups candidates recorded as duplicates of #$k without a job, expected 3:"$'\n'"$(sq "$DB3E" "SELECT n, job, status, code, reason FROM candidates WHERE run='$RUN3E'")"
    jobs=$(( $(kilnd_jobs) - jobs_before ))
    [ "$jobs" = 3 ] || problem "kilnd ran $jobs jobs for this run, expected 3 (the start kernel's record and re-record, and #$k)"
    id=$(sq "$DB3E" "SELECT job FROM candidates WHERE run='$RUN3E' AND n=$k")
    c=$(grep -c " job $id " "$DAEMONLOG")
    [ "$c" = 1 ] || problem "kilnd job $id of #$k appears $c times in kilnd.log, expected once"
    consistent "$WS3E" "$RUN3E"
fi
end "no source verified twice: 3 repeats of a verified source (2 reformatted) are duplicates, no kilnd job"

# A copy of the parent is never faster than it: 10 reformatted copies are
# reverted as such without one verification, and none is kept.
begin
script=
for i in 1 2 3 4 5 6 7 8 9 10; do
    reformat "$PLANTS/rmsnorm_honest_unroll8.c" "$i" >"$tmp/copy$i.c"
    answer_of "$tmp/copy$i.c" "the same kernel, tidied ($i)" >"$tmp/copy$i.md"
    script+="ok $tmp/copy$i.md"$'\n'
done
start_fake copies "$script"
WS3F=$tmp/ws3f
DB3F=$WS3F/.kiln/kiln.db
jobs_before=$(kilnd_jobs)
OPENAI_API_KEY=test kiln "$tmp/3f.out" "$tmp/3f.err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --from "$PLANTS/rmsnorm_honest_unroll8.c" \
    --iterations 5 --drafts 2 --workspace "$WS3F" "${FAST[@]}"
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/3f.err")"
else
    RUN3F=$(last_run "$WS3F")
    got=$(sq "$DB3F" "SELECT count(*) || ' ' || sum(decision='keep') || ' ' ||
                      sum(job<>'' OR confirm_job<>'' OR record_job<>'' OR rerecord_job<>'') || ' ' ||
                      sum(reason LIKE 'same source as its parent (#0),%')
                      FROM candidates WHERE run='$RUN3F' AND n>0")
    [ "$got" = "10 0 0 10" ] ||
        problem "candidates, kept, verified, copies of the parent: '$got', expected '10 0 0 10':"$'\n'"$(sq "$DB3F" "SELECT n, decision, job, code, reason FROM candidates WHERE run='$RUN3F'")"
    jobs=$(( $(kilnd_jobs) - jobs_before ))
    [ "$jobs" = 2 ] || problem "kilnd ran $jobs jobs for this run, expected 2 (the start kernel's record and re-record)"
    head=$(sq "$DB3F" "SELECT (SELECT head_commit FROM runs WHERE id='$RUN3F') = commit_id
                       FROM candidates WHERE run='$RUN3F' AND n=0")
    [ "$head" = 1 ] || problem "the run's head moved off the start kernel"
    consistent "$WS3F" "$RUN3F"
fi
end "a reformatted copy of the parent, 10 times: reverted as the parent's copy, never verified, never kept"

t_done
