#!/usr/bin/env bash
# answers_test.sh - the answer corpus (tests/fake_llm/answers/rmsnorm, one
# answer per request from tests/fake_llm) through `kiln search rmsnorm
# --agent openai`: each answer's treatment and note in the run database.
# Prose around the code, the defining block of two, a clean diff against the
# parent: verified; two complete files or none, host code (a main()), a
# stale diff, an unclosed fence, finish_reason "length" and a refusal:
# recorded with a note, never verified; a wrong signature: a compile
# failure that names the signature; and Anthropic's stop_reason
# "max_tokens". (The unit side is tests/unit/test_parse.c.)
# Timing: it takes turns with the other timing tests.
#
# usage: answers_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

ANS=$SRC/tests/fake_llm/answers/rmsnorm
# The script's order is the requests': the diffs first, while the parent is
# still the starter they were written against.
order=(diff_stale diff_clean prose two_blocks two_files host_main wrong_signature cut_fence
       cut_length refusal)
script=
for a in "${order[@]}"; do
    step=ok
    [ "$a" = cut_length ] && step=length   # finish_reason "length"
    script+="$step $ANS/$a.md"$'\n'
done
start_fake answers "$script"

begin
WS=$tmp/ws
OPENAI_API_KEY=test kiln "$tmp/out" "$tmp/err" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations ${#order[@]} --workspace "$WS" "${FAST[@]}"
[ "$RC" -eq 0 ] || problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/err")"
DB=$WS/.kiln/kiln.db
RUN=$(last_run "$WS")
nreq=$(wc -l <"$FLOG")
[ "$nreq" = ${#order[@]} ] || problem "fake_llm saw $nreq requests, expected ${#order[@]}:"$'\n'"$(tail_of "$FLOG")"
end "a search over the answer corpus runs to the end, one request per answer"
stop_if_failed

row() {   # N: status|stage|code|reason of candidate N
    sq "$DB" "SELECT status || '|' || stage || '|' || code || '|' || reason FROM candidates WHERE run='$RUN' AND n=$1"
}
# refused N WHAT REASON: candidate N is recorded, not verified, with that reason.
refused() {
    local got
    got=$(row "$1")
    [ "$got" = "error|propose|bad-answer|answer: $3" ] ||
        problem "candidate $1 ($2): '$got', expected refused with 'answer: $3'"
    [ -z "$(sq "$DB" "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=$1")" ] ||
        problem "candidate $1 ($2) has a commit: it was verified"
}
# verified N WHAT HYPOTHESIS: candidate N passed, with that hypothesis.
verified() {
    local got
    got=$(sq "$DB" "SELECT status || '|' || hypothesis FROM candidates WHERE run='$RUN' AND n=$1")
    [ "$got" = "pass|$3" ] || problem "candidate $1 ($2): '$got', expected 'pass|$3'; $(row "$1")"
}

begin
verified 3 "prose around the code" "four independent accumulators break the add dependency chain"
verified 4 "a usage snippet and the file" "two accumulators halve the dependency chain"
src=$(sq "$DB" "SELECT source FROM candidates WHERE run='$RUN' AND n=4")
grep -q 'harness would call' <<<"$src" && problem "candidate 4's source holds the prose"
grep -q '^rmsnorm(x, w, y' <<<"$src" && problem "candidate 4's source is the usage snippet"
refused 5 "two complete files" \
    "the answer has 2 code blocks that look like complete files; send exactly one"
end "prose around the code is parsed; of two blocks the one that defines rmsnorm is taken, two files are refused"

begin
refused 8 "an unclosed fence" "truncated: the code block is not closed (the answer was cut off)"
refused 9 'finish_reason "length"' \
    'truncated: the answer was cut off at the token limit (finish reason "length"); it is not verified'
end "cut-off answers (an unclosed fence, finish_reason length) are noted truncated, not verified"

begin
refused 10 "a refusal" "refusal: the model declined and sent no code: \"I'm sorry, but I can't help with that. Rewriting this kernel is outside what I\""
ans=$(sq "$DB" "SELECT answer FROM candidates WHERE run='$RUN' AND n=10")
grep -qF "I'm sorry, but I can't help with that." <<<"$ans" || problem "candidate 10's answer is not kept: '$ans'"
end "a refusal is recorded as one, with the model's words, not verified"

begin
refused 6 "host code" "host code: the file defines main(); send only the kernel file (kiln's harness calls the kernel itself)"
end "a kernel with a main() around it is refused, saying so"

begin
got=$(row 7)
want="fail|compile|compile-error|fail at compile (compile-error): the candidate's rmsnorm() does not match the task's signature: expected void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps) (kiln task show rmsnorm)"
[ "$got" = "$want" ] || problem "candidate 7 (wrong signature): '$got', expected '$want'"
fb=$(sq "$DB" "SELECT verdict FROM candidates WHERE run='$RUN' AND n=7")
grep -qF "conflicting types for 'rmsnorm'" <<<"$fb" ||
    problem "candidate 7's feedback lacks the compiler's log: ${fb:0:600}"
end "a wrong signature is a compile failure that names the signature"

begin
refused 1 "a stale diff" "diff: it does not apply to the parent: hunk 1 (@@ -20,7 +20,7 @@) does not apply: its context and removed lines are not in the parent, in order, after line 0; send the complete file"
verified 2 "a clean diff" "four accumulators through the UNROLL knob"
src=$(sq "$DB" "SELECT source FROM candidates WHERE run='$RUN' AND n=2")
want=$(sed 's|^#define UNROLL 1 |#define UNROLL 4 |' "$SRC/kernels/rmsnorm/cpu/starter.c")
[ "$src" = "$want" ] || problem "candidate 2's source is not the starter with UNROLL 4:"$'\n'"$(diff <(echo "$want") <(echo "$src") | head -20)"
end "a diff is applied to the parent when it applies cleanly, else refused with a note"

begin
for n in 2 3 4 7; do
    c=$(sq "$DB" "SELECT commit_id FROM candidates WHERE run='$RUN' AND n=$n")
    git -C "$WS" cat-file -e "$c^{commit}" 2>/dev/null || problem "candidate $n's commit '$c' is not in the workspace"
done
end "each verified candidate has its commit in the workspace"

# Anthropic's name for the cut: stop_reason "max_tokens".
begin
start_fake answers-anthropic "length $ANS/cut_length.md"
WSA=$tmp/wsa
ANTHROPIC_API_KEY=k kiln "$tmp/a.out" "$tmp/a.err" search rmsnorm --agent anthropic --model fake \
    --base-url "http://127.0.0.1:$PORT" --iterations 1 --workspace "$WSA" "${FAST[@]}"
if [ "$RC" -ne 0 ]; then
    problem "exit $RC, expected 0"$'\n'"$(tail_of "$tmp/a.err")"
else
    RUNA=$(last_run "$WSA")
    got=$(sq "$WSA/.kiln/kiln.db" "SELECT status || '|' || code || '|' || reason FROM candidates WHERE run='$RUNA' AND n=1")
    want='error|bad-answer|answer: truncated: the answer was cut off at the token limit (finish reason "max_tokens"); it is not verified'
    [ "$got" = "$want" ] || problem "candidate 1: '$got', expected '$want'"
fi
end 'anthropic: stop_reason "max_tokens" is noted truncated, not verified'

t_done
