#!/usr/bin/env bash
# search_openai_test.sh - `kiln search` with the OpenAI-compatible agent against
# tests/fake_llm: a passing answer, a 429 retried, a cheat reverted, malformed
# and code-less answers recorded, tokens counted. The keep rests on timing:
# it takes turns with the other timing tests.
# (search_common.sh holds what the search tests share.)
#
# usage: search_openai_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 3. OpenAI-compatible agent against fake_llm ======================================

begin
start_fake openai "ok $tmp/answer1.md
status 429 1
ok $tmp/answer2.md
malformed
ok $tmp/noanswer.md"
WS3=$tmp/ws3
OPENAI_API_KEY=test kiln "$tmp/3.out" "$tmp/3.err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 4 --workspace "$WS3" "${FAST[@]}"
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/3.err")"
else
    DB3=$WS3/.kiln/kiln.db
    RUN3=$(last_run "$WS3")
    calls=$(sq "$DB3" "SELECT count(*) FROM llm_calls WHERE run='$RUN3'")
    [ "$calls" = 4 ] || problem "$calls llm_calls rows, expected 4 (one per iteration)"
    tok=$(sq "$DB3" "SELECT count(*) FROM llm_calls WHERE run='$RUN3' AND ok=1 AND prompt_tokens>0 AND completion_tokens>0")
    [ "$tok" -ge 2 ] 2>/dev/null || problem "only '$tok' successful llm_calls with tokens > 0"
    retried=$(sq "$DB3" "SELECT n || ':' || attempts || ':' || ok FROM llm_calls WHERE run='$RUN3' AND attempts>=2")
    [ "$retried" = "2:2:1" ] || problem "the 429 retry: llm_calls with attempts >= 2 are '$retried', expected '2:2:1'"
    c1=$(sq "$DB3" "SELECT status || '|' || hypothesis FROM candidates WHERE run='$RUN3' AND n=1")
    [ "$c1" = "pass|unroll by 8 with 8 accumulators" ] ||
        problem "candidate 1: '$c1', expected to pass with the hypothesis; why: $(sq "$DB3" "SELECT status || ' ' || code || ' ' || speedup || ' ' || confirm_speedup || ': ' || reason FROM candidates WHERE run='$RUN3' AND n=1")"
    c2=$(sq "$DB3" "SELECT decision || '|' || status || '|' || code FROM candidates WHERE run='$RUN3' AND n=2")
    case $c2 in
        "revert|fail|wrong-output" | "revert|fail|"* | "revert|suspect|"*) ;;
        *) problem "candidate 2 (zeros): '$c2', expected reverted as wrong-output" ;;
    esac
    [ "$c2" = "revert|fail|wrong-output" ] || [ -n "${probs[*]}" ] ||
        echo "# note: the zeros cheat was rejected as '$c2', not wrong-output"
    c3=$(sq "$DB3" "SELECT decision || '|' || status || '|' || code || '|' || reason FROM candidates WHERE run='$RUN3' AND n=3")
    case $c3 in
        "revert|error|llm-error|"*malformed*) ;;
        *) problem "candidate 3 (malformed response): '$c3', expected error llm-error with a reason about malformed JSON" ;;
    esac
    c4=$(sq "$DB3" "SELECT decision || '|' || status || '|' || code || '|' || reason FROM candidates WHERE run='$RUN3' AND n=4")
    case $c4 in
        "revert|error|bad-answer|"*"no fenced code block"*) ;;
        *) problem "candidate 4 (no code): '$c4', expected error bad-answer with a reason about the missing code block" ;;
    esac
    used=$(sq "$DB3" "SELECT tokens_used FROM runs WHERE id='$RUN3'")
    [ "$used" -gt 0 ] 2>/dev/null || problem "runs.tokens_used is '$used', expected > 0"
    sum=$(sq "$DB3" "SELECT sum(prompt_tokens + completion_tokens) FROM llm_calls WHERE run='$RUN3'")
    [ "$used" = "$sum" ] || problem "runs.tokens_used $used != the sum over llm_calls $sum"
    n429=$(grep -c ' status:429 ' "$FLOG")
    nreq=$(wc -l <"$FLOG")
    [ "$n429" = 1 ] && [ "$nreq" = 5 ] ||
        problem "fake_llm log: $nreq requests, $n429 answered 429 (expected 5 and 1):"$'\n'"$(tail_of "$FLOG")"
    grep -v ' openai ' "$FLOG" | grep -q . && problem "fake_llm saw non-openai requests:"$'\n'"$(tail_of "$FLOG")"
    consistent "$WS3" "$RUN3"
fi
end "openai search via fake_llm: passing answer, 429 retried, cheat reverted, malformed and code-less answers recorded"
# fake_llm logs one line per request (method, path, dialect, step, model,
# temperature, a hash of the body), not request bodies: whether the second
# prompt mentions the first attempt cannot be seen from here, so that is not
# checked.

t_done
