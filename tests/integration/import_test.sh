#!/usr/bin/env bash
# import_test.sh - `kiln import` end to end on the fixtures in import/, no
# GPU needed: what it writes and where (-o, -o -, the default FILE.kiln.cu,
# --dry-run), the account and the manifest it prints, the problem lines
# and exit status of every refusal (a vector-width dispatch, a runtime
# query, a loop of launches, unmapped parameters, a host template, two
# launching functions), --function, --map and --force. Every written
# candidate must pass the static stage of the real `kiln verify` (on a
# machine without a GPU the job then stops at the worker, exit 3; a forced
# one with TODOs must fail there as bad-manifest), and, where NVRTC is
# installed, compile with it as kiln's CUDA worker compiles candidates.
#
# usage: import_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
FIX=$SRC/tests/integration/import
cd "$tmp" || exit 2
run() {
    "$KILN" "$@" > out.txt 2> err.txt < /dev/null
    rc=$?
}
has() { grep -qF -e "$2" "$1" || problem "$1 lacks '$2'"; }
lacks() { ! grep -qF -e "$2" "$1" || problem "$1 has '$2'"; }
want_rc() { [ "$rc" -eq "$1" ] || problem "exit status $rc, want $1: $(head -c 600 err.txt)"; }

# The static stage of the real verifier: a candidate that passes it goes on
# to the worker (exit 3 without a GPU; a verdict past "static" with one).
static_ok() {   # static_ok FILE TASK
    local out
    out=$("$KILN" verify "$1" --task "$2" --dtype f32 --group small --no-daemon --json \
          --timing-ms 200 2>&1)
    if grep -q '"stage":[[:space:]]*"static"' <<<"$out"; then
        problem "kiln verify fails $1 at the static stage: $(grep -m1 reason <<<"$out")"
    elif ! grep -q '"status"' <<<"$out" && ! grep -qiE 'GPU|driver|CUDA' <<<"$out"; then
        problem "kiln verify $1: neither a verdict nor a missing GPU: $(head -c 300 <<<"$out")"
    fi
}

# NVRTC, as kiln-worker-cuda calls it (kiln_cuda.h from memory, CUDA's
# include directories, one KILN_DTYPE_* define): 0 compiled with the kernel
# as an entry, 1 failed, 77 no NVRTC here.
NVRTC_PY='
import ctypes, ctypes.util, glob, os, sys
src, kernel, hdr = sys.argv[1], sys.argv[2], sys.argv[3]
libs = glob.glob("/usr/local/cuda/lib64/libnvrtc.so*") + [ctypes.util.find_library("nvrtc") or ""]
lib = None
for l in libs:
    try:
        lib = ctypes.CDLL(l); break
    except OSError:
        pass
if lib is None:
    sys.exit(77)
inc = "/usr/local/cuda/include"
p = ctypes.c_void_p()
hs = (ctypes.c_char_p * 1)(open(hdr, "rb").read())
hn = (ctypes.c_char_p * 1)(b"kiln_cuda.h")
if lib.nvrtcCreateProgram(ctypes.byref(p), open(src, "rb").read(), b"cand.cu", 1, hs, hn):
    sys.exit(1)
opts = [b"--gpu-architecture=compute_90", b"-DKILN_DTYPE_F32=1", b"--std=c++17",
        b"-default-device", ("--include-path=" + inc).encode(),
        ("--include-path=" + inc + "/cccl").encode()]
