#!/usr/bin/env bash
# export_cuda_test.sh - `kiln export --backend cuda` on a fixture workspace
# (export_cuda/fixture.sh: three kept CUDA candidates of rmsnorm bf16 that
# each win some shapes), no GPU needed: the files, the renamed kernels, the
# choices in the generated header and decisions.json, refusals, and - where
# nvcc is installed - the header compiled with -Wall -Wextra -Werror in a
# host program (plus a second file that only declares) that runs the
# scratch and argument checks, which touch no GPU.
#
# usage: export_cuda_test.sh KILN SOURCE_DIR
# Prints "ok - NAME" / "not ok - NAME" / "skip - NAME" lines; exits 1 if any
# check failed, 2 on bad usage.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 KILN SOURCE_DIR" >&2
    exit 2
fi
KILN=$(readlink -f -- "$1")
SRC=$(readlink -f -- "$2")
[ -x "$KILN" ] || { echo "$0: $KILN is not an executable" >&2; exit 2; }
. "$SRC/tests/integration/export_cuda/fixture.sh" || exit 2

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
B=kiln_rmsnorm_bf16
npass=0 nfail=0 nskip=0
probs=()
begin() { probs=(); }
problem() { probs+=("$*"); }
finish() {
    if [ ${#probs[@]} -eq 0 ]; then
        echo "ok - $1"
        npass=$((npass + 1))
    else
        echo "not ok - $1"
        printf '#   %s\n' "${probs[@]}"
        nfail=$((nfail + 1))
    fi
}
run() {
    "$KILN" "$@" > out.txt 2> err.txt < /dev/null
    rc=$?
}
has() { grep -qF -e "$2" "$1" || problem "$1 lacks '$2'"; }

begin
make_fixture ws "$SRC" || problem "could not build the fixture workspace"
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws -o out
[ "$rc" -eq 0 ] || problem "exit status $rc: $(head -c 400 err.txt)"
for f in $B.cuh ${B}_k1.cu ${B}_k2.cu ${B}_k3.cu kiln_cuda.h decisions.json; do
    [ -s "out/$f" ] || problem "no $f"
done
[ "$(ls out | wc -l)" -eq 6 ] || problem "files other than the expected six: $(ls out | tr '\n' ' ')"
cmp -s out/kiln_cuda.h "$SRC/worker/cuda/kiln_cuda.h" || problem "kiln_cuda.h is not kiln's"
finish "export --backend cuda writes the kernels, the header, kiln_cuda.h and decisions.json"

# Each exported .cu: a note, then the source with the kernels renamed.
body() { sed '1,/includes this file inside namespace/d' "$1"; }
begin
body out/${B}_k1.cu | sed "s/${B}_k1_//g" | cmp -s - ws/.kiln/a.cu ||
    problem "k1 is more than starter.cu with its kernel renamed"
body out/${B}_k2.cu | sed "s/${B}_k2_//g" | cmp -s - ws/.kiln/b.cu ||
    problem "k2 is more than the BLOCK 1024 copy with its kernel renamed"
body out/${B}_k3.cu | sed "s/${B}_k3_//g" | cmp -s - ws/.kiln/c.cu ||
    problem "k3 is more than two_launch.cu with its kernels renamed"
has out/${B}_k1.cu "rmsnorm_fwd -> ${B}_k1_rmsnorm_fwd"
has out/${B}_k1.cu "${B}_k1_rmsnorm_fwd(const kiln_t *x"
has out/${B}_k1.cu "\"kernel\": \"${B}_k1_rmsnorm_fwd\""
has out/${B}_k3.cu "\"kernel\":\"${B}_k3_scale\""
has out/${B}_k3.cu "Not a kernel named scale in a comment"   # comments stay
has out/${B}_k3.cu "const float scaled = "                  # tokens, not text
body out/${B}_k1.cu | grep -qw rmsnorm_fwd && problem "k1 still uses the name rmsnorm_fwd"
finish "kernels are renamed kiln_rmsnorm_bf16_kN_NAME in code and manifest, nothing else"

begin
H=out/$B.cuh
has $H "cudaError_t $B(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps, void *scratch, cudaStream_t stream)"
has $H "size_t ${B}_scratch_bytes(int rows, int cols);"
has $H "nvcc -std=c++17"
grep -A1 -F 'if (rows == 32 && cols == 1024)' $H | grep -qF "return ${B}_k1_run(" || problem "rows=32 cols=1024 does not go to k1"
grep -A1 -F 'if (rows == 64 && cols == 4096)' $H | grep -qF "return ${B}_k2_run(" || problem "rows=64 cols=4096 does not go to k2"
grep -A1 -F 'if (rows == 256 && cols == 4096)' $H | grep -qF "return ${B}_k3_run(" || problem "rows=256 cols=4096 does not go to k3"
grep -A1 -F 'if (rows == 16384 && cols == 16384)' $H | grep -qF "return ${B}_k3_run(" || problem "rows=16384 cols=16384 does not go to k3"
grep -qF 'if (rows == 1 && cols == 2048)' $H && problem "the unmeasured shape has a branch"
# the CUDA groups only: rows=4 cols=16384, a CPU decode shape, was measured (C wins) but is no CUDA shape
grep -qF 'rows == 4 && cols == 16384' $H && problem "a CPU group's shape has a branch"
has $H "return ${B}_k2_run(x, w, y, rows, cols, eps, scratch, stream); /* the best geomean"
has $H "namespace ${B}_k3 {"
awk '/#include <cooperative_groups.h>/ { inc = NR } /^namespace kiln_rmsnorm_bf16_k3 \{/ { ns = NR }
     END { exit !(inc && ns && inc < ns) }' $H || problem "cooperative_groups.h is not included before k3's namespace"
has $H "#undef CHUNK"
has $H "cudaMemsetAsync(kiln_s0, 0, (size_t)kiln_size[0], stream)"
has $H "kiln_at[0].id = cudaLaunchAttributeClusterDimension;"
has $H "const int64_t kiln_c[3] = {2, 1, 1};"
has $H "const int64_t kiln_smem = kiln_x_mul(cols, 4, &kiln_bad);"
has $H "cudaFuncAttributeMaxDynamicSharedMemorySize"
has $H "const int64_t kiln_g[3] = {kiln_x_mul(2, kiln_x_cdiv(cols, kiln_x_mul(2, 2048, &kiln_bad), &kiln_bad), &kiln_bad), rows, 1};"
has $H "const int64_t kiln_b[3] = {1024, 1, 1};"
finish "the header dispatches by dims and launches as each manifest says"

begin
D=out/decisions.json
if command -v jq > /dev/null; then
    q() { jq -r "$1" $D 2>/dev/null; }
    [ "$(q .backend)" = cuda ] || problem "backend is $(q .backend)"
    [ "$(q .fallback.kernel)" = ${B}_k2 ] || problem "fallback is $(q .fallback.kernel)"
    [ "$(q '.shapes[] | select(.dims.rows == 1 and .dims.cols == 2048) | .kernel')" = ${B}_k2 ] ||
        problem "rows=1 cols=2048 is not the fallback's"
    q '.shapes[] | select(.dims.rows == 1 and .dims.cols == 2048) | .reason' | grep -q fallback ||
        problem "rows=1 cols=2048 does not say it is the fallback"
    [ "$(q '.shapes[] | select(.dims.rows == 256 and .dims.cols == 4096) | .alternatives | length')" = 2 ] ||
        problem "rows=256 cols=4096 lacks its two alternatives"
    # every visible shape of rmsnorm's cuda_groups (6 + 6 + 5 + 3), no CPU group's
    [ "$(q '.shapes | length')" = 20 ] || problem "$(q '.shapes | length') shapes, not the 20 of the CUDA groups"
    [ -z "$(q '.shapes[] | select(.dims.rows == 4 and .dims.cols == 16384) | .kernel')" ] ||
        problem "rows=4 cols=16384 (a CPU group's shape) is listed"
    [ "$(q '.shapes[0].chosen.environment.gpu.name')" = "NVIDIA H200" ] || problem "no GPU name"
    [ "$(q '.shapes[0].chosen.environment.gpu.driver')" = 13000 ] || problem "no driver"
    [ "$(q '.kernels[] | select(.name == "'${B}_k3'") | .kernels[1].exported')" = ${B}_k3_scale ] ||
        problem "k3's kernels are not listed as exported"
    [ "$(q '.kernels[] | select(.name == "'${B}_k3'") | .knobs.CHUNK')" = 2048 ] || problem "k3's knobs are missing"
    [ "$(q '.kernels[] | select(.name == "'${B}_k1'") | .file')" = ${B}_k1.cu ] || problem "k1's file"
    q .signature | grep -qF "cudaError_t $B(" || problem "signature: $(q .signature)"
else
    has $D '"backend":	"cuda"'
    has $D '"NVIDIA H200"'
    has $D "\"exported\":	\"${B}_k3_scale\""
fi
finish "decisions.json records every choice, the GPU and driver, the exported names"

begin
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws -o out
[ "$rc" -eq 2 ] || problem "a second export into out: exit status $rc, expected 2"
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws -o out --force
[ "$rc" -eq 0 ] || problem "--force: exit status $rc"
run export --task rmsnorm --backend cuda --dtype f16 --workspace ws -o out2
[ "$rc" -eq 1 ] && grep -q "no kept kernel" err.txt || problem "f16 (no kept kernel): exit status $rc"
run export --task rmsnorm --backend cuda --dtype f64 --workspace ws -o out2
[ "$rc" -eq 2 ] || problem "dtype f64: exit status $rc"
run export --task rmsnorm --backend metal --workspace ws -o out2
[ "$rc" -eq 2 ] && grep -q "unknown backend" err.txt || problem "backend metal: exit status $rc"
run export --task rmsnorm --workspace ws -o out2
[ "$rc" -eq 1 ] || problem "the cpu backend found CUDA kernels: exit status $rc"
finish "export refuses a non-empty DIR, missing kernels, unknown dtypes and backends"

begin
sed 's/"smem": "cols \* sizeof(f32)"/"smem": "cols * 4.0"/' "$SRC/tests/integration/export_cuda/two_launch.cu" > float.cu
grep -q '"cols \* 4.0"' float.cu || problem "could not plant the float literal"
make_fixture ws2 "$SRC" "$tmp/float.cu" || problem "could not build the second fixture"
cp out/$B.cuh before.cuh
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws2 -o out --force
[ "$rc" -eq 2 ] || problem "a float literal in a manifest: exit status $rc, expected 2"
grep -q "${B}_k3 (run .*, candidate 3): manifest launches\[1\].smem: a float literal" err.txt ||
    problem "the message does not say where: $(head -c 300 err.txt)"
cmp -s before.cuh out/$B.cuh || problem "the failed export changed out/"
finish "an expression that has no C translation fails the export and leaves DIR alone"

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cat > main.cu <<'EOF'
// Host checks of the exported dispatch that need no GPU.
#include "kiln_rmsnorm_bf16.cuh"
#include <stdio.h>
size_t declared_only(int rows, int cols);
int main(void)
{
    int bad = 0;
    /* k3 needs max(rows, 1) * 4 bytes, rounded up to 256; k1 and k2 none */
    static const int dims[][3] = {{64, 4096, 256}, {300, 10, 1280}, {1, 1, 256}, {64, 4096, 256}};
    for (int i = 0; i < 4; i++) {
        size_t n = i < 3 ? kiln_rmsnorm_bf16_scratch_bytes(dims[i][0], dims[i][1])
                         : declared_only(dims[i][0], dims[i][1]);
        if (n != (size_t)dims[i][2]) {
            printf("scratch at %d x %d: %zu, want %d\n", dims[i][0], dims[i][1], n, dims[i][2]);
            bad = 1;
        }
    }
    /* rows=256 cols=4096 goes to k3, whose scratch is missing: refused before any CUDA call */
    cudaError_t e = kiln_rmsnorm_bf16(NULL, NULL, NULL, 256, 4096, 1e-6f, NULL, 0);
    if (e != cudaErrorInvalidValue) {
        printf("no scratch: %s, want cudaErrorInvalidValue\n", cudaGetErrorName(e));
        bad = 1;
    }
    /* a grid of 0 rows cannot be launched */
    e = kiln_rmsnorm_bf16(NULL, NULL, NULL, 0, 4096, 1e-6f, NULL, 0);
    if (e != cudaErrorInvalidValue) {
        printf("0 rows: %s, want cudaErrorInvalidValue\n", cudaGetErrorName(e));
        bad = 1;
    }
    return bad;
}
EOF
cat > declare.cu <<'EOF'
// Another translation unit: the prototypes alone.
#define KILN_RMSNORM_BF16_DECLARE_ONLY
#include "kiln_rmsnorm_bf16.cuh"
size_t declared_only(int rows, int cols) { return kiln_rmsnorm_bf16_scratch_bytes(rows, cols); }
EOF
if [ -x "$NVCC" ]; then
    begin
    if "$NVCC" -std=c++17 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Werror -Iout -o host main.cu declare.cu > nvcc.txt 2>&1; then
        ./host > host.txt 2>&1 || problem "the host checks failed: $(head -c 400 host.txt)"
    else
        problem "the header does not compile: $(head -c 800 nvcc.txt)"
    fi
    finish "the header compiles with nvcc -arch=sm_90a, warning-free, in one unit plus a declaring one"
else
    echo "skip - nvcc not found (looked on PATH and at /usr/local/cuda/bin/nvcc): the header was not compiled"
    nskip=$((nskip + 1))
fi

# Preconditions: B (the best geomean) requires cols % 8 == 0, so other dims
# try it only where that holds and fall back to C, which requires nothing;
# with all three requiring it, the task's baseline (starter.cu) is the fallback.
require_in() {   # require_in WS N...: candidate N's manifest gets "require"
    local ws=$1 n sql=""
    shift
    for n in "$@"; do
        sql="$sql UPDATE candidates SET source = replace(source, '\"scratch\": []}',"
        sql="$sql '\"scratch\": [], \"require\": [\"cols % 8 == 0\"]}') WHERE n = $n;"
        sql="$sql UPDATE candidates SET source = replace(source, '\"scratch\": [{',"
        sql="$sql '\"require\": [\"cols % 8 == 0\"], \"scratch\": [{') WHERE n = $n;"
    done
    if command -v sqlite3 > /dev/null; then
        sqlite3 "$ws/.kiln/kiln.db" "$sql"
    else
        python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$ws/.kiln/kiln.db" "$sql"
    fi
}
begin
make_fixture ws3 "$SRC" && require_in ws3 2 || problem "could not build the precondition fixture"
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws3 -o pre
[ "$rc" -eq 0 ] || problem "exit status $rc: $(head -c 400 err.txt)"
H=pre/$B.cuh
grep -A1 -F "if (cols % 8 == 0) /* ${B}_k2's preconditions" $H | grep -qF "return ${B}_k2_run(" ||
    problem "other dims do not try k2 where cols % 8 == 0"
has $H "return ${B}_k3_run(x, w, y, rows, cols, eps, scratch, stream); /* requires nothing"
grep -A1 -F 'if (rows == 64 && cols == 4096)' $H | grep -qF "return ${B}_k2_run(" ||
    problem "k2 no longer wins rows=64 cols=4096, where it was measured"
has pre/decisions.json '"requires":'
has pre/decisions.json '"cols % 8 == 0"'
has pre/decisions.json '"guarded":'
has out.txt "other dims, cols % 8 == 0 -> ${B}_k2"
finish "a kernel with preconditions: other dims try it where they hold, else the best that requires nothing"

begin
make_fixture ws4 "$SRC" && require_in ws4 1 2 3 || problem "could not build the all-require fixture"
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws4 -o base
[ "$rc" -eq 0 ] || problem "exit status $rc: $(head -c 400 err.txt)"
fb=$(grep -o "return ${B}_k[0-9]_run([^;]*; /\* requires nothing" base/$B.cuh | grep -o "${B}_k[0-9]")
[ -n "$fb" ] || problem "no fallback that requires nothing"
body base/$fb.cu | sed "s/${fb}_//g" | cmp -s - "$SRC/kernels/rmsnorm/cuda/starter.cu" ||
    problem "the fallback $fb is not the task's baseline"
has base/decisions.json "the task's baseline: every kept kernel has preconditions"
finish "every kept kernel requires something: the task's baseline is the fallback"

if [ -x "$NVCC" ]; then
    begin
    cat > pre.cu <<'EOF'
// The guarded dispatch: odd cols skip k2 for k3, whose scratch is missing.
#include "kiln_rmsnorm_bf16.cuh"
#include <stdio.h>
int main(void)
{
    cudaError_t e = kiln_rmsnorm_bf16(NULL, NULL, NULL, 300, 1001, 1e-6f, NULL, 0);
    if (e != cudaErrorInvalidValue) {
        printf("cols 1001: %s, want cudaErrorInvalidValue from the fallback\n", cudaGetErrorName(e));
        return 1;
    }
    return 0;
}
EOF
    for d in pre base; do
        "$NVCC" -std=c++17 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Werror -I$d -o host_$d pre.cu \
            > nvcc_$d.txt 2>&1 || problem "the $d header does not compile: $(head -c 600 nvcc_$d.txt)"
    done
    [ -x host_pre ] && { ./host_pre > pre.txt 2>&1 || problem "$(head -c 300 pre.txt)"; }
    finish "the headers with preconditions compile warning-free; odd cols go to the fallback"
else
    echo "skip - nvcc not found: the headers with preconditions were not compiled"
    nskip=$((nskip + 1))
fi

# A ported kernel (issue 16): a template named by its instances, the host's
# width choice as two launches with "when". The export renames the
# template, guards each launch with its when, and the header compiles.
begin
make_fixture ws5 "$SRC" "$SRC/tests/integration/porting/rmsnorm_template.cu" ||
    problem "could not build the template fixture"
run export --task rmsnorm --backend cuda --dtype bf16 --workspace ws5 -o out5
[ "$rc" -eq 0 ] || problem "export of the template kernel: exit $rc: $(head -c 300 err.txt)"
grep -q "${B}_k3::${B}_k3_rms_norm_kernel<kiln_t, 8>" out5/$B.cuh &&
    grep -q "${B}_k3::${B}_k3_rms_norm_kernel<kiln_t, 1>" out5/$B.cuh ||
    problem "the template's instances are not launched under their new name"
[ "$(grep -c 'kiln_x_mod(cols, 8, &kiln_bad)' out5/$B.cuh)" -ge 2 ] ||
    problem "the launches are not guarded by their when"
finish "a template kernel with a host width choice (when) exports: instances renamed, launches guarded"
if [ -x "$NVCC" ]; then
    begin
    printf '#include "%s.cuh"\nint main(void) { return 0; }\n' "$B" > tmain.cu
    "$NVCC" -std=c++17 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Werror -Iout5 -o tmain tmain.cu \
        > nvcc_t.txt 2>&1 || problem "the header does not compile: $(head -c 600 nvcc_t.txt)"
    finish "the template kernel's header compiles with nvcc, warning-free"
else
    echo "skip - nvcc not found: the template kernel's header was not compiled"
    nskip=$((nskip + 1))
fi

echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
