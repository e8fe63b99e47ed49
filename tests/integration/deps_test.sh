#!/usr/bin/env bash
# deps_test.sh - no dependency cycle between kiln's object files
# (scripts/deps.py over the build), and the check itself can fail: two
# files that call each other, built here, make a cycle it reports. The same
# for the owners of SQLite (harness/rundb.c, knowledge/) and libgit2
# (harness/workspace.c): none is called from elsewhere in the build, and a
# planted call from elsewhere is reported. And for the folders as layers
# (common < worker < verifier < daemon < judge < agent < knowledge < harness <
# porting < cli):
# no call goes upward in the build, and a planted one is reported.
#   deps_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
command -v nm >/dev/null && command -v python3 >/dev/null && command -v cc >/dev/null ||
    skip_all "needs nm, python3 and cc"
T=$tmp

begin "no cycle among the object files"
python3 "$SRC/scripts/deps.py" "$BUILD" >"$T/deps.txt"
rc=$?
sed 's/^/# /' "$T/deps.txt"
[ $rc = 0 ] || fail "dependency cycles in the build (above)"
files=$(sed -n 's/^deps: \([0-9]*\) object files.*/\1/p' "$T/deps.txt")
[ "${files:-0}" -ge 50 ] || fail "only ${files:-0} object files found in $BUILD: not kiln's build"
end "no cycle among $files object files"

begin "SQLite and libgit2 are called only by their owners"
owners=$(sed -n 's/^owners: SQLite (sqlite3_\*) in \([0-9]*\), libgit2 (git_\*) in \([0-9]*\) object files; 0 outside.*/\1 \2/p' "$T/deps.txt")
read -r nsql ngit <<<"${owners:-0 0}"
[ "$nsql" -ge 2 ] && [ "$ngit" -ge 1 ] ||
    fail "the owners check found no SQLite or libgit2 calls, or calls outside their owners (above)"
end "SQLite is called only by its owners ($nsql files), libgit2 only by workspace.c"

begin "no call from a folder into one above it"
grep -q "^layers: common < worker < verifier < daemon < judge < agent < knowledge < harness < porting < cli; 0 calls upward$" \
    "$T/deps.txt" || fail "the layers check did not pass over the build (above)"
end

begin "a planted cycle is reported"
mkdir -p "$T/b/m"
printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' >"$T/ping.c"
printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' >"$T/pong.c"
cc -c "$T/ping.c" -o "$T/b/m/ping.c.o" && cc -c "$T/pong.c" -o "$T/b/m/pong.c.o" || fail "cc"
python3 "$SRC/scripts/deps.py" "$T/b" >"$T/cycle.txt"
[ $? = 1 ] && grep -q "cycle: m/ping.c m/pong.c" "$T/cycle.txt" ||
    fail "a planted cycle was not reported: $(cat "$T/cycle.txt")"
end

begin "planted SQLite and libgit2 calls outside their owners are reported"

# Owners: rundb.c, knowledge/ and workspace.c may call their library;
# review.c may not, but may call a kiln function that happens to start with git_.
mkdir -p "$T"/{o,src}/{harness,cli,knowledge}
plant() { printf '%s\n' "$2" >"$T/src/$1.c" && cc -c "$T/src/$1.c" -o "$T/o/$1.c.o"; }
plant harness/rundb 'int sqlite3_open(void); int db(void) { return sqlite3_open(); }' &&
plant knowledge/lessons 'int sqlite3_exec(void); int kn(void) { return sqlite3_exec(); }' &&
plant harness/workspace 'int git_libgit2_init(void); int ws(void) { return git_libgit2_init(); }' &&
plant cli/cli 'int git_kiln_own(void) { return 0; }' &&
plant harness/review 'int sqlite3_prepare_v2(void); int git_note_read(void); int git_kiln_own(void);
int rv(void) { return sqlite3_prepare_v2() + git_note_read() + git_kiln_own(); }' || fail "cc"
python3 "$SRC/scripts/deps.py" "$T/o" >"$T/owners.txt"
rc=$?
v=$(grep '^owner violation:' "$T/owners.txt")
[ $rc = 1 ] &&
    grep -q '^owner violation: harness/review.c calls SQLite, .*: sqlite3_prepare_v2$' <<<"$v" &&
    grep -q '^owner violation: harness/review.c calls libgit2, .*: git_note_read$' <<<"$v" &&
    [ "$(wc -l <<<"$v")" = 2 ] ||
    fail "a planted call outside the owners was not reported as such: $(cat "$T/owners.txt")"
end

begin "a planted call from verifier/ into cli/ is reported"

# Layers: verifier calling into cli is upward; cli calling verifier is not.
mkdir -p "$T"/l/{verifier,cli}
printf 'int cli_thing(void);\nint vf(void) { return cli_thing(); }\n' >"$T/vf.c"
printf 'int vf(void);\nint cli_thing(void) { return 1; }\nint main(void) { return vf(); }\n' >"$T/cl.c"
cc -c "$T/vf.c" -o "$T/l/verifier/vf.c.o" && cc -c "$T/cl.c" -o "$T/l/cli/cl.c.o" || fail "cc"
python3 "$SRC/scripts/deps.py" "$T/l" >"$T/layers.txt"
rc=$?
v=$(grep '^layer violation:' "$T/layers.txt")
[ $rc = 1 ] && [ "$v" = "layer violation: verifier/vf.c -> cli/cl.c: cli_thing" ] ||
    fail "a planted upward call was not reported as such: $(cat "$T/layers.txt")"
end
t_done
