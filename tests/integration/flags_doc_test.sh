#!/usr/bin/env bash
# flags_doc_test.sh - docs/flags.md is what `kiln help --markdown` prints
# (issue 38, item 5): every command's --help and every help topic, from the
# same text, so a flag added or changed without regenerating the page fails
# here; and the page has a section for each command `kiln --help` lists.
#
# usage: flags_doc_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

begin "kiln help --markdown is docs/flags.md"
"$KILN" help --markdown >"$tmp/flags.md" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || problem "kiln help --markdown: exit $rc: $(head -c 300 "$tmp/err")"
[ ! -s "$tmp/err" ] || problem "kiln help --markdown wrote to stderr: $(head -c 300 "$tmp/err")"
if ! diff -u "$SRC/docs/flags.md" "$tmp/flags.md" >"$tmp/diff"; then
    problem "docs/flags.md differs from \`kiln help --markdown\`; regenerate it:" \
        "build/kiln help --markdown > docs/flags.md" $'\n'"$(head -40 "$tmp/diff")"
fi
end

begin "docs/flags.md has a section for every command of kiln --help"
"$KILN" --help >"$tmp/usage" || problem "kiln --help: exit $?"
# the command lines of the usage: "  NAME ARGS   what it does", under "commands:"
cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/usage" | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | sort -u)
[ -n "$cmds" ] || problem "no commands found in kiln --help"
for c in $cmds; do
    grep -qx "## kiln $c" "$tmp/flags.md" ||
        problem "kiln $c: no '## kiln $c' section in kiln help --markdown (cli/help.c's cmds)"
done
end
t_done
