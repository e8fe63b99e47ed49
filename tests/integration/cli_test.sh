#!/usr/bin/env bash
# cli_test.sh - integration tests of the kiln command line, run against the
# real binaries.
#
# usage: cli_test.sh BUILD_DIR SOURCE_DIR
#
# Needs bash and coreutils (and python3, for lib.sh's JSON reader).
. "$(dirname "$0")/lib.sh"
t_init "$@"
cd "$SRC" || exit 2

STARTER=kernels/rmsnorm/cpu/starter.c
FAST=(--timing-ms 200)
# No kiln call may hang the suite: each runs under this limit.
LIMIT=180

# run ARGS...: run kiln; sets rc, secs, and $tmp/io/{stdout,stderr,cmd}.
mkdir -p "$tmp/io"
run() {
    printf '%s' "kiln $*" > "$tmp/io/cmd"
    local t0=$SECONDS
    timeout -k 10 "$LIMIT" "$KILN" "$@" > "$tmp/io/stdout" 2> "$tmp/io/stderr" < /dev/null
    rc=$?
    secs=$((SECONDS - t0))
}

expect_rc() { [ "$rc" -eq "$1" ] || problem "exit status $rc, expected $1"; }
# expect_out|expect_err [-F] PATTERN: stdout/stderr matches the ERE (or fixed string).
expect_in() {
    local stream=$1 mode=-E
    shift
    if [ "$1" = -F ]; then mode=-F; shift; fi
    grep -q $mode -e "$1" "$tmp/io/$stream" || problem "$stream lacks ${mode#-} '$1'"
}
expect_out() { expect_in stdout "$@"; }
expect_err() { expect_in stderr "$@"; }
expect_not_out() {
    local mode=-E
    if [ "$1" = -F ]; then mode=-F; shift; fi
    ! grep -q $mode -e "$1" "$tmp/io/stdout" || problem "stdout contains ${mode#-} '$1'"
}
# A JSON string field, as cJSON prints it ("key":<tab>"value").
json_field() { printf '"%s":[[:space:]]*"%s"' "$1" "$2"; }

show_io() {
    printf '#   command: %s\n' "$(cat "$tmp/io/cmd")"
    printf '#   exit status: %s (%s s)\n' "$rc" "$secs"
    local s
    for s in stdout stderr; do
        if [ -s "$tmp/io/$s" ]; then
            printf '#   %s (first 25 lines):\n' "$s"
            head -n 25 "$tmp/io/$s" | sed 's/^/#     /'
        fi
    done
}

# A failed check shows the last kiln command (end NAME noio: not).
T_FAIL_SHOW=show_io

# starter_passes NAME: the starter verifies as pass (used after hostile candidates).
starter_passes() {
    begin
    run verify "$STARTER" --task rmsnorm --group decode "${FAST[@]}" --json
    expect_rc 0
    expect_out "$(json_field status pass)"
    end "$1"
}

# A number N as a whole word that is not part of a decimal number:
# like grep -w, but "129" does not match in "12.129" or "129.5".
number_re() { printf '(^|[^0-9A-Za-z_.])%s([^0-9A-Za-z_.]|\\.([^0-9]|$)|$)' "$1"; }

# ---------------------------------------------------------------------------
# 1. help and usage
begin
run --help
expect_rc 0
expect_out 'verify'
end "kiln --help exits 0 and mentions verify"

begin
run
expect_rc 2
end "kiln with no arguments exits 2"

begin
run bogus
expect_rc 2
expect_err 'bogus'
end "kiln bogus exits 2"

begin
run verify --help
expect_rc 0
expect_out -F '--task'
end "kiln verify --help exits 0 and mentions --task"

begin
run task show --help
expect_rc 0
expect_out 'usage'
end "kiln task show --help exits 0"

# ---------------------------------------------------------------------------
# 2. the starter passes, table output (default group prefill)
begin
run verify "$STARTER" --task rmsnorm "${FAST[@]}"
expect_rc 0
expect_out '(^|[^a-z])pass([^a-z]|$)'
expect_out -F 'rows=32 cols=1024'
expect_out '^hidden shapes: [0-9]+, all passed$'
end "starter passes (table shows pass, visible dims and the hidden stage's one line)"

