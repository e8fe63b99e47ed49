#!/usr/bin/env bash
# first_hour_test.sh - docs/first-hour.md stays runnable (issue 38, item 5):
# every "$ build/kiln SUB ..." line in the page's ```sh blocks names a
# subcommand the current kiln has, and each flag on that line is listed by
# `kiln SUB --help`. The page's outputs were captured once; this keeps its
# commands from going stale when a flag is renamed. No search is run.
#
# usage: first_hour_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

page=$SRC/docs/first-hour.md

# The page's command lines, without the "$ build/kiln " prompt: only lines
# inside ```sh fences, so an output line or prose cannot pass for one.
commands() {
    awk '/^```sh$/ { inblock = 1; next }
         /^```/    { inblock = 0; next }
         inblock && /^\$ build\/kiln / { sub(/^\$ build\/kiln /, ""); print }' "$1"
}

# flag_listed HELPFILE FLAG: FLAG appears in the help as a whole word
# (--work does not match --workspace; -o does not match --objective).
flag_listed() {
    grep -qE -- "(^|[^-[:alnum:]])$2([^-[:alnum:]]|\$)" "$1"
}

# check_line LINE: its subcommand's --help exits 0 and lists each flag.
check_line() {
    local line=$1 sub w words=()
    read -ra words <<<"$line"
    sub=${words[0]}
    "$KILN" "$sub" --help >"$tmp/help" 2>&1 </dev/null ||
        { problem "'$line': kiln $sub --help exits $?: $(head -c 200 "$tmp/help")"; return; }
    for w in "${words[@]:1}"; do
        case $w in
        -*) w=${w%%=*}
            flag_listed "$tmp/help" "$w" || problem "'$line': kiln $sub --help does not list $w" ;;
        esac
    done
}

begin
[ -f "$page" ] || fail "no $page"
commands "$page" >"$tmp/cmds"
n=$(wc -l <"$tmp/cmds")
# search, status, report, export, reverify: fewer means the fences or the
# prompt changed and this test would pass on nothing.
[ "$n" -ge 5 ] || problem "found $n command lines in $page, expected 5 or more"
for sub in search status report export reverify; do
    grep -q "^$sub " "$tmp/cmds" || problem "no '\$ build/kiln $sub' line in $page"
done
end "docs/first-hour.md has its five command lines inside sh blocks"

begin
while IFS= read -r line; do
    check_line "$line"
done <"$tmp/cmds"
end "each command's subcommand and flags are in the current kiln's --help"

begin
# The check can fail: a flag the help does not have, a prefix of one, and a
# subcommand that does not exist are each caught.
probs_before=${#probs[@]}
check_line "status --workspace /tmp/x --no-such-flag"
check_line "export --tas rmsnorm"
check_line "nosuchcommand --json"
caught=$(( ${#probs[@]} - probs_before ))
msgs=("${probs[@]}")
probs=()
[ "$caught" -eq 3 ] || problem "the checker caught $caught of 3 bad lines: ${msgs[*]:-none}"
case "${msgs[0]:-}" in
*"kiln status --help does not list --no-such-flag"*) ;;
*) problem "unexpected message for an unknown flag: ${msgs[0]:-none}" ;;
esac
end "the checker refuses an unknown flag, a flag's prefix and an unknown subcommand"

t_done
