# lib.sh - the harness of the integration tests, as tester.tcl is for
# SQLite's: every tests/integration/*_test.sh sources it and writes no
# preamble, report line, skip or JSON reader of its own (harness_test.sh
# checks that they do not, and that this file's parts can fail). A test is
#
#     . "$(dirname "$0")/lib.sh"
#     t_init "$@"                     # BUILD_DIR SOURCE_DIR
#     t_init -a 'cpu|cuda' "$@"       # and more arguments, as the usage line names them
#     begin; ...; problem "what is wrong"; ...; end "what was checked"
#     t_done
#
# The preamble (t_init): BUILD_DIR and SOURCE_DIR (exit 2 on bad usage);
# kiln, kilnd and kiln-worker checked; BUILD SRC KILN KILND WORKER FAKE
# (tests/fake_llm) PROBE (tests/kiln_probe) and T_ARGS (what follows the
# two) set; a directory of its own, $tmp, which kiln and kilnd use alone:
# TMPDIR, KILN_STATE ($tmp/state), KILN_SOCKET ($tmp/k.sock), no task
# directory, token, model server, key, or git configuration of the user's.
#
# One cleanup, at any exit: the pids given to t_bg are killed, the t_on_exit
# hooks run, then every process that carries $tmp in its environment or
# command line (an on-demand kilnd, a fake model, anything the test left) is
# killed, and $tmp is removed (KILN_TEST_KEEP=1 keeps it). t_done first stops
# the kilnd on $KILN_SOCKET (and T_SOCKETS) gracefully, so that a sanitizer
# build's leak check runs in it.
#
# One TAP dialect: begin [NAME] starts a check, problem MSG... records what
# is wrong ($probs holds it), end [NAME] [noio] prints "ok - NAME (N s)" or
# "not ok - NAME (N s)" with each problem as "#" lines (and, unless noio,
# whatever $T_FAIL_SHOW prints); skip NAME prints "skip - NAME"; fail MSG
# fails the check and stops the test, stop_if_failed stops it after a
# check that failed. t_done [77] prints "N passed, N
# failed" (", N skipped") and exits 0, or 1 if a check failed, or 77 if one
# was skipped and 77 was given. ctest reads that status: 0 pass, 77 skip.
#
# Skips: skip_all REASON prints "skipped: REASON" and exits 77 (1 if a check
# failed before it). need_gpu [cuda] [WHY] skips without an NVIDIA GPU (with
# cuda: or without the CUDA worker); need_nvcc without nvcc; need_tools names
# a missing tool (exit 2). Also: json_get PATH [FILE], the JSON reader
# (python3); fake_llm DIR, a fake model server; kilnd_pid SOCKET.
#
# Sanitizers: in a sanitizer build every kiln, kilnd and kiln-worker the
# test starts writes its AddressSanitizer and LeakSanitizer reports to
# $tmp/sanitizer (log_path in ASAN_OPTIONS), wherever its stderr goes (an
# on-demand kilnd's is /dev/null); UBSan, which beside ASan writes to stderr
# only, is looked for in the files under $tmp (where the test sends
# stderr). Every end, skip, fail and t_done looks, and a report fails the
# check it came in.
set -u

