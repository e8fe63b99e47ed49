#!/usr/bin/env bash
# export_gemm_test.sh - `kiln export --backend cuda` for gemm, no GPU needed:
# a workspace as a CUDA search of gemm leaves it, with two kept candidates
# whose record verdicts (against cuBLAS) make each win some shapes of the
# small CUDA group (gemm's former prefill):
#   A  kernels/gemm/cuda/starter.cu (WMMA; <mma.h>, a template, `using
#      namespace nvcuda` at file scope: all must survive the namespace the
#      export wraps each variant in)
#   B  tests/redteam/cuda/gemm_honest_splitk_scratch.cu (two launches, a
#      scratch buffer of SPLIT * M * N * 4 bytes)
# Checks the files and decisions.json, then - where nvcc is installed -
# compiles the header warning-free with a host program that checks
# kiln_gemm_bf16_scratch_bytes and a refused launch, which touch no GPU.
# The first use orders the kernels: k1 is B (it wins v1), k2 is A.
#
# usage: export_gemm_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
cd "$tmp" || exit 2
if ! command -v sqlite3 >/dev/null && ! command -v python3 >/dev/null; then
    skip_all "neither sqlite3 nor python3: the fixture database cannot be written"
fi

# M N K speedup-A speedup-B against cuBLAS ("-": not measured)
SHAPES=("128 4096 4096 0.10 0.30" "256 2048 2048 0.12 0.25" "512 1024 4096 0.09 0.20"
        "1024 4096 1024 0.21 0.15" "200 3000 1000 0.26 0.22" "2048 2048 2048 0.17 -")
verdict() {   # verdict COLUMN(4|5) SHA
    local col=$1 sha=$2 first=1 s
    printf '{"status":"pass","stage":"plausibility","code":"ok","task":"gemm","backend":"cuda",'
    printf '"dtype":"bf16","group":"prefill","shapes":['
    for s in "${SHAPES[@]}"; do
        set -- $s
        local sp=${!col}
        [ "$sp" = - ] && continue
        local cand
        cand=$(awk -v s="$sp" 'BEGIN { printf "%.1f", 10000 / s }')
        [ $first = 1 ] || printf ','
        first=0
        printf '{"id":"v","visible":true,"dims":{"M":%s,"N":%s,"K":%s},"dtype":"bf16",' "$1" "$2" "$3"
        printf '"time":{"candidate":{"median_ns":%s,"p20_ns":%s,"p80_ns":%s,"count":20},' "$cand" "$cand" "$cand"
        printf '"baseline":{"median_ns":10000,"p20_ns":10000,"p80_ns":10000,"count":20}},'
        printf '"speedup":%s,"roofline_fraction":0.1}' "$sp"
    done
    printf '],"summary":{"geomean_speedup":0.2},"flags":[],'
    printf '"environment":{"cpu":"fixture","host":"fixture","kernel":"6.0",'
    printf '"gpu":{"name":"NVIDIA H200","cc":"9.0","sms":132,"driver":13000,"cublas":130100}},'
    printf '"source_sha256":"%s","verifier_version":"fixture"}' "$sha"
}
make_ws() {
    local ws=$1 run=20260102-000000-cuda i=0 v
    mkdir -p "$ws/.kiln" "$ws/gemm/cuda" || return 1
    git init -q -b "kiln/gemm/$run" "$ws" 2>/dev/null || git init -q "$ws" || return 1
    cp "$SRC/kernels/gemm/cuda/starter.cu" "$ws/.kiln/a.cu"
    cp "$SRC/tests/redteam/cuda/gemm_honest_splitk_scratch.cu" "$ws/.kiln/b.cu"
    {
        echo "CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT,"
        echo " grp TEXT, agent TEXT, model TEXT, seed INTEGER, branch TEXT, start_commit TEXT,"
        echo " head_commit TEXT, status TEXT, iterations_done INTEGER, budget_iterations INTEGER,"
        echo " drafts INTEGER, budget_seconds REAL, seconds_used REAL, budget_tokens INTEGER,"
        echo " tokens_used INTEGER, best_speedup REAL, started_at REAL, updated_at REAL,"
        echo " base_url TEXT, from_path TEXT);"
        echo "CREATE TABLE candidates (run TEXT NOT NULL, n INTEGER NOT NULL, iteration INTEGER,"
        echo " draft INTEGER, parent TEXT, commit_id TEXT, proposer TEXT, state TEXT, hypothesis TEXT,"
        echo " job TEXT, confirm_job TEXT, record_job TEXT, status TEXT, stage TEXT, code TEXT,"
        echo " reason TEXT, decision TEXT, speedup REAL, confirm_speedup REAL,"
        echo " speedup_vs_baseline REAL, roofline REAL, verdict TEXT, confirm_verdict TEXT,"
        echo " record_verdict TEXT, source TEXT, updated_at REAL, PRIMARY KEY (run, n));"
        echo "INSERT INTO runs (id, task, backend, dtype, grp, agent, branch, status, started_at,"
        echo " updated_at) VALUES ('$run', 'gemm', 'cuda', 'bf16', 'prefill', 'offline',"
        echo " 'kiln/gemm/$run', 'done', 1767312000, 1767315600);"
    } > "$ws/.kiln/fixture.sql"
    for v in a b; do
        i=$((i + 1))
        local f=$ws/.kiln/$v.cu commit sha
        cp "$f" "$ws/gemm/cuda/kernel.cu"
        # fixed dates: the same commits, so the same export, every time (nvcc_memo.sh)
        git -C "$ws" add gemm/cuda/kernel.cu &&
            GIT_AUTHOR_DATE="@1767225600 +0000" GIT_COMMITTER_DATE="@1767225600 +0000" \
                git -C "$ws" -c user.name=kiln -c user.email=kiln@localhost commit -q -m "gemm $v" ||
            return 1
        commit=$(git -C "$ws" rev-parse HEAD)
        sha=$(sha256sum "$f" | cut -d' ' -f1)
        {
            echo "INSERT INTO candidates (run, n, iteration, commit_id, proposer, state, hypothesis,"
            echo " record_job, status, decision, speedup_vs_baseline, record_verdict, source,"
            echo " updated_at) VALUES ('$run', $i, $i, '$commit', 'offline', 'done', 'gemm $v',"
            echo " 'job-$i', 'pass', 'keep', 0.2, '$(verdict $((i + 3)) "$sha")',"
            echo " '$(sed "s/'/''/g" "$f")' || char(10), $((1767312000 + i * 60)));"
        } >> "$ws/.kiln/fixture.sql"
    done
    if command -v sqlite3 >/dev/null; then
        sqlite3 "$ws/.kiln/kiln.db" < "$ws/.kiln/fixture.sql"
    else
        python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read()); c.commit()' \
            "$ws/.kiln/kiln.db" "$ws/.kiln/fixture.sql"
    fi
}
command -v git >/dev/null || skip_all "no git: the fixture workspace cannot be made"