arr = (ctypes.c_char_p * len(opts))(*opts)
rc = lib.nvrtcCompileProgram(p, len(opts), arr)
n = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(p, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
lib.nvrtcGetProgramLog(p, log)
if rc:
    sys.stderr.write(log.value.decode(errors="replace")[:800]); sys.exit(1)
lib.nvrtcGetPTXSize(p, ctypes.byref(n))
ptx = ctypes.create_string_buffer(n.value)
lib.nvrtcGetPTX(p, ptx)
sys.exit(0 if (".entry " + kernel + "(").encode() in ptx.value else 1)
'
nvrtc_ok() {   # nvrtc_ok FILE KERNEL
    python3 -c "$NVRTC_PY" "$1" "$2" "$SRC/worker/cuda/kiln_cuda.h" 2> nvrtc.txt
    local r=$?
    [ $r -eq 77 ] && { nvrtc_skipped=1; return; }
    [ $r -eq 0 ] || problem "NVRTC does not compile $1 with entry $2: $(head -c 400 nvrtc.txt)"
}
nvrtc_skipped=0

# ---- translated fixtures -------------------------------------------------------

begin
run import "$FIX/rmsnorm.cu" --task rmsnorm -o rms.cu
want_rc 0
has out.txt "parameters: out -> y (non-const pointer, by position), in -> x (const pointer, by position), w -> w (name), eps -> eps (name), rows -> rows (name), cols -> cols (name), s: a stream"
has out.txt 'block   block -> ["min(cols, 1024)"]'
has out.txt "stream  s -> dropped"
has out.txt "args    out -> y, in -> x, w -> w, eps -> eps, cols -> cols"
has out.txt "right for --dtype f32 only"
has out.txt "wrote rms.cu; next: kiln verify rms.cu --task rmsnorm --dtype f32"
has rms.cu 'extern "C" __global__ void rms_kernel(float* __restrict__ out'
has rms.cu '"block": ["min(cols, 1024)"]'
has rms.cu '"args": ["y", "x", "w", "eps", "cols"]'
lacks rms.cu '<<<'
[ -s err.txt ] && problem "stderr not empty: $(head -c 300 err.txt)"
static_ok rms.cu rmsnorm
nvrtc_ok rms.cu rms_kernel
end "rmsnorm: a dim3 grid and block, std::min, the caller's stream dropped, params by const-ness"

begin
run import "$FIX/layernorm_smem.cu" --task layernorm -o ln.cu
want_rc 0
has out.txt "gamma -> w (const pointer, by position), beta -> b (const pointer, by position)"
has out.txt "let threads = min(THREADS, (cols + 32 - 1) / 32 * 32)"
has out.txt "let smem = threads * sizeof(f32)"
has out.txt "returns early when rows == 0 || cols == 0"
has out.txt "dropped 'cudaError_t err = cudaGetLastError()'"
has out.txt "removed host function ceil_div"
has ln.cu '"smem": "smem"'
static_ok ln.cu layernorm
nvrtc_ok ln.cu layernorm_kernel
end "layernorm: shared memory from block.x * sizeof(float), lets, a one-return helper inlined"

begin
run import "$FIX/softmax_vec.cu" --task softmax -o sm.cu
want_rc 0
has out.txt "kernel  softmax_kernel<1> -> its extern \"C\" copy"
has sm.cu 'extern "C" __global__ void softmax_kernel_1('
has sm.cu "template <int VEC>"
has sm.cu '"kernel": "softmax_kernel_1"'
lacks sm.cu '"kVec"'
static_ok sm.cu softmax
nvrtc_ok sm.cu softmax_kernel_1
end "softmax: a template launched as a concrete instance is copied out as an extern \"C\" kernel"

begin
run import "$FIX/two_wrappers.cu" --task rmsnorm --function rmsnorm_prefill --map dst=y \
    --map src=x --map=gain=w -o tw.cu
want_rc 0
has out.txt "dst -> y (--map), src -> x (--map), gain -> w (--map)"
has out.txt 'let warps = cols >= 4096 ? 16 : 8'
has tw.cu '"block": ["warps * WARP"]'
static_ok tw.cu rmsnorm
run import "$FIX/two_wrappers.cu" --task rmsnorm --function rmsnorm_decode -o td.cu
want_rc 0
has td.cu '"block": ["WARP"]'
run import "$FIX/two_wrappers.cu" --task rmsnorm
want_rc 2
has err.txt "two_wrappers.cu:37: cannot translate the file: 2 host functions launch kernels (rmsnorm_decode (line 31), rmsnorm_prefill (line 37)); choose one with --function NAME"
run import "$FIX/two_wrappers.cu" --task rmsnorm --function rmsnorm_prefill --map gain=weight
want_rc 2
has err.txt "--map gain=weight: no arg of that name in the task"
end "--function picks a host function, --map maps parameters the rules cannot"

# ---- where it writes -------------------------------------------------------------

begin
cp "$FIX/rmsnorm.cu" mine.cu
run import mine.cu --task rmsnorm
want_rc 0
[ -s mine.kiln.cu ] || problem "no mine.kiln.cu"
cmp -s <(grep -v '^/\* kiln import: from' mine.kiln.cu) <(grep -v '^/\* kiln import: from' rms.cu) ||
    problem "mine.kiln.cu differs from -o rms.cu beyond the file's name"
run import mine.cu --task rmsnorm -o -
want_rc 0
head -1 out.txt | grep -q '^// rmsnorm.cu' || problem "stdout does not start with the candidate"
has out.txt "@*/"
has err.txt "proposed manifest:"
rm -f dry.cu
run import mine.cu --task rmsnorm -o dry.cu --dry-run
want_rc 0
[ -e dry.cu ] && problem "--dry-run wrote dry.cu"
has out.txt "/*@kiln launch"
run import mine.cu --task rmsnorm -o mine.cu
want_rc 2
has err.txt "will not overwrite the source"
run import mine.cu
want_rc 2
has err.txt "--task is required"
run import mine.cu --task no_such_task
want_rc 2
end "FILE.kiln.cu by default, -o - to stdout, --dry-run writes nothing, bad input is exit 2"

# ---- refusals ----------------------------------------------------------------------

begin
run import "$FIX/softmax_dispatch.cu" --task softmax -o disp.cu
want_rc 2
has err.txt "softmax_dispatch.cu:47: cannot translate the launch: it is inside 'if (cols % 4 == 0)' (line 46); the manifest's launches are unconditional"
has err.txt "softmax_dispatch.cu:49: cannot translate the launch: it is inside the else of 'if (cols % 4 == 0)'"
has err.txt "nothing written"
[ -e disp.cu ] && problem "a refused import wrote disp.cu"
run import "$FIX/softmax_dispatch.cu" --task softmax -o disp.cu --force
want_rc 1
has disp.cu '"TODO": ['
has disp.cu 'extern "C" __global__ void softmax_kernel_4('
has err.txt "written with 2 TODOs left"
out=$("$KILN" verify disp.cu --task softmax --dtype f32 --group small --no-daemon --json 2>&1)
grep -q "bad-manifest" <<<"$out" && grep -q "unknown field 'TODO'" <<<"$out" ||
    problem "kiln verify does not refuse the forced candidate: $(head -c 300 <<<"$out")"
end "a vector-width dispatch is refused with its lines; --force writes TODOs kiln refuses"

begin
run import "$FIX/fail_query.cu" --task rmsnorm
want_rc 2
has err.txt "fail_query.cu:35: cannot translate the grid: 'sms' is set at line 34 by a runtime query ('cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)')"
run import "$FIX/fail_loop.cu" --task rmsnorm
want_rc 2
has err.txt "fail_loop.cu:35: cannot translate the launch: it is inside 'for (int r = 0; r < rows; r += 65535)' (line 33); a loop of launches has no manifest form"
has err.txt "fail_loop.cu:35: cannot translate a kernel argument: 'out + (size_t)r * cols' is an expression"
end "a runtime query and a loop of launches are refused, with the lines"

begin
run import "$FIX/fail_unmapped.cu" --task rmsnorm
want_rc 2
has err.txt "fail_unmapped.cu:34: cannot translate the grid: the parameter 'batch' has no counterpart among the task's dims (rows, cols)"
has err.txt "fail_unmapped.cu:34: cannot translate a kernel argument: the parameter 'hidden' has no counterpart among the task's args (x, w, y, rows, cols, eps): name it as the arg it is, or pass --map hidden=ARG"
has err.txt "fail_unmapped.cu:7: cannot translate #include \"norm_utils.h\""
run import "$FIX/fail_template.cu" --task rmsnorm
want_rc 2
has err.txt "fail_template.cu:28: cannot translate the kernel's template instance: it depends on the host function's template parameter"
has err.txt "fail_template.cu:26: cannot translate 'cudaStreamCreate(&s)': host-side work"
has err.txt "fail_template.cu:27: cannot translate 'cudaMemsetAsync(out, 0, sizeof(T) * rows * cols, s)'"
has err.txt "fail_template.cu:28: cannot translate the stream"
end "unmapped parameters, a local header, a host template and host work are refused"

begin
run import "$SRC/kernels/rmsnorm/cuda/starter.cu" --task rmsnorm --dry-run
want_rc 2
has err.txt "already has a /*@kiln launch"
run help import
want_rc 0
has out.txt "usage: kiln import FILE.cu --task NAME|DIR"
grep -q "^Exit status: 0" out.txt || problem "kiln help import does not end with the exit statuses"
run --help
has out.txt "import FILE.cu --task T"
end "a candidate already is one; kiln help import; the command list"

[ "$nvrtc_skipped" -eq 0 ] || skip "NVRTC compiles (no libnvrtc here)"
t_done