# ---------------------------------------------------------------------------
# 3. JSON verdict of the starter; no hidden-only size leaks
begin
run verify "$STARTER" --task rmsnorm --group decode "${FAST[@]}" --json
cp "$tmp/io/stdout" "$tmp/starter.json"
expect_rc 0
expect_out "$(json_field status pass)"
sha=$(sha256sum "$STARTER" | cut -d' ' -f1)
expect_out "$(json_field source_sha256 "$sha")"
for key in sandbox rusage environment verifier_version; do
    expect_out "\"$key\":"
done
end "starter --json: pass, source_sha256 = sha256sum, sandbox, rusage, environment, verifier_version"

# Hidden-only sizes: numbers in hidden.json, >= 100, that are not the size
# of a dim in any visible shape of task.json.
task_json=tasks/rmsnorm/task.json
hidden_json=tasks/rmsnorm/hidden.json
dims=$(tr -d '\n' < "$task_json" | sed -n 's/.*"dims"[[:space:]]*:[[:space:]]*\[\([^]]*\)\].*/\1/p' |
       tr -d '" \t' | tr ',' '|')
visible=$(grep -oE "\"($dims)\"[[:space:]]*:[[:space:]]*[0-9]+" "$task_json" | grep -oE '[0-9]+$' | sort -un)
hidden_only=()
for n in $(grep -oE '[0-9]+' "$hidden_json" | sort -un); do
    [ "$n" -ge 100 ] || continue
    grep -qx -- "$n" <<< "$visible" || hidden_only+=("$n")
