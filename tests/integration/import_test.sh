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
# The files in their published shapes (issue 39): vLLM's layernorm_kernels.cu
# (import/vllm/, its headers in import/vllm/csrc) and llm.c's
# dev/cuda/layernorm_forward.cu (import/llmc/) import with --include,
# --function and --map only; what they give compiles as the CUDA worker
# compiles it (RTC_CHECK: kiln's NVRTC code, every dtype) and with nvcc.
# tests/integration/import_cuda_test.sh verifies them on a GPU.
#
# usage: import_test.sh BUILD_DIR SOURCE_DIR [RTC_CHECK CUDA_INCLUDE_DIR]
# ("none none" when built without the CUDA toolkit; both or neither.)
. "$(dirname "$0")/lib.sh"
t_init -a '[RTC_CHECK] [CUDA_INCLUDE_DIR]' "$@"
if [ ${#T_ARGS[@]} -eq 1 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR [RTC_CHECK CUDA_INCLUDE_DIR]: RTC_CHECK without CUDA_INCLUDE_DIR" >&2
    exit 2
fi
RTC=${T_ARGS[0]:-none}
CUDA_INC=${T_ARGS[1]:-none}
[ "$RTC" = none ] || RTC=$(readlink -f -- "$RTC")   # the checks run in $tmp
[ "$CUDA_INC" = none ] || CUDA_INC=$(readlink -f -- "$CUDA_INC")
find_nvcc || NVCC=
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

# The candidate compiles as kiln-worker-cuda compiles it, for every CUDA
# dtype of the task, its name-expression kernels found (rtc_check), and
# with nvcc and the real headers, the same kernels instantiated.
rtc_skipped=0 nvcc_skipped=0
compiles() {   # compiles FILE TASK_DIR RTC_DTYPES (f32,bf16: kiln's NVRTC) [NVCC_DTYPE (F32)]
    if [ "$RTC" != none ]; then
        "$RTC" "$SRC/worker/cuda/kiln_cuda.h" "$CUDA_INC" "$2" "$1" "$3" 2> rtc.txt ||
            problem "kiln's NVRTC does not compile $1: $(head -c 1500 rtc.txt)"
    else
        rtc_skipped=1
    fi
    [ "${4:-none}" = none ] && return
    if [ -z "$NVCC" ]; then
        nvcc_skipped=1
        return
    fi
    cp "$1" nvcc_cand.cu
    python3 - "$1" >> nvcc_cand.cu <<'PY'
import json, re, sys
t = open(sys.argv[1]).read()
m = json.loads(t[t.index("/*@kiln launch") + 14:t.rindex("@*/")])
for i, l in enumerate(m["launches"]):
    if "<" in l["kernel"] or "::" in l["kernel"]:   # instantiate what NVRTC's name expression would
        print("void *kiln_nvcc_check_%d = (void *)&%s;" % (i, l["kernel"]))
PY
    # device code only (-ptx): the host pass adds nothing a candidate has, and costs minutes
    "$NVCC" -std=c++17 -arch=sm_90a -ptx -DKILN_DTYPE_$4 -I"$SRC/worker/cuda" nvcc_cand.cu \
        -o nvcc_cand.ptx 2> nvcc.txt || problem "nvcc ($4) does not compile $1: $(head -c 1500 nvcc.txt)"
}

# The manifest's JSON parses (python's json), whatever import left TODO.
json_ok() {   # json_ok FILE
    python3 -c '
import json, sys
t = open(sys.argv[1]).read()
json.loads(t[t.index("/*@kiln launch") + 14:t.rindex("@*/")])' "$1" 2> json.txt ||
        problem "the manifest of $1 is not JSON: $(head -c 300 json.txt)"
}

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
want_rc 0
has out.txt "when    cols % 4 == 0"
has out.txt "when    !(cols % 4 == 0)"
has disp.cu '"kernel": "softmax_kernel_4", "when": "cols % 4 == 0"'
has disp.cu '"kernel": "softmax_kernel_1", "when": "!(cols % 4 == 0)"'
static_ok disp.cu softmax
compiles disp.cu "$SRC/tasks/softmax" f32
end "a vector-width dispatch: each branch's launch runs when its condition holds"

begin
run import "$FIX/fail_loop.cu" --task rmsnorm -o loop.cu
want_rc 2
has err.txt "nothing written"
[ -e loop.cu ] && problem "a refused import wrote loop.cu"
run import "$FIX/fail_loop.cu" --task rmsnorm -o loop.cu --force
want_rc 1
has loop.cu '"TODO": ['
has err.txt "written with 4 TODOs left"
json_ok loop.cu
out=$("$KILN" verify loop.cu --task rmsnorm --dtype f32 --group small --no-daemon --json 2>&1)
grep -q "bad-manifest" <<<"$out" && grep -q "unknown field 'TODO'" <<<"$out" ||
    problem "kiln verify does not refuse the forced candidate: $(head -c 300 <<<"$out")"
end "--force writes valid JSON with TODOs, which kiln refuses"

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

# ---- vLLM's layernorm_kernels.cu, as published ---------------------------------------

VL=$FIX/vllm
begin
run import "$VL/layernorm_kernels.cu" --task rmsnorm --function rms_norm -o vrms.cu
want_rc 2
has err.txt "layernorm_kernels.cu:9: cannot translate #include \"type_convert.cuh\": not found in $VL; a candidate is one file, so import inlines the project's headers: pass the directory that holds it with --include DIR"
has err.txt "layernorm_kernels.cu:10: cannot translate #include \"dispatch_utils.h\": not found"
run import "$VL/layernorm_kernels.cu" --task rmsnorm --function rms_norm --include "$VL/csrc" -o vrms.cu
want_rc 0
has out.txt "parameters: out -> y (a tensor the kernels write, by position), input -> x (a tensor the kernels read, by position), weight -> w (a tensor the kernels read, by position), epsilon -> eps (similar name)"
has out.txt "kernel  rms_norm_kernel<kiln_t> -> its extern \"C\" copy"
has out.txt "args    out.data_ptr<scalar_t>() -> y, input.data_ptr<scalar_t>() -> x, input_stride -> i64(input_stride), weight.data_ptr<scalar_t>() -> w, epsilon -> eps, num_tokens -> num_tokens, hidden_size -> hidden_size"
has out.txt "let input_stride = cols    (line 155: int64_t input_stride = input.stride(-2);)"
has out.txt "let num_tokens = rows * cols / hidden_size"
has out.txt "line 161: VLLM_DISPATCH_FLOATING_TYPES(...): its lambda is read as the host code, with scalar_t the run's dtype"
has out.txt "line 159: dropped 'const at::cuda::OptionalCUDAGuard device_guard(device_of(input))': a device guard"
has out.txt "line 160: dropped 'const cudaStream_t stream = at::cuda::getCurrentCUDAStream()': the framework's current stream"
has out.txt "line 150: TORCH_CHECK(input.stride(-1) == 1) holds for every buffer kiln passes"
has out.txt "type_convert.cuh:9: removed #include <torch/all.h> (a host header)"
has out.txt "line 9: inlined \"type_convert.cuh\""
has out.txt "the device code uses torch's c10::Half and c10::BFloat16"
has out.txt "the code tests CUDA_VERSION, which cuda.h (a host header) defines"
has out.txt "wrote vrms.cu; next: kiln verify vrms.cu --task rmsnorm"
lacks out.txt "--dtype f32"
has vrms.cu '"args": ["y", "x", "i64(input_stride)", "w", "eps", "num_tokens", "hidden_size"]'
has vrms.cu 'extern "C" __global__ void rms_norm_kernel_kiln_t('
has vrms.cu '__device__ _f16Vec& operator+=('
grep -q '^#include <torch/' vrms.cu && problem "vrms.cu still includes torch"
lacks vrms.cu '#include "type_convert.cuh"'
lacks vrms.cu '<<<'
static_ok vrms.cu rmsnorm
compiles vrms.cu "$SRC/tasks/rmsnorm" f32,f16,bf16 BF16
end "vLLM rms_norm: torch::Tensor, VLLM_DISPATCH_FLOATING_TYPES, an int64_t stride, its headers from --include"

# fused_add_rms_norm needs the add_rmsnorm task (issue 34); until it is here,
# a stand-in of its shape (inputs x, residual, w; outputs r, y) checks the
# import, the static stage and the compile. import_cuda_test.sh verifies it.
begin
if "$KILN" task show add_rmsnorm > /dev/null 2>&1; then
    ADD=add_rmsnorm ADDDIR=$SRC/tasks/add_rmsnorm
    note_add="the add_rmsnorm task"
else
    ADDDIR=$tmp/tasks/add_rmsnorm
    mkdir -p "$ADDDIR/base"
    cp "$SRC/tasks/rmsnorm/reference.c" "$SRC/tasks/rmsnorm/reference.cu" "$SRC/tasks/rmsnorm/hidden.json" "$ADDDIR/"
    cp "$SRC/kernels/rmsnorm/cpu/starter.c" "$SRC/kernels/rmsnorm/cuda/starter.cu" "$ADDDIR/base/"
    python3 - "$SRC/tasks/rmsnorm/task.json" "$ADDDIR/task.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["name"] = "add_rmsnorm"
t["args"] = [
    {"name": "x", "kind": "input", "dtype": "T", "shape": ["rows", "cols"], "init": {"dist": "normal", "mean": 0, "std": 1}},
    {"name": "residual", "kind": "input", "dtype": "T", "shape": ["rows", "cols"], "init": {"dist": "normal", "mean": 0, "std": 1}},
    {"name": "w", "kind": "input", "dtype": "T", "shape": ["cols"], "init": {"dist": "uniform", "low": 0.5, "high": 1.5}},
    {"name": "r", "kind": "output", "dtype": "T", "shape": ["rows", "cols"]},
    {"name": "y", "kind": "output", "dtype": "T", "shape": ["rows", "cols"]},
    {"name": "rows", "kind": "dim"}, {"name": "cols", "kind": "dim"},
    {"name": "eps", "kind": "scalar", "dtype": "f32", "value": 1e-6}]
t["baseline"] = {"cpu": "base/starter.c", "cuda": "base/starter.cu"}
json.dump(t, open(sys.argv[2], "w"), indent=1)
PY
    ADD=$ADDDIR
    note_add="a stand-in of add_rmsnorm's shape (the task is not here yet)"
fi
run import "$VL/layernorm_kernels.cu" --task "$ADD" --function fused_add_rms_norm --include "$VL/csrc" \
    --map input=x:y --map residual=residual:r --map weight=w -o vadd.cu
want_rc 0
has out.txt "parameters: input -> x, updated in place as y (--map), residual -> residual, updated in place as r (--map), weight -> w (--map), epsilon -> eps (similar name)"
has out.txt "line 211: expanded 'LAUNCH_FUSED_ADD_RMS_NORM(8)', a macro that launches (line 168)"
has out.txt "kernel  fused_add_rms_norm_kernel<kiln_t, 8> -> named for NVRTC"
has out.txt "when    ptrs_are_aligned && offsets_are_multiple_of_vecto"
has out.txt "let ptrs_are_aligned = 1"
has out.txt "launch kiln_import_copy: x into y before the kernels"
has out.txt "line 182: TORCH_CHECK(weight.scalar_type() == input.scalar_type()): a check of dtypes"
has vadd.cu '"kernel": "vllm::fused_add_rms_norm_kernel<kiln_t, 8>"'
has vadd.cu '"kernel": "vllm::fused_add_rms_norm_kernel<kiln_t, 0>", "when": "!(ptrs_are_aligned && offsets_are_multiple_of_vector_)"'
has vadd.cu '"args": ["y", "i64(input_stride)", "r", "w", "eps", "num_tokens", "hidden_size"]'
has vadd.cu '"args": ["residual", "r", "i64(rows * cols * sizeof(T))"]'
has vadd.cu 'using ::cuda::std::enable_if_t;'
has vadd.cu '// kiln import: removed #define LAUNCH_FUSED_ADD_RMS_NORM'
lacks vadd.cu '<<<'
json_ok vadd.cu
compiles vadd.cu "$ADDDIR" f32,f16,bf16 F16
out=$("$KILN" verify vadd.cu --task "$ADD" --dtype bf16 --group small --no-daemon --json 2>&1)
grep -q '"stage":[[:space:]]*"static"' <<<"$out" &&
    problem "kiln verify fails vadd.cu at the static stage: $(grep -m1 reason <<<"$out")"
end "vLLM fused_add_rms_norm, against $note_add: in place, the width dispatch as when, enable_if overloads by name"

# ---- llm.c's dev/cuda/layernorm_forward.cu, as published --------------------------------

LC=$FIX/llmc/layernorm_forward.cu
LMAP=(--map mean=scratch --map rstd=scratch --map B=rows --map T=1 --map C=cols --map block_size=BLOCK)
begin
run import "$LC" --task layernorm
want_rc 2
has err.txt "layernorm_forward.cu:298: cannot translate the file: 5 host functions launch kernels (layernorm_forward1 (line 253), layernorm_forward2 (line 262), layernorm_forward3 (line 278), layernorm_forward5 (line 288), layernorm_forward6 (line 298)); choose one with --function NAME"
run import "$LC" --task layernorm --function layernorm_forward
want_rc 2
has err.txt "layernorm_forward.cu:316: cannot translate layernorm_forward: it launches no kernel itself; it calls layernorm_forward1 (line 253), layernorm_forward2 (line 262), layernorm_forward3 (line 278), layernorm_forward5 (line 288), layernorm_forward6 (line 298), which do: choose one of them with --function"
run import "$LC" --task layernorm --function layernorm_forward3
want_rc 2
has err.txt "the parameter 'mean' has no counterpart among the task's args (x, w, b, y, rows, cols, eps): name it as the arg it is, or pass --map mean=ARG (=scratch for an output the task lacks)"
run import "$LC" --task layernorm --function layernorm_forward1 --map mean=scratch --map rstd=scratch \
    --map B=rows --map T=rows --map C=cols --map block_size=BLOCK
want_rc 2
has err.txt "layernorm_forward.cu:256: cannot translate the grid: 'rows * rows' squares the task's rows: both parameters stand for it (--map B=rows, --map T=rows)"
run import "$LC" --task layernorm --function layernorm_forward1 --map mean=rows
want_rc 2
has err.txt "--map mean=rows: 'mean' (pointer) cannot stand for the task's rows, a dim"
run import "$LC" --task layernorm --function layernorm_forward1 --map Batch=rows
want_rc 2
has err.txt "--map Batch=rows: no parameter of that name in the host function"
run import "$LC" --task layernorm --function layernorm_forward6 "${LMAP[@]}"
want_rc 2
has err.txt "layernorm_forward.cu:298: cannot translate the launches at visible shape v3 (rows=8192 cols=8192) of group prefill, dtype f32: manifest: launches[0].smem exceeds the device's limit"
has out.txt "line 308: 'cudaCheck(cudaGetDeviceProperties(&prop, device))' is a runtime query"
end "llm.c: --function among five launchers, the dispatcher's callees named, nonsense maps refused"

for v in 1 2 3 5; do
    begin
    run import "$LC" --task layernorm --function layernorm_forward$v "${LMAP[@]}" -o llm$v.cu
    want_rc 0
    has out.txt "mean -> scratch mean (--map), rstd -> scratch rstd (--map), inp -> x (const pointer, by position), weight -> w (const pointer, by position), bias -> b (const pointer, by position), B -> rows (--map), T -> 1 (--map), C -> cols (--map), block_size -> knob BLOCK (--map)"
    has out.txt "let N = rows * 1"
    has out.txt "scratch mean: rows * cols * sizeof(f32) bytes"
    has out.txt "common.h:50: removed host function cuda_check"
    has out.txt "common.h:16: removed host variable deviceProp"
    has out.txt "common.h:11: removed #include <cublas_v2.h> (a host header)"
    has out.txt "wrote llm$v.cu; next: kiln verify llm$v.cu --task layernorm --dtype f32"
    has llm$v.cu "#define BLOCK 256 //@kiln tune 32 64 128 256 512 1024"
    has llm$v.cu '"scratch": [{"name": "mean", "bytes": "rows * cols * sizeof(f32)", "init": "none"}, {"name": "rstd", "bytes": "rows * cols * sizeof(f32)", "init": "none"}]'
    has llm$v.cu '__device__ float warpReduceSum(float val)'
    lacks llm$v.cu 'cublasHandle_t cublas_handle;'
    case $v in
    1) has llm$v.cu '"grid": ["grid_size"], "block": ["BLOCK"]'
       has out.txt "let grid_size = (N + BLOCK - 1) / BLOCK"
       has llm$v.cu '"args": ["y", "mean", "rstd", "x", "w", "b", "N", "cols"]' ;;
    2) has llm$v.cu '"kernel": "mean_kernel", "grid": ["rows * 1"], "block": ["BLOCK"], "smem": "BLOCK * sizeof(f32)"'
       has llm$v.cu '"args": ["mean", "x", "N", "cols", "BLOCK"]'
       has llm$v.cu '"args": ["y", "x", "mean", "rstd", "w", "b", "rows", "1", "cols"]' ;;
    3) has out.txt "line 281: assert(block_size % 32 == 0) holds at every value of the knobs it names"
       has out.txt "let grid_size = (N * 32 + BLOCK - 1) / BLOCK" ;;
    5) has llm$v.cu '"grid": ["grid_size"], "block": ["BLOCK"]' ;;
    esac
    static_ok llm$v.cu layernorm
    compiles llm$v.cu "$SRC/tasks/layernorm" f32 F32
    end "llm.c layernorm_forward$v: mean and rstd to scratch, B*T to rows, block_size a knob"
