#!/usr/bin/env bash
# lessons_test.sh - integration tests of `kiln lessons` against the real
# binary: a missing, corrupt or foreign database, a workspace made by a real
# search (schema version 7), add/list/show/search/edit/retire, export (md and
# json) and import round trips, the fixture lessons, distill (dry run and
# idempotence), stats, and readers running while writers write.
#
# usage: lessons_test.sh BUILD_DIR SOURCE_DIR
#
# Needs bash and coreutils (sqlite3 CLI optional).
. "$(dirname "$0")/lib.sh"
t_init "$@"
FIXTURE=$SRC/tests/unit/fixtures/lessons.json
[ -f "$FIXTURE" ] || { echo "$0: $FIXTURE is missing" >&2; exit 2; }
cd "$tmp" || exit 2
WS=$tmp/ws
LIMIT=300

mkdir -p "$tmp/io"
# run ARGS...: run kiln; sets rc and $tmp/io/{stdout,stderr}.
run() {
    timeout -k 10 "$LIMIT" "$KILN" "$@" > "$tmp/io/stdout" 2> "$tmp/io/stderr" < /dev/null
    rc=$?
}
expect_rc() { [ "$rc" -eq "$1" ] || problem "exit status $rc, expected $1: $(head -c 400 "$tmp/io/stderr")"; }
expect_in() {   # expect_in stdout|stderr FIXED-STRING
    grep -qF -e "$2" "$tmp/io/$1" || problem "$1 lacks '$2'"
}
expect_not_in() {
    ! grep -qF -e "$2" "$tmp/io/$1" || problem "$1 has '$2'"
}
# A failed check shows the last command's stdout.
show_stdout() { sed 's/^/#   stdout: /' "$tmp/io/stdout" | head -20; }
T_FAIL_SHOW=show_stdout

# --- no database yet ---
begin
run lessons list --workspace "$WS"
expect_rc 2
expect_in stderr "no kiln database in $WS (run kiln search first)"
[ ! -e "$WS/.kiln/kiln.db" ] || problem "list created a database"
end "list without a database is bad input"

begin
run lessons frobnicate --workspace "$WS"
expect_rc 2
run lessons --help
expect_rc 0
expect_in stdout "distill"
end "unknown subcommand and --help"

# --- a real search makes the workspace (and the version-2 schema) ---
begin
run search rmsnorm --iterations 3 --group decode --timing-ms 200 --workspace "$WS"
expect_rc 0
cat "$tmp/io/stdout" "$tmp/io/stderr" > "$tmp/search.out"
[ -f "$WS/.kiln/kiln.db" ] || problem "no database after the search"
if command -v sqlite3 >/dev/null; then
    v=$(sqlite3 "$WS/.kiln/kiln.db" "PRAGMA user_version")
    [ "$v" = 9 ] || problem "user_version $v, expected 9"
fi
run lessons list --workspace "$WS"
expect_rc 0
# The tuner starts from the tunable kernel, whose settings reach 2-4x: a
# kept change is a lesson naming its knob moves ("ACC 1 -> 16, ...").
grep -Eq '[A-Z_]+ -?[0-9]+ -> -?[0-9]+.* made it [0-9.]+x faster' "$tmp/io/stdout" ||
    problem "no lesson naming a knob change that made it faster:"$'\n'"$(cat "$tmp/io/stdout")" \
        $'\n'"the search's decisions:"$'\n'"$(grep -E 'kept|reverted|stopped|iterations:' "$tmp/search.out" | tail -8)"
end "search creates a workspace that kiln lessons reads, with what it learned"

# --- add, list, show, search ---
begin
run lessons add --workspace "$WS" --situation "loading a bf16 row in rmsnorm with 2-byte scalar loads" \
    --action "use vectorized loads of 16 bytes (8 bf16) per thread" --tag op/norm/rmsnorm --tag dtype/bf16
expect_rc 0
expect_in stdout "added lesson #"
V=$(sed -n 's/^added lesson #\([0-9]*\)$/\1/p' "$tmp/io/stdout")
run lessons add --workspace "$WS" --situation "summing a long row into one accumulator on CPU" \
    --action "use 8 independent partial sums so the adds overlap" --tag op/norm --tag dtype/f32 \
    --confidence 0.8 --json
expect_rc 0
expect_in stdout '"id"'
run lessons add --workspace "$WS" --situation "softmax over long rows" \
    --action "use online normalization: one pass for max and sum" --tag op/softmax
