#!/usr/bin/env bash
# search_args_test.sh - bad input to `kiln search`: no API key, bad arguments, an unknown
# task, a garbage database, an unknown agent, a bad duration: exit 2, and
# no run or workspace left behind.
# (search_common.sh holds what the search tests share.)
#
# usage: search_args_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 5. no API key =====================================================================

begin
mkdir -p "$tmp/t5"
(cd "$tmp/t5" && env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY "$KILN" search rmsnorm --agent anthropic \
    --model x "${FAST[@]}" >"$tmp/5.out" 2>"$tmp/5.err")
RC=$?
[ "$RC" -eq 2 ] || problem "exit $RC, expected 2"$'\n'"$(tail_of "$tmp/5.err")"
grep -q ANTHROPIC_API_KEY "$tmp/5.err" || problem "stderr does not name ANTHROPIC_API_KEY:"$'\n'"$(tail_of "$tmp/5.err")"
# A search that cannot start leaves no run for --resume last to pick up.
if [ -f "$tmp/t5/kiln-work/.kiln/kiln.db" ]; then
    left=$(sq "$tmp/t5/kiln-work/.kiln/kiln.db" "SELECT count(*) FROM runs")
    [ "$left" = 0 ] || problem "$left run(s) recorded by a search that could not start"
fi
end "anthropic agent without a key: exit 2 naming ANTHROPIC_API_KEY"

begin
for bad in "--group nope" "--dtype f99" "--budget 5x" "--from $tmp/no-such-file.c"; do
    rm -rf "$tmp/ws5b"
    # shellcheck disable=SC2086
    "$KILN" search rmsnorm $bad --workspace "$tmp/ws5b" >"$tmp/5b.out" 2>"$tmp/5b.err"
    RC=$?
    [ "$RC" -eq 2 ] || problem "search $bad: exit $RC, expected 2"
    [ -e "$tmp/ws5b" ] && problem "search $bad left a workspace behind: $(ls -A "$tmp/ws5b" | head -3)"
done
end "bad arguments (group, dtype, budget, --from): exit 2 before any workspace exists"

# ==== 8. bad input ==========================================================================

begin
kiln "$tmp/8a.out" "$tmp/8a.err" search nosuchtask --workspace "$tmp/ws8a" "${FAST[@]}"
[ "$RC" -eq 2 ] && grep -q "no task named" "$tmp/8a.err" ||
    problem "nosuchtask: exit $RC, expected 2 with 'no task named':"$'\n'"$(tail_of "$tmp/8a.err")"
mkdir -p "$tmp/ws8b/.kiln"
head -c 4096 /dev/urandom >"$tmp/ws8b/.kiln/kiln.db"
printf 'this is not a database\n' | dd of="$tmp/ws8b/.kiln/kiln.db" conv=notrunc status=none
kiln "$tmp/8b.out" "$tmp/8b.err" search rmsnorm --workspace "$tmp/ws8b" "${FAST[@]}"
[ "$RC" -eq 2 ] && grep -q "$tmp/ws8b/.kiln/kiln.db" "$tmp/8b.err" ||
    problem "garbage kiln.db: exit $RC, expected 2 naming the file:"$'\n'"$(tail_of "$tmp/8b.err")"
kiln "$tmp/8c.out" "$tmp/8c.err" search rmsnorm --agent bogus --workspace "$tmp/ws8c" "${FAST[@]}"
[ "$RC" -eq 2 ] && grep -q "bogus" "$tmp/8c.err" ||
    problem "--agent bogus: exit $RC, expected 2 naming the agent:"$'\n'"$(tail_of "$tmp/8c.err")"
if [ -f "$tmp/ws8c/.kiln/kiln.db" ]; then
    left=$(sq "$tmp/ws8c/.kiln/kiln.db" "SELECT count(*) || ' ' || ifnull(group_concat(agent || ':' || status), '') FROM runs")
    [ "$left" = "0 " ] || problem "--agent bogus left runs behind (count agent:status): $left"
fi
kiln "$tmp/8d.out" "$tmp/8d.err" search rmsnorm --budget 5x --workspace "$tmp/ws8d" "${FAST[@]}"
[ "$RC" -eq 2 ] && grep -q -- "--budget" "$tmp/8d.err" ||
    problem "--budget 5x: exit $RC, expected 2 naming --budget:"$'\n'"$(tail_of "$tmp/8d.err")"
[ -e "$tmp/ws8d" ] && problem "--budget 5x created the workspace $tmp/ws8d"
end "bad input: unknown task, garbage database, unknown agent, bad duration -> exit 2"

t_done