done

begin
run import "$LC" --task layernorm --function layernorm_forward3 --map mean=scratch:rows*4 \
    --map rstd=scratch:rows*4 --map B=rows --map T=1 --map C=cols --map block_size=BLOCK:16,32,64
want_rc 2
has err.txt "layernorm_forward.cu:281: cannot translate the check assert(block_size % 32 == 0): it fails at BLOCK = 16"
run import "$LC" --task layernorm --function layernorm_forward3 --map mean=scratch:rows*4 \
    --map rstd=scratch:rows*4 --map B=rows --map T=1 --map C=cols --map block_size=BLOCK:64,32,128 -o llm3s.cu
want_rc 0
has llm3s.cu "#define BLOCK 64 //@kiln tune 32 64 128"
has llm3s.cu '{"name": "mean", "bytes": "rows*4", "init": "none"}'
static_ok llm3s.cu layernorm
end "a knob's values and scratch sizes given; a knob value the host's assert rules out is refused"

[ "$rtc_skipped" -eq 0 ] || skip "kiln's NVRTC compiles (built without the CUDA toolkit)"
[ "$nvcc_skipped" -eq 0 ] || skip "nvcc compiles (no nvcc here)"
[ "$nvrtc_skipped" -eq 0 ] || skip "NVRTC compiles (no libnvrtc here)"
t_done
