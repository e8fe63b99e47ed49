#!/usr/bin/env bash
# search_model_down_test.sh - a model server that keeps failing stops `kiln search`: exit
# 3 naming it after N failures over T, nothing shown, and the run resumes
# once the server answers.
# (search_common.sh holds what the search tests share.)
#
# usage: search_model_down_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# A model server that keeps failing stops the run: N failed calls in a row
# (each already retried with backoff) over at least T; exit 3 naming the
# server and the last error; the run is kept and resumes once it answers.
begin
start_fake openai-down "status 500 1"
WS3B=$tmp/ws3b
DB3B=$WS3B/.kiln/kiln.db
OPENAI_API_KEY=test kiln "$tmp/3b.out" "$tmp/3b.err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 50 --model-failures 2 \
    --model-failure-window 1s --workspace "$WS3B" "${FAST[@]}"
[ "$RC" -eq 3 ] || problem "exit $RC, expected 3"$'\n'"$(tail_of "$tmp/3b.err")"
grep -q "model server at http://127.0.0.1:$PORT/v1 failed 2 calls in a row" "$tmp/3b.err" &&
    grep -q "500" "$tmp/3b.err" ||
    problem "no message naming the server and the last error:"$'\n'"$(tail_of "$tmp/3b.err")"
RUN3B=$(last_run "$WS3B")
st=$(sq "$DB3B" "SELECT status || ' ' || (SELECT count(*) FROM llm_calls WHERE run='$RUN3B')
                 FROM runs WHERE id='$RUN3B'")
[ "$st" = "failed 2" ] || problem "runs.status and model calls '$st', expected 'failed 2'"
shown=$(sq "$DB3B" "SELECT count(*) FROM lesson_shown" 2>/dev/null)
[ "${shown:-0}" = 0 ] || problem "$shown lesson_shown rows from failed model calls, expected none"
start_fake openai-up "ok $tmp/answer1.md"
OPENAI_API_KEY=test kiln "$tmp/3c.out" "$tmp/3c.err" search --workspace "$WS3B" --resume last \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 3 "${FAST[@]}"
[ "$RC" -eq 0 ] || problem "resume with the server back: exit $RC, expected 0"$'\n'"$(tail_of "$tmp/3c.err")"
[ "$(sq "$DB3B" "SELECT status FROM runs WHERE id='$RUN3B'")" = done ] ||
    problem "after the resume the run is not done"
end "a model server that keeps failing: exit 3 naming it after N failures over T, nothing shown, resumable"

t_done