done
begin
[ -n "$dims" ] || problem "could not read the dims of $task_json"
[ -n "$visible" ] || problem "found no visible sizes in $task_json"
[ ${#hidden_only[@]} -ge 3 ] || problem "found only ${#hidden_only[@]} hidden-only sizes in $hidden_json"
end "hidden-only sizes found (${hidden_only[*]:-none})" noio

# Measurements (times, call and sample counts, rss, byte counts, error
# budgets) are numbers the run produces, not sizes the task states; they can
# equal a hidden size by chance, so their lines are left out. Every string
# (reason, feedback, flags) and every dims object is searched.
measure='"(count|calls|seconds|[a-z0-9_]*_ns|[a-z0-9_]*_s|worker_maxrss_kb|bytes|flops|speedup|[a-z_]*_speedup|[a-z_]*roofline_fraction|max_err_ulps|budget_ulps|rel_l2|bandwidth_gbps)":'
grep -Ev "$measure" "$tmp/starter.json" > "$tmp/starter.filtered.json"
begin
for n in "${hidden_only[@]}"; do
    if grep -Eq "$(number_re "$n")" "$tmp/starter.filtered.json"; then
        problem "hidden-only size $n appears in the verdict: $(grep -nE "$(number_re "$n")" "$tmp/starter.filtered.json" | head -3 | tr '\n' ' ')"
    fi
done
[ -s "$tmp/starter.filtered.json" ] || problem "no verdict to search"
end "starter --json verdict names no hidden-only size" noio

begin
run task show rmsnorm
expect_rc 0
expect_out -F 'void rmsnorm('
for n in "${hidden_only[@]}"; do
    if grep -Eq "$(number_re "$n")" "$tmp/io/stdout"; then
        problem "hidden-only size $n appears: $(grep -nE "$(number_re "$n")" "$tmp/io/stdout" | head -3 | tr '\n' ' ')"
    fi
done
end "kiln task show rmsnorm names no hidden-only size"

# ---------------------------------------------------------------------------
# 4. bad input: exit 2 with a clear message
begin
run verify "$tmp/no-such-kernel.c" --task rmsnorm --group decode "${FAST[@]}"
expect_rc 2
expect_err -F 'no-such-kernel.c'
end "nonexistent candidate: exit 2, message names the file"

begin
run verify "$STARTER" --task no_such_task --group decode "${FAST[@]}"
expect_rc 2
expect_err -F 'no task named'
expect_err -F 'no_such_task'
end "unknown task name: exit 2, 'no task named'"

cp -r tasks/rmsnorm "$tmp/badtask"
# Break the first arg shape: "cols" -> "colz".
sed -i '0,/"shape": \["rows", "cols"\]/s//"shape": ["rows", "colz"]/' "$tmp/badtask/task.json"
begin
grep -q '"colz"' "$tmp/badtask/task.json" || problem "test setup: could not break $tmp/badtask/task.json"
run verify "$STARTER" --task "$tmp/badtask" --group decode "${FAST[@]}"
expect_rc 2
expect_err -F 'task.json'
expect_err -F 'args[0].shape'
expect_err -F 'colz'
end "malformed task.json: exit 2, message names task.json and the field"

begin
run verify "$STARTER" --task rmsnorm --group decode --dtype f99 "${FAST[@]}"
expect_rc 2
expect_err -F 'f99'
end "unknown --dtype: exit 2"

begin
run verify "$STARTER" --task rmsnorm --group nosuchgroup "${FAST[@]}"
expect_rc 2
expect_err -F 'nosuchgroup'
end "unknown --group: exit 2"

begin
run verify "$STARTER" --task rmsnorm --group decode --backend tpu "${FAST[@]}"
expect_rc 2
expect_err -F 'unknown backend'
end "--backend tpu: exit 2"

# The CUDA backend where there is no GPU (or no CUDA build): an error that
# says so, never a verdict about the candidate. (With a GPU, gpu-check.sh
# runs the CUDA tests.)
begin
if have_gpu; then
    skip "a GPU is present: gpu-check.sh covers the CUDA backend"
else
    run verify kernels/rmsnorm/cuda/starter.cu --task rmsnorm --dtype bf16 --no-daemon "${FAST[@]}"
    expect_rc 3
    expect_err 'CUDA (worker|backend)'
    end "a .cu file where there is no GPU: exit 3 naming the CUDA worker"
fi

begin
run verify "$STARTER" --group decode "${FAST[@]}"
expect_rc 2
expect_err -F '--task'
end "missing --task: exit 2"

# ---------------------------------------------------------------------------
# 5. candidates that do not compile
cat > "$tmp/syntax_error.c" <<'EOF'
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    y[0] = x[0] * w[0] +;
}
EOF
begin
run verify "$tmp/syntax_error.c" --task rmsnorm --group decode "${FAST[@]}"
expect_rc 1
expect_out 'compile'
expect_out ':5:[0-9]+: error:'
expect_out -F 'y[0] = x[0] * w[0] +;'
end "syntax error: exit 1, mentions compile and shows the compiler's error line"

cat > "$tmp/wrong_signature.c" <<'EOF'
#include <stdint.h>

void rmsnorm(const float *x, float *y)
{
    y[0] = x[0];
}
EOF
begin
run verify "$tmp/wrong_signature.c" --task rmsnorm --group decode "${FAST[@]}" --json
expect_rc 1
expect_out "$(json_field status fail)"
expect_out "$(json_field stage compile)"
expect_out '"feedback":[[:space:]]*"[^"]*conflicting types'
end "wrong signature: exit 1 at stage compile, feedback says conflicting types"

# ---------------------------------------------------------------------------
# 6. a hanging candidate
cat > "$tmp/hang.c" <<'EOF'
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps;
    volatile unsigned long spin = 0;
    for (;;)
        spin++;
}
EOF
begin
run verify "$tmp/hang.c" --task rmsnorm --group decode "${FAST[@]}" --json
expect_rc 1
expect_out "$(json_field code timeout)"
[ "$secs" -le 30 ] || problem "took $secs s, expected at most 30 s"
end "hanging candidate: exit 1, code timeout, within 30 s"
starter_passes "starter passes right after the hanging candidate"

# ---------------------------------------------------------------------------
# 7. a crashing candidate
cat > "$tmp/crash.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x; (void)w; (void)rows; (void)cols; (void)eps;
    volatile float *volatile nowhere = NULL;
    *nowhere = y[0];
}
EOF
begin
run verify "$tmp/crash.c" --task rmsnorm --group decode "${FAST[@]}" --json
expect_rc 1
expect_out "$(json_field code crash)"
end "crashing candidate: exit 1, code crash"
starter_passes "starter passes right after the crashing candidate"

# ---------------------------------------------------------------------------
# 9. internal error: the task's own baseline does not compile
# (run before the leftover check so that its job directory is checked too)
cp -r tasks/rmsnorm "$tmp/brokenbase"
cat > "$tmp/brokenbase/broken_baseline.c" <<'EOF'
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    y[0] = x[0] * w[0] +;
}
EOF
# The copy's other relative paths (the CUDA baseline) point back into the tree.
rel=$(realpath --relative-to="$tmp/brokenbase" "$PWD/kernels")
sed -i -e 's|"\.\./\.\./kernels/|"'"$rel"'/|g' \
    -e 's|"cpu":[[:space:]]*"[^"]*starter\.c"|"cpu": "broken_baseline.c"|' "$tmp/brokenbase/task.json"
