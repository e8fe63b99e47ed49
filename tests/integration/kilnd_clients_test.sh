#!/usr/bin/env bash
# kilnd_clients_test.sh - integration tests of the verifier daemon kilnd: six
# concurrent kiln verify clients get their own verdicts; a client that goes
# away mid-job stalls nothing, and its verdict can be fetched.
# (kilnd_common.sh holds what the kilnd tests share.)
#
# usage: kilnd_clients_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/kilnd_common.sh"

start_main

# ---- c. concurrent clients -------------------------------------------------

begin
mode=$(stat -c %a "$S")
[ "$mode" = 600 ] || problem "socket mode $mode, expected 600"
end "c. socket file mode is 0600"

begin
declare -A want_rc=([h1]=0 [h2]=0 [h3]=0 [crash]=1 [spin]=1 [zeros]=1)
declare -A want_code=([h1]=ok [h2]=ok [h3]=ok [crash]=crash [spin]='timeout|resource-limit' [zeros]=wrong-output)
declare -A file=([h1]=$HONEST [h2]=$HONEST2 [h3]=$HONEST [crash]=$CRASH [spin]=$SPIN [zeros]=$ZEROS)
declare -A cpid=()
t0=$SECONDS
for k in h1 h2 h3 crash spin zeros; do
    timeout -k 5 180 "$KILN" verify "${file[$k]}" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
        >"$tmp/io/c.$k.out" 2>"$tmp/io/c.$k.err" </dev/null &
    cpid[$k]=$!
    t_bg "$!"
done
for k in h1 h2 h3 crash spin zeros; do
    wait "${cpid[$k]}"
    rc=$?
    what="$(grep -E '"(status|stage|code)"' "$tmp/io/c.$k.out" | head -3 | tr -d '\t\n')"
    if [ "${want_rc[$k]}" -eq 0 ]; then
        honest_out "$rc" "$tmp/io/c.$k.out" ||
            problem "$k (${file[$k]}): exit $rc, not a pass: $what $(head -c 300 "$tmp/io/c.$k.err")"
    else
        [ "$rc" -eq 1 ] && grep -Eq '"status":[[:space:]]*"fail"' "$tmp/io/c.$k.out" ||
            problem "$k (${file[$k]}): exit $rc, not a fail: $what $(head -c 300 "$tmp/io/c.$k.err")"
        grep -Eq "\"code\":[[:space:]]*\"(${want_code[$k]})\"" "$tmp/io/c.$k.out" ||
            problem "$k: code is not ${want_code[$k]}: $what"
    fi
done
end "c. 6 concurrent kiln verify clients get their own verdicts"

# ---- d. a client that disconnects mid-job ------------------------------------

begin
probe "$S" --close-after-accept --timeout-ms 20000 --verify-file "$HONEST" --task rmsnorm \
    --id gone --timing-ms 1500 --group decode
djob=$(job_of "$out")
[ $prc -eq 0 ] && [ -n "$djob" ] || problem "no accepted event: $out"
t0=$SECONDS
timeout -k 5 120 "$KILN" verify "$ZEROS" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/d.out" 2>"$tmp/io/d.err" </dev/null
rc=$?
[ $rc -eq 1 ] && grep -Eq '"code":[[:space:]]*"wrong-output"' "$tmp/io/d.out" ||
    problem "a later verify: exit $rc after $((SECONDS - t0)) s: $(head -c 300 "$tmp/io/d.err")"
end "d. a client gone mid-job does not stall the queue"

begin
if [ -n "$djob" ]; then
    result "$S" "$djob"
    [ "$(ev_of "$res")" = verdict ] || problem "result of $djob: ${res:0:300}"
    grep -q "\"job\":\"$djob\"" <<<"$res" || problem "result names another job: ${res:0:200}"
    grep -q "\"id\":\"r-$djob\"" <<<"$res" || problem "result does not carry the asker's id: ${res:0:200}"
    honest_line "$res" || problem "abandoned honest job did not pass: ${res:0:300}"
else
    problem "no job id from the previous check"
fi
end "d. the abandoned job's verdict can be fetched with result"

# ---- h. after all -------------------------------------------------------------

after_all 8
t_done