expect_rc 0
S=$(sed -n 's/^added lesson #\([0-9]*\)$/\1/p' "$tmp/io/stdout")
[ -n "$V" ] && [ -n "$S" ] || problem "no ids printed"
end "add"

begin
run lessons add --workspace "$WS" --situation "s" --action "a"
expect_rc 2
expect_in stderr "--tag"
run lessons add --workspace "$WS" --situation "s" --action "a" --tag "Not A Tag!"
expect_rc 2
expect_in stderr "bad tag"
run lessons add --workspace "$WS" --situation "  " --action "a" --tag op
expect_rc 2
run lessons add --workspace "$WS" --situation "s" --action "a" --tag op --confidence 7
expect_rc 2
end "add refuses a lesson without situation, action or a good tag"

begin
run lessons list --workspace "$WS"
expect_rc 0
expect_in stdout "use vectorized loads of 16 bytes"
expect_in stdout "online normalization"
expect_in stdout "CONF"
run lessons list --workspace "$WS" --tag op/norm
expect_rc 0
expect_in stdout "vectorized loads"
expect_in stdout "partial sums"
expect_not_in stdout "online normalization"
run lessons list --workspace "$WS" --tag dtype/f32
expect_not_in stdout "vectorized loads"
run lessons list --workspace "$WS" --tag op/norm/rmsnorm --sort recent --json
expect_rc 0
expect_in stdout '"situation":'
expect_not_in stdout "partial sums"
run lessons list --workspace "$WS" --sort bogus
expect_rc 2
end "list with tag prefixes, sorts and JSON"

begin
run lessons show "$V" --workspace "$WS"
expect_rc 0
expect_in stdout "when:       loading a bf16 row"
expect_in stdout "dtype/bf16,op/norm/rmsnorm"
run lessons show "$V" --workspace "$WS" --json
expect_in stdout '"confidence":'
run lessons show 99999 --workspace "$WS"
expect_rc 1
run lessons show abc --workspace "$WS"
expect_rc 2
end "show"

begin
run lessons search "vectorized loads" --workspace "$WS"
expect_rc 0
expect_in stdout "use vectorized loads of 16 bytes"
expect_not_in stdout "online normalization"
for q in '"' 'NEAR(' 'AND OR NOT' 'col:x' '^start' '((' '*' "'; DROP TABLE lessons; --" 'é漢😀' ''; do
    run lessons search "$q" --workspace "$WS"
    [ "$rc" -eq 0 ] || problem "search '$q': exit $rc: $(cat "$tmp/io/stderr")"
done
end "search finds 'vectorized loads' and survives hostile queries"

# --- edit, retire ---
begin
run lessons edit "$V" --confidence 0.9 --action "use 16-byte vectorized loads (uint4) per thread" --workspace "$WS"
expect_rc 0
run lessons show "$V" --workspace "$WS"
expect_in stdout "confidence: 0.90"
expect_in stdout "uint4"
run lessons search "uint4" --workspace "$WS"
expect_in stdout "uint4"
run lessons edit 99999 --confidence 0.5 --workspace "$WS"
expect_rc 1
run lessons edit "$V" --workspace "$WS"
expect_rc 2
end "edit (and the search index follows)"

begin
run lessons retire "$S" --reason "test" --workspace "$WS"
expect_rc 0
run lessons list --workspace "$WS"
expect_not_in stdout "online normalization"
run lessons list --status retired --workspace "$WS"
expect_in stdout "online normalization"
run lessons retire "$S" --workspace "$WS"
expect_rc 1
end "retire"

# --- export and import ---
begin
run lessons export --format md --workspace "$WS"
expect_rc 0
expect_in stdout "# kiln lessons"
expect_in stdout "**When:** loading a bf16 row"
run lessons export --workspace "$WS"
expect_rc 0
cp "$tmp/io/stdout" "$tmp/export.json"
expect_in stdout '"format":	"kiln-lessons"'
N=$(grep -c '"situation":' "$tmp/export.json")   # the three added plus what the search learned
run lessons import "$tmp/export.json" --workspace "$WS"
expect_rc 0
expect_in stdout "imported 0 lessons, skipped $N already present"
# A fresh workspace database (an empty file is a new database).
mkdir -p "$tmp/ws2/.kiln" && : > "$tmp/ws2/.kiln/kiln.db"
run lessons import "$tmp/export.json" --workspace "$tmp/ws2"
expect_rc 0
expect_in stdout "imported $N lessons"
run lessons export --workspace "$tmp/ws2"
grep -F '"situation":' "$tmp/io/stdout" | sort > "$tmp/b.txt"
grep -F '"situation":' "$tmp/export.json" | sort > "$tmp/a.txt"
cmp -s "$tmp/a.txt" "$tmp/b.txt" || problem "round trip changed the lessons"
run lessons list --status retired --workspace "$tmp/ws2"
expect_in stdout "online normalization"
echo '{"lessons":[{"situation":"only a situation"}]}' > "$tmp/bad.json"
run lessons import "$tmp/bad.json" --workspace "$tmp/ws2"
expect_rc 2
expect_in stderr "lesson 1"
run lessons import "$tmp/missing.json" --workspace "$tmp/ws2"
expect_rc 2
end "export md and json, import round trip"