begin
grep -q '"broken_baseline.c"' "$tmp/brokenbase/task.json" ||
    problem "test setup: could not repoint the baseline in $tmp/brokenbase/task.json"
run verify "$STARTER" --task "$tmp/brokenbase" --group decode "${FAST[@]}"
expect_rc 3
expect_err 'baseline'
end "baseline that does not compile: exit 3, stderr mentions baseline"

# ---------------------------------------------------------------------------
# 8. nothing left behind by the verify runs above
sleep 1     # a killed worker's group may take a moment to be reaped
begin
left=$(find "$TMPDIR" "$KILN_STATE/work" -maxdepth 1 -name 'kiln-job-*' 2>/dev/null)
[ -z "$left" ] || problem "job directories left behind: $(echo $left)"
procs=$(pgrep -a -f "kiln-worker.*$tmp")
[ -z "$procs" ] || problem "kiln-worker processes still running: $procs"
for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case $cwd in
        "$tmp"|"$tmp"/*) problem "process ${p#/proc/} still runs in $cwd: $(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)" ;;
    esac
done
end "no job directories or worker processes left behind" noio

# ---------------------------------------------------------------------------
# 10. task list and task show
begin
run task list
expect_rc 0
expect_out '^rmsnorm( |$)'
expect_out '^softmax( |$)'
end "kiln task list lists rmsnorm and softmax"

begin
run task show softmax
expect_rc 0
expect_out -F 'void softmax(const float *x, float *y, int32_t rows, int32_t cols)'
end "kiln task show softmax gives the exact signature"

begin
run task list
for t in layernorm rope rope_interleaved add_rmsnorm cross_entropy; do expect_out "^$t( |\$)"; done
end "kiln task list lists layernorm, rope, rope_interleaved, add_rmsnorm and cross_entropy"

begin
run task show cross_entropy
expect_rc 0
expect_out -F 'void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows, int32_t vocab)'
expect_out -F 'integers in [0, vocab - 1]; about 10% of them -100 (the ignore value)'
expect_out -F 'cost: bytes read = (rows - rows / 10) * vocab * sizeof(T) + rows * sizeof(i32); bytes written = rows * sizeof(f32)'
end "kiln task show cross_entropy: int32 targets in the signature, their values, reads and writes apart"

begin
run task show add_rmsnorm --backend cuda --dtype bf16
expect_rc 0
expect_out -F '(const kiln_t *x, const kiln_t *residual, const kiln_t *w, kiln_t *r, kiln_t *y, int rows, int cols, float eps)'
end "kiln task show add_rmsnorm --backend cuda: two outputs, r then y"

begin
run task show rope
expect_rc 0
expect_out -F 'void rope(const float *x, const float *cos, const float *sin, float *y, int32_t tokens, int32_t heads, int32_t half_dim)'
expect_out -F '[tokens, heads, 2*half_dim]'
expect_not_out -F '@kiln launch'
end "kiln task show rope: exact CPU signature, x is [tokens, heads, 2*half_dim], nothing of CUDA"

begin
run task show rmsnorm --backend cuda --dtype bf16
expect_rc 0
expect_out -F 'KILN_DTYPE_BF16'
expect_out -F '(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)'
expect_out -F '/*@kiln launch'
expect_out -F '"kernel": "rmsnorm_fwd"'
expect_out -F '#define BLOCK 256 //@kiln tune'
expect_not_out -F 'void rmsnorm('
end "kiln task show rmsnorm --backend cuda: kernel argument types, manifest and knob syntax, the starter's manifest"

begin
run task show rope --backend cuda --dtype f32
expect_rc 2
expect_err -F 'no CUDA variant for dtype f32'
end "kiln task show rope --backend cuda --dtype f32: exit 2 (rope runs f16 and bf16 on CUDA)"

begin
run task show rmsnorm --backend tpu
expect_rc 2
expect_err -F "unknown backend 'tpu'"
end "kiln task show --backend tpu: exit 2"

# The CPU starters of the tasks beyond rmsnorm pass on the real CLI (their
# references, shapes and tolerances work together).
for t in softmax layernorm rope rope_interleaved add_rmsnorm cross_entropy; do
    begin
    run verify "kernels/$t/cpu/starter.c" --task "$t" --group decode "${FAST[@]}" --json
    expect_rc 0
    expect_out "$(json_field status pass)"
    end "the $t CPU starter passes (decode)"
done

# One help format: every command's --help starts with its usage line and
# ends with its exit statuses; `kiln help X` shows it, and the topics too.
for c in search verify task daemon status report reverify export lessons doctor; do
    begin
    run help "$c"
    expect_rc 0
    expect_out "^usage: kiln $c"
    expect_out "^Exit status: 0"
    end "kiln help $c: the usage line and the exit statuses"
done
begin
for topic in tasks verdicts manifest exit-codes; do
    run help "$topic"
    expect_rc 0
    [ -s "$tmp/io/stdout" ] || problem "kiln help $topic printed nothing"
done
run help exit-codes
expect_out "130"
run help bogus
expect_rc 2
expect_err "no topic 'bogus'"
end "kiln help tasks|verdicts|manifest|exit-codes; an unknown topic is exit 2"

# ---------------------------------------------------------------------------
# The build cache of a verification in this process (verifier/build_cache.h):
# what it built is kept, a new candidate once; $KILN_BUILD_CACHE names the
# directory or turns it off, and the default is the user's.
kept() { ls "$1"/*.so 2>/dev/null | wc -l; }
begin
BC=$tmp/bcache
KILN_BUILD_CACHE=$BC run verify "$STARTER" --task rmsnorm --no-daemon --group decode "${FAST[@]}" --json
expect_rc 0
n0=$(kept "$BC")
[ "$n0" -eq 3 ] || problem "$n0 libraries kept after one rmsnorm verification, expected 3 (candidate, baseline, reference)"
{ echo "/* cli_test $$ $RANDOM */"; cat "$STARTER"; } >"$tmp/unique.c"
KILN_BUILD_CACHE=$BC run verify "$tmp/unique.c" --task rmsnorm --no-daemon --group decode "${FAST[@]}" --json
expect_rc 0
[ "$(kept "$BC")" -eq $((n0 + 1)) ] || problem "a new candidate: $(kept "$BC") libraries kept, $n0 before"
for so in "$BC"/*.so; do printf 'not a library' >"$so"; done
KILN_BUILD_CACHE=$BC run verify "$STARTER" --task rmsnorm --no-daemon --group decode "${FAST[@]}" --json
expect_rc 0
expect_out "$(json_field status pass)"
sound=0   # the starter's three entries, rebuilt; unique.c's stays damaged until it is used
for so in "$BC"/*.so; do
    [ "$(sha256sum <"$so" | cut -c1-64)" = "$(cat "${so%.so}.sha256")" ] && sound=$((sound + 1))
done
[ "$sound" -eq 3 ] || problem "$sound entries hash as stored after the damaged ones were used, expected 3"
end "verify --no-daemon keeps what it built ($n0), a new candidate once; damaged entries are rebuilt"

begin
HOME=$tmp/home XDG_CACHE_HOME= KILN_BUILD_CACHE= run verify "$STARTER" --task rmsnorm --no-daemon \
    --group decode "${FAST[@]}" --json
expect_rc 0
[ "$(kept "$tmp/home/.cache/kiln/build-cache")" -eq 3 ] ||
    problem "nothing kept in ~/.cache/kiln/build-cache by default"
HOME=$tmp/home2 KILN_BUILD_CACHE=off run verify "$STARTER" --task rmsnorm --no-daemon \
    --group decode "${FAST[@]}" --json
expect_rc 0
[ ! -e "$tmp/home2/.cache" ] || problem "KILN_BUILD_CACHE=off still made $tmp/home2/.cache"
: >"$tmp/plainfile"
KILN_BUILD_CACHE=$tmp/plainfile/cache run verify "$STARTER" --task rmsnorm --no-daemon "${FAST[@]}"
expect_rc 2
expect_err "KILN_BUILD_CACHE"
end "the build cache: ~/.cache/kiln by default, KILN_BUILD_CACHE=off, a bad KILN_BUILD_CACHE is exit 2"

t_done