# t_init [-a 'MORE ARGS'] "$@": the preamble (above).
t_init() {
    local more= words=() w req=0 opt=0
    if [ "${1:-}" = -a ]; then
        more=$2
        shift 2
    fi
    read -ra words <<<"$more"
    for w in "${words[@]}"; do
        case $w in \[*) opt=$((opt + 1)) ;; *) req=$((req + 1)) ;; esac
    done
    if [ $# -lt $((2 + req)) ] || [ $# -gt $((2 + req + opt)) ]; then
        echo "usage: $0 BUILD_DIR SOURCE_DIR${more:+ $more}" >&2
        exit 2
    fi
    BUILD=$(readlink -f -- "$1")
    SRC=$(readlink -f -- "$2")
    shift 2
    T_ARGS=("$@")
    KILN=$BUILD/kiln KILND=$BUILD/kilnd WORKER=$BUILD/kiln-worker
    FAKE=$BUILD/tests/fake_llm PROBE=$BUILD/tests/kiln_probe
    for w in "$KILN" "$KILND" "$WORKER"; do
        [ -x "$w" ] || { echo "$0: $w is not an executable" >&2; exit 2; }
    done
    [ -d "$SRC/tasks/rmsnorm" ] || { echo "$0: $SRC is not the kiln source dir" >&2; exit 2; }

    # A Unix socket's path is at most 107 bytes: a long TMPDIR is not used.
    local base=${TMPDIR:-/tmp}
    [ ${#base} -le 48 ] && [ -d "$base" ] || base=/tmp
    tmp=$(mktemp -d "$base/kiln-$(basename "$0" .sh).XXXXXX") || exit 2
    T_SAN=$tmp/sanitizer
    mkdir -p "$T_SAN/seen" "$tmp/state"
    : >"$T_SAN/stamp"
    T_DONE=0 T_NPASS=0 T_NFAIL=0 T_NSKIP=0 T_NAME= T_T0=$SECONDS T_LAST_FAILED=0
    T_BGPIDS=() T_HOOKS=() T_SOCKETS=()
    probs=()
    trap _t_cleanup EXIT
    trap 'exit 130' INT TERM

    # KILN_TEST_DIR marks every process this test starts (cleanup finds them by it).
    export KILN_TEST_DIR=$tmp TMPDIR=$tmp KILN_STATE=$tmp/state KILN_SOCKET=$tmp/k.sock
    unset KILN_TASKS KILN_TOKEN_FILE OPENAI_BASE_URL OPENAI_API_KEY ANTHROPIC_BASE_URL ANTHROPIC_API_KEY
    # Commits made by kiln and by git here never depend on the user's setup.
    export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
    export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com
    export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
    # Leak checks stay as the runtime and each program set them (kiln-worker
    # turns its own off); only where the reports go is ours.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T_SAN/report:log_exe_name=1"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T_SAN/report:log_exe_name=1"
}

# need_tools TOOL...: exit 2, naming the first one missing.
need_tools() {
    local t
    for t; do
        command -v "$t" >/dev/null ||
            { echo "$0: needs $t (scripts/setup.sh installs it)" >&2; exit 2; }
    done
}

# ---- reporting ------------------------------------------------------------------

begin() {
    probs=()
    T_NAME=${1:-}
    T_T0=$SECONDS
}

problem() { probs+=("$*"); }

end() {
    local name=${1:-$T_NAME} secs p
    _t_san_scan
    secs=$((SECONDS - T_T0))
    if [ ${#probs[@]} -eq 0 ]; then
        echo "ok - ${name:-(unnamed check)} ($secs s)"
        T_NPASS=$((T_NPASS + 1))
        T_LAST_FAILED=0
    else
        echo "not ok - ${name:-(unnamed check)} ($secs s)"
        for p in "${probs[@]}"; do printf '%s\n' "$p" | sed 's/^/#   /'; done
        if [ "${2:-}" != noio ] && [ -n "${T_FAIL_SHOW:-}" ]; then
            $T_FAIL_SHOW
        fi
        T_NFAIL=$((T_NFAIL + 1))
        T_LAST_FAILED=1
    fi
    probs=()
    T_NAME=
    T_T0=$SECONDS
}

# skip NAME: a check that could not run here.
skip() {
    _t_san_scan
    if [ ${#probs[@]} -ne 0 ]; then
        end "$1"
        return 0
    fi
    echo "skip - $1"
    T_NSKIP=$((T_NSKIP + 1))
    T_NAME=
    T_T0=$SECONDS
}

# fail MSG...: the check fails with MSG and the test stops (what follows needs it).
fail() {
    problem "$*"
    end
    _t_summary
    T_DONE=1
    exit 1
}

# stop_if_failed: when the check just ended failed, the test stops there
# (what follows needs it): the closing line, exit 1.
stop_if_failed() {
    [ "$T_LAST_FAILED" = 1 ] || return 0
    _t_summary
    T_DONE=1
    exit 1
}

_t_summary() {
    local s=
    [ "$T_NSKIP" -eq 0 ] || s=", $T_NSKIP skipped"
    echo "$T_NPASS passed, $T_NFAIL failed$s"
}

# t_done [77]: the closing line and the exit status.
t_done() {
    _t_stop_kilnds
    _t_san_scan
    [ ${#probs[@]} -eq 0 ] || end "${T_NAME:-after the last check}"
    _t_summary
    T_DONE=1
    [ "$T_NFAIL" -eq 0 ] || exit 1
    [ "$T_NSKIP" -eq 0 ] || [ "${1:-}" != 77 ] || exit 77   # not a pass: a check did not run
    exit 0
}

# skip_all REASON: the test cannot run here (exit 77), unless a check failed.
skip_all() {
    _t_san_scan
    [ ${#probs[@]} -eq 0 ] || end "${T_NAME:-before the skip}"
    echo "skipped: $*"
    T_DONE=1
    if [ "$T_NFAIL" -ne 0 ]; then
        _t_summary
        exit 1
    fi
    exit 77
}

# ---- what a test needs ----------------------------------------------------------

have_gpu() { [ -e /dev/nvidia0 ] && nvidia-smi -L >/dev/null 2>&1; }

# need_gpu [cuda] [WHY]: skip without an NVIDIA GPU (cuda: or the CUDA worker).
need_gpu() {
    local cuda=
    if [ "${1:-}" = cuda ]; then
        cuda=1
        shift
    fi
    if ! have_gpu || { [ -n "$cuda" ] && [ ! -x "$BUILD/kiln-worker-cuda" ]; }; then
        skip_all "no NVIDIA GPU${cuda:+ or no CUDA build}${1:+ ($1)}"
    fi
}

# find_nvcc: NVCC is nvcc (on PATH, else the toolkit's); false if there is none.
find_nvcc() {
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    [ -x "$NVCC" ]
}
need_nvcc() { find_nvcc || skip_all "no nvcc (looked on PATH and at /usr/local/cuda/bin/nvcc)"; }
# nvcc through nvcc_memo.sh: the sanitizer suite's byte-identical compiles
# are not run twice (that file says how and why).
nvcc_memo() { "$SRC/tests/integration/nvcc_memo.sh" "$NVCC" "$@"; }

# t_bg PID...: processes the cleanup kills first.
t_bg() { T_BGPIDS+=("$@"); }
# t_on_exit COMMAND: run by the cleanup (eval'd), before it kills what is left.
t_on_exit() { T_HOOKS+=("$1"); }

# t_refused WHAT WANT ARGS...: kiln ARGS (stdin /dev/null) exits 2 and its
# stderr holds WANT; a problem of the current check otherwise, named WHAT.
# Its output stays in $tmp/out and $tmp/err.
t_refused() {
    local what=$1 want=$2 rc
    shift 2
    "$KILN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    [ $rc -eq 2 ] || problem "$what: exit $rc, expected 2: $(head -c 300 "$tmp/err")"
    grep -qF -- "$want" "$tmp/err" || problem "$what: stderr lacks \"$want\": $(head -c 400 "$tmp/err")"
}

# fake_llm DIR [ARGS...]: tests/fake_llm answering DIR/script, its log in
# DIR/log; sets PORT and FAKEPID, and exits 2 if it does not come up.
fake_llm() {
    local d=$1 i
    shift
    [ -x "$FAKE" ] || { echo "$0: $FAKE is not an executable" >&2; exit 2; }
    rm -f "$d/port"
    "$FAKE" --port-file "$d/port" --script "$d/script" --log "$d/log" "$@" 2>"$d/stderr" &
    FAKEPID=$!
    t_bg "$FAKEPID"
    for ((i = 0; i < 100; i++)); do
        if [ -s "$d/port" ]; then
            PORT=$(cat "$d/port")
            return 0
        fi
        sleep 0.05
    done
    echo "$0: fake_llm did not start: $(cat "$d/stderr")" >&2
    exit 2
}

# kilnd_pid SOCKET: the pid of the kilnd answering there (empty if none).
kilnd_pid() {
    "$KILN" daemon status --socket "$1" --json 2>/dev/null | json_get pid 2>/dev/null
    return 0
}

# ---- the JSON reader ------------------------------------------------------------

# json_get PATH [FILE]: the values at PATH in FILE (else stdin), one a line:
# strings as they are, the rest as JSON. The input is one JSON document, or
# JSON lines (lines that are not JSON are passed over). PATH is keys and
# list indexes joined by dots (a.b.0.c, a.b[0].c; a leading dot is allowed),
# [] for every element, [K=V,K2=V2] for the elements (or the object itself)
# whose field K (a dotted path) is V, and # for a length. Exit 1 when PATH
# names nothing, 2 when the input or PATH cannot be read.
json_get() {
    python3 -S -E -c "$T_JSON_PY" "$@"
}
T_JSON_PY='
import json, re, sys
def bad(msg):
    print("json_get: " + msg, file=sys.stderr)
    sys.exit(2)
if not 2 <= len(sys.argv) <= 3:
    bad("usage: json_get PATH [FILE]")
path = sys.argv[1].strip()
try:
    text = open(sys.argv[2], encoding="utf-8", errors="replace").read() if len(sys.argv) == 3 else sys.stdin.read()
except OSError as e:
    bad(str(e))
try:
    docs = [json.loads(text)]
except ValueError:
    docs = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                docs.append(json.loads(line))
            except ValueError:
                pass
    if not docs:
        bad("no JSON in " + (sys.argv[2] if len(sys.argv) == 3 else "stdin"))
steps, i = [], 0
while i < len(path):
    c = path[i]
    if c == ".":
        i += 1
    elif c == "[":
        j = path.find("]", i)
        if j < 0:
            bad(f"no ] in {path!r}")
        steps.append(("sel", path[i + 1:j]))
        i = j + 1
    elif c == "#":
        steps.append(("len", None))
        i += 1
    else:
        j = i
        while j < len(path) and path[j] not in ".[#":
            j += 1
        steps.append(("key", path[i:j]))
        i = j
INDEX = re.compile(r"-?[0-9]+")
def get(v, key):
    for k in key.split("."):
        if isinstance(v, dict) and k in v:
            v = v[k]
        elif isinstance(v, list) and INDEX.fullmatch(k) and -len(v) <= int(k) < len(v):
            v = v[int(k)]
        else:
            raise KeyError(k)
    return v
def text_of(v):
    return v if isinstance(v, str) else json.dumps(v)
vals = docs
for kind, arg in steps:
    out = []
    for v in vals:
        if kind == "key":
            try:
                out.append(get(v, arg))
            except KeyError:
                pass
        elif kind == "len":
            if isinstance(v, (list, dict, str)):
                out.append(len(v))
        elif arg == "":
            out.extend(v if isinstance(v, list) else v.values() if isinstance(v, dict) else [])
        elif INDEX.fullmatch(arg):
            if isinstance(v, list) and -len(v) <= int(arg) < len(v):
                out.append(v[int(arg)])
        else:
            conds = [c.split("=", 1) for c in arg.split(",")]
            if any(len(c) != 2 for c in conds):
                bad(f"[{arg}]: expected KEY=VALUE, comma-separated")
            for item in v if isinstance(v, list) else [v]:
                try:
                    if all(text_of(get(item, k)) == want for k, want in conds):
                        out.append(item)
                except KeyError:
                    pass
    vals = out
sys.stdout.buffer.write("".join(text_of(v) + "\n" for v in vals).encode())
sys.exit(0 if vals else 1)
'

# ---- sanitizer reports ----------------------------------------------------------

T_SAN_RE='LeakSanitizer|AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:'
declare -A T_UB_SEEN=()

# Each new report in $T_SAN fails the current check; what is not a report
# (a runtime's warning) is shown as a comment. UBSan beside ASan writes to
# stderr only (log_path is ASan's): the files under $tmp written since the
# last look, which hold what the test's commands wrote to stderr, are
# searched for its "runtime error:" lines.
_t_san_scan() {
    local f n
    for f in "$T_SAN"/report.*; do
        [ -f "$f" ] || continue
        if grep -Eq "$T_SAN_RE" "$f"; then
            problem "a sanitizer report from ${f#"$T_SAN"/report.} (exe.pid):"$'\n'"$(head -60 "$f")"
        elif [ -s "$f" ]; then
            echo "# from ${f#"$T_SAN"/report.}: $(head -3 "$f" | tr '\n' ' ')"
        fi
        mv -f "$f" "$T_SAN/seen/" 2>/dev/null
    done
    : >"$T_SAN/stamp.next"
    while IFS= read -r -d '' f; do
        n=$(grep -c ': runtime error: ' "$f")
        [ "$n" -gt "${T_UB_SEEN[$f]:-0}" ] || continue
        problem "UndefinedBehaviorSanitizer in ${f#"$tmp"/}:"$'\n'"$(grep -A20 -m1 ': runtime error: ' "$f" | head -30)"
        T_UB_SEEN[$f]=$n
    done < <(find "$tmp" -path "$T_SAN" -prune -o -type f -newer "$T_SAN/stamp" -size -64M -print0 2>/dev/null |
             xargs -0r grep -lIZ ': runtime error: ' 2>/dev/null)
    mv -f "$T_SAN/stamp.next" "$T_SAN/stamp"
}

# ---- the cleanup ----------------------------------------------------------------

# _t_alive PID: the process runs (a zombie has exited).
_t_alive() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [ "${s%% *}" != Z ]
}

# The kilnds on $KILN_SOCKET and T_SOCKETS stop gracefully; each is waited
# for until it has exited (its leak check is the last thing it does).
_t_stop_kilnds() {
    local s pid i
    for s in "$KILN_SOCKET" "${T_SOCKETS[@]}"; do
        [ -S "$s" ] || continue
        pid=$(kilnd_pid "$s")
        "$KILN" daemon stop --socket "$s" >/dev/null 2>&1
        [ -n "$pid" ] || continue
        for ((i = 0; i < 300; i++)); do
            _t_alive "$pid" || break
            sleep 0.1
        done
    done
}

# The pids of what this test started and left: this shell's descendants,
# and processes with its directory in their environment (KILN_TEST_DIR: a
# daemonized kilnd is no descendant) or command line. Zombies have exited,
# and this shell and its subshell are left out. Builtins only: a process
# started here would carry the mark.
_t_ours() {
    local d p s st args IFS=$'\x1f'
    local -A ppid=() ours=()
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        { [ "$p" = $$ ] || [ "$p" = "$BASHPID" ]; } && continue
        read -r s 2>/dev/null <"$d/stat" || continue
        s=${s##*) }
        st=${s%% *}
        [ "$st" != Z ] || continue
        s=${s#* }
        ppid[$p]=${s%% *}
        if mapfile -d '' -t args 2>/dev/null <"$d/environ" &&
            [[ $IFS${args[*]}$IFS == *"${IFS}KILN_TEST_DIR=$tmp$IFS"* ]]; then
            ours[$p]=1
        elif mapfile -d '' -t args 2>/dev/null <"$d/cmdline" && [[ ${args[*]} == *"$tmp"* ]]; then
            ours[$p]=1
        fi
    done
    local grew=1
    while [ $grew = 1 ]; do
        grew=0
        for p in "${!ppid[@]}"; do
            [ -z "${ours[$p]:-}" ] || continue
            if [ "${ppid[$p]}" = $$ ] || [ -n "${ours[${ppid[$p]}]:-}" ]; then
                ours[$p]=1
                grew=1
            fi
        done
    done
    [ ${#ours[@]} -eq 0 ] || printf '%s\n' "${!ours[@]}"
}

_t_cleanup() {
    local rc=$? p h i left
    set +e
    if [ "$T_DONE" != 1 ]; then
        case $rc in
        2 | 77 | 130) ;;   # bad usage or setup (said on stderr), a skip, an interrupt
        0)
            echo "not ok - the test ended without t_done"
            T_NFAIL=$((T_NFAIL + 1))
            _t_summary
            rc=1
            ;;
        *)   # a command failed under set -e, say
            echo "not ok - ${T_NAME:-the test} stopped with exit status $rc"
            T_NFAIL=$((T_NFAIL + 1))
            _t_summary
            ;;
        esac
    fi
    disown -a 2>/dev/null   # no "Killed" line for each of them
    for p in "${T_BGPIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for h in "${T_HOOKS[@]}"; do eval "$h"; done
    for ((i = 0; i < 30; i++)); do
        left=$(_t_ours)
        [ -n "$left" ] || break
        kill -9 $left 2>/dev/null
        sleep 0.1
    done
    if [ -n "${KILN_TEST_KEEP:-}" ]; then
        echo "# kept $tmp"
    else
        chmod -R u+rwx "$tmp" 2>/dev/null
        rm -rf "$tmp"
    fi
    exit $rc
}
