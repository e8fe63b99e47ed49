#!/usr/bin/env bash
# printf_test.sh - what a candidate prints is shown in the verdict's
# feedback for a visible shape, and nothing printed once a hidden shape has
# run ever is (issue 16: device printf for debugging, never for hidden
# shapes).
#   printf_test.sh BUILD_DIR SOURCE_DIR cpu    C candidates (always runs)
#   printf_test.sh BUILD_DIR SOURCE_DIR cuda   a CUDA kernel's device printf and
#                                              a failed device assert (exits 77
#                                              without a GPU)
. "$(dirname "$0")/lib.sh"
t_init -a 'cpu|cuda' "$@"
set -eo pipefail
MODE=${T_ARGS[0]}
D=$SRC/tests/integration/printf
T=$tmp

verify() {   # name want_rc args...
    local name=$1 want=$2 rc=0
    shift 2
    "$KILN" verify "$@" --no-daemon --json >"$T/$name.json" 2>"$T/$name.err" || rc=$?
    [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want:"$'\n'"$(cat "$T/$name.err")"
}

if [ "$MODE" = cpu ]; then
    begin "printf cpu: what a C candidate prints shows in a visible shape's feedback, never a hidden one's"
    verify dims 0 "$D/print_dims.c" --task rmsnorm
    fb=$(json_get feedback "$T/dims.json")
    grep -q "^candidate output during smoke" <<<"$fb" || fail "dims: no output in the feedback: $fb"
    grep -q "KILNOUT rows=32 cols=1024 prev_rows=-1" <<<"$fb" ||
        fail "dims: the smoke call's line is missing: $fb"
    # Every dims pair the verdict quotes is a visible shape of the group.
    py=$(python3 - "$T/dims.json" "$SRC/tasks/rmsnorm/task.json" 2>&1 <<'PY'
import json, re, sys
v = json.load(open(sys.argv[1]))
task = json.load(open(sys.argv[2]))
vis = {(s["rows"], s["cols"]) for s in task["groups"]["prefill"]["visible"]} | {(-1, -1)}
text = json.dumps(v)
seen = re.findall(r"rows=(-?\d+) cols=(-?\d+)", text) + re.findall(r"prev_rows=(-?\d+) prev_cols=(-?\d+)", text)
if not seen:
    sys.exit("dims: no printed dims in the verdict")
for r, c in seen:
    if (int(r), int(c)) not in vis:
        sys.exit(f"dims: printed dims {r}x{c} are not a visible shape")
PY
    ) || fail "$py"
    verify wrong 1 "$D/print_wrong.c" --task rmsnorm
    [ "$(json_get code "$T/wrong.json")" = wrong-output ] || fail "wrong: code $(json_get code "$T/wrong.json")"
    grep -q "KILNWRONG about to normalise 32 rows" <<<"$(json_get feedback "$T/wrong.json")" ||
        fail "wrong: the printed line is not in the feedback"
    # Raw text (issue 30): a kernel that prints escape sequences and invalid
    # UTF-8 at smoke, and one that prints them and exits. Python's strict
    # decoder must load their verdicts, no decoded string may hold a control
    # but newline and tab, and the escapes show as text.
    verify escape 0 "$SRC/tests/redteam/cpu/rmsnorm_30_escape_smoke.c" --task rmsnorm
    verify escape_crash 1 "$SRC/tests/redteam/cpu/rmsnorm_30_escape_crash.c" --task rmsnorm
    py=$(python3 - "$T/escape.json" "$T/escape_crash.json" 2>&1 <<'PY'
import json, sys, unicodedata
for path in sys.argv[1:]:
    raw = open(path, "rb").read()
    v = json.loads(raw.decode("utf-8"))   # strict: invalid UTF-8 raises
    def walk(x):
        if isinstance(x, dict):
            for k, y in x.items():
                walk(k), walk(y)
        elif isinstance(x, list):
            for y in x:
                walk(y)
        elif isinstance(x, str):
            for ch in x:
                if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cs") or \
                        ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
                    sys.exit(f"{path}: a decoded string holds U+{ord(ch):04X}: {x[:120]!r}")
    walk(v)
    if "\\x1b[2K" not in v["feedback"]:
        sys.exit(f"{path}: the escaped output is not in the feedback: {v['feedback']!r}")
print("raw text: both verdicts load, clean")
PY
    ) || fail "$py"
    echo "# $py"
    # A source with a control byte, invalid UTF-8 or a bidi override is not
    # text: refused at the static stage, with the line and column.
    printf 'int x; /* \033[2K */\n' >"$T/esc.c"
    printf '#include <stdint.h>\n/* caf\351 */\n' >"$T/latin1.c"
    printf 'int a;\n// \342\200\256 reversed\n' >"$T/bidi.c"
    for f in esc:1,11 latin1:2,7 bidi:2,4; do
        name=${f%%:*} at=${f#*:}
        verify "src_$name" 1 "$T/$name.c" --task rmsnorm
        [ "$(json_get code "$T/src_$name.json")" = not-text ] || fail "$name: code $(json_get code "$T/src_$name.json")"
        grep -q "at line ${at%,*}, column ${at#*,}" <<<"$(json_get reason "$T/src_$name.json")" ||
            fail "$name: the reason does not say where: $(json_get reason "$T/src_$name.json")"
    done
    # The crash plant of hidden_leak prints its dims only on hidden shapes.
    verify loud 1 "$SRC/tests/integration/hidden_leak/crash_loud.c" --task rmsnorm
    grep -q LEAKDIMS "$T/loud.json" && fail "loud: output printed on a hidden shape reached the verdict"
    end
    t_done
fi

need_gpu cuda
begin "printf cuda: a device printf shows in the feedback; a failed device assert is a crash that says so"
verify cuda 0 "$D/rmsnorm_printf.cu" --task rmsnorm --backend cuda --dtype bf16 --group small
fb=$(json_get feedback "$T/cuda.json")
grep -q "KILNOUT cols=1024" <<<"$fb" || fail "cuda: the device printf is not in the feedback: $fb"
# A device assert that fails is a crash, and says it was an assert.
verify assert 1 "$SRC/tests/redteam/cuda/rmsnorm_21_assert.cu" --task rmsnorm --backend cuda \
    --dtype bf16 --group small
[ "$(json_get code "$T/assert.json")" = crash ] || fail "assert: code $(json_get code "$T/assert.json")"
grep -q "a device assert failed" <<<"$(json_get reason "$T/assert.json")" ||
    fail "assert: the reason does not say a device assert failed: $(json_get reason "$T/assert.json")"
end
t_done