make_ws ws || problem "could not build the fixture workspace"
export SOURCE_DATE_EPOCH=1767225600   # the same export, so the same nvcc inputs, in both suites
"$KILN" export --task gemm --backend cuda --dtype bf16 --workspace ws -o out >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || problem "exit status $rc: $(head -c 400 err.txt)"
for f in kiln_gemm_bf16.cuh kiln_gemm_bf16_k1.cu kiln_gemm_bf16_k2.cu kiln_cuda.h decisions.json; do
    [ -s "out/$f" ] || problem "no $f"
done
grep -q 'kiln_gemm_bf16_k1_gemm_reduce' out/kiln_gemm_bf16_k1.cu ||
    problem "k1 is not the split-K candidate (its reduce kernel renamed)"
grep -q 'kiln_gemm_bf16_k2_gemm_bf16' out/kiln_gemm_bf16_k2.cu ||
    problem "k2 is not the WMMA starter (its kernel renamed)"
grep -A3 'M=1024 N=4096 K=1024' out.txt | head -1 | grep -q 'kiln_gemm_bf16_k2, 0.21x' ||
    problem "1024x4096x1024 does not go to the starter (0.21x): $(grep 'M=1024' out.txt)"
grep -q 'M=128 N=4096 K=4096 *-> kiln_gemm_bf16_k1, 0.30x' out.txt ||
    problem "128x4096x4096 does not go to split-K (0.30x): $(grep 'M=128 ' out.txt)"
if command -v python3 >/dev/null; then
    python3 - out/decisions.json >dec.txt 2>&1 <<'PY' || problem "decisions.json: $(head -c 400 dec.txt)"
import json, sys
d = json.load(open(sys.argv[1]))
text = json.dumps(d)
assert "M" in text and "4096" in text, "no gemm dims"
assert text.count("kiln_gemm_bf16_k") >= 2, "fewer than two kernels named"
PY
fi
end "export of gemm: the WMMA starter and the split-K kernel, header and decisions.json"

cat > main.cu <<'EOF'
// Host checks of the exported gemm dispatch that need no GPU.
#include "kiln_gemm_bf16.cuh"
#include <stdio.h>
int main(void)
{
    int bad = 0;
    /* The most any variant needs: the split-K kernel's SPLIT (4) * M * N
     * floats, rounded up to 256 bytes, whichever kernel the dims pick. */
    static const int dims[][3] = {{128, 4096, 4096}, {1024, 4096, 1024}, {3, 5, 7}};
    for (int i = 0; i < 3; i++) {
        size_t want = ((size_t)4 * dims[i][0] * dims[i][1] * 4 + 255) / 256 * 256;
        size_t got = kiln_gemm_bf16_scratch_bytes(dims[i][0], dims[i][1], dims[i][2]);
        if (got != want) {
            printf("scratch at %dx%dx%d: %zu, want %zu\n", dims[i][0], dims[i][1], dims[i][2],
                   got, want);
            bad = 1;
        }
    }
    /* the split-K shape without its scratch: refused before any CUDA call */
    cudaError_t e = kiln_gemm_bf16(NULL, NULL, NULL, 128, 4096, 4096, NULL, 0);
    if (e != cudaErrorInvalidValue) {
        printf("no scratch: %s, want cudaErrorInvalidValue\n", cudaGetErrorName(e));
        bad = 1;
    }
    return bad;
}
EOF
if find_nvcc; then
    if nvcc_memo -std=c++17 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Werror -Iout -o host main.cu \
        >nvcc.txt 2>&1; then
        ./host >host.txt 2>&1 || problem "the host checks failed: $(head -c 400 host.txt)"
    else
        problem "the header does not compile: $(head -c 800 nvcc.txt)"
    fi
    end "the gemm header compiles with nvcc -arch=sm_90a, warning-free; scratch sizes and refusal"
else
    skip "nvcc not found: the gemm header was not compiled"
fi
t_done
