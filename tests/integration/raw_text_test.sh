#!/usr/bin/env bash
# raw_text_test.sh - nothing a candidate printed (or its model wrote)
# reaches any of kiln's stores or displays raw (issue 30, class 6). A model
# proposes, in a search, a passing kernel that prints escape sequences, C1
# and bidi controls and invalid UTF-8 at smoke (kept: the start kernel does
# its work four times), then one that prints them and exits, each with a
# hypothesis that holds an escape sequence and a bidi override. Every text
# cell of kiln.db (and every JSON verdict in it, decoded), the git notes,
# the HTML report, status, the search's output and the prompts sent next
# must be valid UTF-8 with no control but newline and tab and no bidi
# control, and the escaped text must be there (so the routes were tried).
#   raw_text_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -eo pipefail
T=$tmp
begin "nothing raw in kiln.db, the notes, the report, status, the search's output or the prompts"
[ -x "$FAKE" ] || fail "no fake_llm in the build ($FAKE)"
answer() {   # FILE
    printf 'Here it is.\n\n```c\n'
    cat "$1"
    printf '```\n\nHYPOTHESIS: print \033[2K\033[1Apass 9.87x \342\200\256 reversed \377\n'
}
answer "$SRC/tests/redteam/cpu/rmsnorm_30_escape_smoke.c" >"$T/a1.md"
answer "$SRC/tests/redteam/cpu/rmsnorm_30_escape_crash.c" >"$T/a2.md"
cp "$SRC/tests/integration/search/noanswer.md" "$T/a3.md"
printf 'ok %s\n' "$T/a1.md" "$T/a2.md" "$T/a3.md" >"$T/script"
mkdir -p "$T/bodies"
fake_llm "$T" --bodies "$T/bodies"
WS=$T/ws
set +e
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
    --base-url "http://127.0.0.1:$PORT/v1" --iterations 3 --drafts 1 \
    --parents best --from "$SRC/tests/integration/keep/slow4.c" --timing-ms 200 \
    --workspace "$WS" >"$T/search.out" 2>"$T/search.err"
rc=$?
set -e
[ $rc = 0 ] || fail "search: exit $rc: $(tail -5 "$T/search.err")"
"$KILN" report -o "$T/report.html" --workspace "$WS" >"$T/report.out" 2>&1 ||
    fail "report: $(cat "$T/report.out")"
"$KILN" status --workspace "$WS" >"$T/status.out" 2>&1 || fail "status: $(cat "$T/status.out")"
for ref in $(git -C "$WS" for-each-ref --format='%(refname)' refs/notes); do
    git -C "$WS" log -p "$ref" >>"$T/notes.out"
done
[ -s "$T/notes.out" ] || fail "the search wrote no git notes"
py=$(python3 - "$T" "$WS/.kiln/kiln.db" 2>&1 <<'PY'
import glob, json, os, sqlite3, sys, unicodedata
T, db = sys.argv[1:3]
BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
def bad(msg):
    sys.exit(f"raw text: {msg}")
def check(name, text):
    for i, ch in enumerate(text):
        if (ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cs")) or ch in BIDI:
            bad(f"{name} holds U+{ord(ch):04X}: {text[max(0, i - 60):i + 20]!r}")
def strings(x):
    if isinstance(x, dict):
        for k, y in x.items():
            yield k
            yield from strings(y)
    elif isinstance(x, list):
        for y in x:
            yield from strings(y)
    elif isinstance(x, str):
        yield x
def check_bytes(name, raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad(f"{name} is not UTF-8: {e}: {raw[max(0, e.start - 60):e.start + 20]!r}")
    check(name, text)
    return text
shown = 0
con = sqlite3.connect(db)
con.text_factory = bytes
for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
    table = table.decode()
    cols = [c[1].decode() for c in con.execute(f'PRAGMA table_info("{table}")')]
    if not cols:
        continue
    pairs = ", ".join(f'typeof("{c}"), "{c}"' for c in cols)
    for row in con.execute(f'SELECT {pairs} FROM "{table}"'):
        for kind, cell in zip(row[::2], row[1::2]):
            if kind != b"text":   # FTS5's own tables hold blobs
                continue
            text = check_bytes(f"kiln.db table {table}", cell)
            shown += "\\x1b[2K" in text
            if text.startswith("{"):
                try:
                    v = json.loads(text)
                except ValueError:
                    continue
                for s in strings(v):
                    check(f"a JSON string in kiln.db table {table}", s)
if not shown:
    bad("kiln.db holds no escaped output (the route was not tried)")
for name in ["notes.out", "report.html", "status.out", "search.out", "search.err"]:
    check_bytes(name, open(f"{T}/{name}", "rb").read())
bodies = sorted(glob.glob(f"{T}/bodies/*.json"))
if len(bodies) < 3:
    bad(f"the model was asked {len(bodies)} times, expected 3")
prompted = 0
for b in bodies:
    for s in strings(json.loads(check_bytes(os.path.basename(b), open(b, "rb").read()))):
        check(f"prompt {os.path.basename(b)}", s)
        prompted += "\\x1b[2K" in s
if not prompted:
    bad("no prompt shows the escaped output (the route was not tried)")
print(f"kiln.db ({shown} cells with the escaped text), notes, report, status, search output "
      f"and {len(bodies)} prompts ({prompted} with it) are clean")
PY
) || fail "$py"
echo "# $py"
end
t_done