begin
run lessons import "$FIXTURE" --workspace "$WS"
expect_rc 0
expect_in stdout "imported 60 lessons"
run lessons search "vectorized loads" --workspace "$WS"
expect_rc 0
n=$(grep -c "vectoriz" "$tmp/io/stdout")
[ "$n" -ge 3 ] || problem "search 'vectorized loads' found $n lessons, expected >= 3"
end "the fixture lessons import and search"

# --- distill ---
begin
run lessons export --workspace "$WS"
cp "$tmp/io/stdout" "$tmp/before.json"
run lessons distill --dry-run --workspace "$WS"
expect_rc 0
cp "$tmp/io/stdout" "$tmp/dry.txt"
expect_in stdout "dry run"
expect_in stdout "confidence below the floor"
run lessons export --workspace "$WS"
cmp -s "$tmp/before.json" "$tmp/io/stdout" || problem "distill --dry-run changed the database"
run lessons distill --workspace "$WS"
expect_rc 0
sed 's/ (dry run: nothing written)//' "$tmp/dry.txt" > "$tmp/dry2.txt"
cmp -s "$tmp/dry2.txt" "$tmp/io/stdout" || problem "distill did not do what the dry run said"
run lessons distill --workspace "$WS"
expect_rc 0
expect_in stdout "no changes"
run lessons distill --workspace "$WS" --json
expect_in stdout '"changes":	[]'
end "distill: dry run changes nothing, a second run changes nothing"

# --- stats ---
begin
run lessons stats --workspace "$WS"
expect_rc 0
expect_in stdout "lessons:"
expect_in stdout "characters:"
expect_in stdout "op/norm/rmsnorm"
run lessons stats --workspace "$WS" --json
expect_in stdout '"prompt_chars":'
expect_in stdout '"active":'
end "stats"

# --- readers beside writers ---
begin
(
    for i in $(seq 1 20); do
        "$KILN" lessons add --workspace "$WS" --situation "concurrent writer $i" \
            --action "write while readers read" --tag test/concurrency > /dev/null 2>> "$tmp/writer.err" ||
            echo "add $i failed" >> "$tmp/writer.fail"
    done
) &
wpid=$!
for i in $(seq 1 20); do
    run lessons list --workspace "$WS" --tag test/concurrency
    [ "$rc" -eq 0 ] || problem "list $i: exit $rc: $(cat "$tmp/io/stderr")"
done
wait "$wpid"
[ ! -s "$tmp/writer.fail" ] || problem "writers failed: $(cat "$tmp/writer.fail" "$tmp/writer.err")"
run lessons list --workspace "$WS" --tag test/concurrency
n=$(grep -c "concurrent writer" "$tmp/io/stdout")
[ "$n" -eq 20 ] || problem "$n of 20 concurrent lessons stored"
end "20 lists while 20 adds write"

# --- corrupt and foreign databases ---
begin
mkdir -p "$tmp/bad/.kiln"
head -c 16384 /dev/urandom > "$tmp/bad/.kiln/kiln.db"
run lessons list --workspace "$tmp/bad"
expect_rc 2
expect_in stderr "$tmp/bad/.kiln/kiln.db"
expect_in stderr "not a SQLite database"
if command -v sqlite3 >/dev/null; then
    mkdir -p "$tmp/foreign/.kiln"
    sqlite3 "$tmp/foreign/.kiln/kiln.db" "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
    run lessons list --workspace "$tmp/foreign"
    expect_rc 2
    expect_in stderr "$tmp/foreign/.kiln/kiln.db"
    expect_in stderr "not a kiln database"
fi
end "a corrupt or foreign database is bad input, named"

t_done
