#!/usr/bin/env bash
# search_replay_test.sh - `kiln search --agent replay` over plant files: keep,
# wrong-output, crash, compile-error, and the run stops when the files are
# used up. The keep rests on timing: it takes turns with the other timing
# tests.
# (search_common.sh holds what the search tests share.)
#
# usage: search_replay_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 2. replay ===============================================================

begin
RD=$tmp/replay
mkdir -p "$RD"
cp "$PLANTS/rmsnorm_honest_unroll8.c" "$RD/01_unroll8.c"
cp "$PLANTS/rmsnorm_09_zeros.c" "$RD/02_zeros.c"
cp "$PLANTS/rmsnorm_21_null_write.c" "$RD/03_null_write.c"
cp "$FIX/not_c.c" "$RD/04_not_c.c"
WS2=$tmp/ws2
kiln "$tmp/2.out" "$tmp/2.err" search rmsnorm --agent replay --from "$RD" --iterations 10 --workspace "$WS2" "${FAST[@]}"
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/2.err")"
else
    RUN2=$(last_run "$WS2")
    got=$(sq "$WS2/.kiln/kiln.db" "SELECT group_concat(status || ':' || code || (CASE WHEN n = 1 THEN '' ELSE ':' || decision END), ' ') FROM (SELECT n, status, code, decision FROM candidates WHERE run='$RUN2' AND n>0 ORDER BY n)")
    want="pass:ok fail:wrong-output:revert fail:crash:revert fail:compile-error:revert"
    [ "$got" = "$want" ] || problem "decisions:codes are '$got', expected '$want'"
    its=$(sq "$WS2/.kiln/kiln.db" "SELECT iterations_done || ' ' || status FROM runs WHERE id='$RUN2'")
    [ "$its" = "4 done" ] || problem "runs.iterations_done/status '$its', expected '4 done' (the files are used up)"
    grep -q "every replay file has been judged" "$tmp/2.out" ||
        problem "the summary does not say the replay files are used up:"$'\n'"$(tail_of "$tmp/2.out")"
    consistent "$WS2" "$RUN2"
fi
end "replay search: pass, wrong-output, crash, compile-error; stops when the files are used up"

t_done
