#!/usr/bin/env bash
# import_cuda_test.sh - on a GPU (ctest label gpu; exits 77, saying why,
# without one): what `kiln import` makes of real-shaped files passes
# `kiln verify` unedited (issue 39).
#   main: vLLM's layernorm_kernels.cu rms_norm (torch::Tensor, its dispatch
#         and headers) on rmsnorm for bf16, f16 and f32; llm.c's
#         layernorm_forward.cu versions 1 and 3 (mean and rstd to scratch,
#         block_size a knob) on layernorm for f32 (version 5's variance,
#         E[x^2] - E[x]^2, may fall outside the offset variant's budget,
#         which is kiln's finding, not import's; import_test.sh imports and
#         compiles it), and version 2, whose
#         normalization_kernel writes past the output where B*T*C is no
#         multiple of 256 (33x1000 is not), fails there (guard-corrupted).
#   add_rmsnorm: vLLM's fused_add_rms_norm, in place (--map input=x:y
#         --map residual=residual:r), on the add_rmsnorm task (issue 34;
#         exits 77 saying so while the task is not here).
#   import_cuda_test.sh BUILD_DIR SOURCE_DIR main|add_rmsnorm
. "$(dirname "$0")/lib.sh"
t_init -a 'main|add_rmsnorm' "$@"
set -o pipefail
MODE=${T_ARGS[0]}
case $MODE in
main | add_rmsnorm) ;;
*) echo "usage: $0 BUILD_DIR SOURCE_DIR main|add_rmsnorm" >&2; exit 2 ;;
esac
need_gpu cuda "this test verifies imported candidates on one"
if [ "$MODE" = add_rmsnorm ] && ! "$KILN" task show add_rmsnorm > /dev/null 2>&1; then
    skip_all "no add_rmsnorm task yet (issue 34 adds it, on branch wip-34); this test verifies vLLM's fused_add_rms_norm on it once it lands"
fi
cd "$tmp" || exit 2
FIX=$SRC/tests/integration/import

import() {   # import OUT ARGS...: kiln import, which must write OUT (else the test stops)
    local out=$1
    shift
    "$KILN" import "$@" -o "$out" > "$out.import" 2>&1 ||
        { begin "kiln import writes $out"; fail "kiln import $*: $(tail -5 "$out.import")"; }
}

verify() {   # verify FILE TASK DTYPE [GROUP]: the verdict in FILE.DTYPE.json, its exit status in rc
    local g=()
    [ -n "${4:-}" ] && g=(--group "$4")
    "$KILN" verify "$1" --task "$2" --backend cuda --dtype "$3" "${g[@]}" --timing-ms 400 \
        --no-daemon --json > "$1.$3.json" 2> "$1.$3.err"
    rc=$?
}

passes() {   # passes FILE TASK DTYPE [GROUP]: a check
    begin "$1 passes on $2 ($3)"
    verify "$@"
    [ $rc = 0 ] && [ "$(json_get status "$1.$3.json" 2>/dev/null)" = pass ] ||
        fail "$1 on $2 ($3): exit $rc, status $(json_get status "$1.$3.json" 2>/dev/null): $(json_get reason "$1.$3.json" 2>/dev/null) $(head -c 400 "$1.$3.err")"
    echo "# $(json_get reason "$1.$3.json" 2>/dev/null)"
    end
}

VL=$FIX/vllm
if [ "$MODE" = main ]; then
    import vrms.cu "$VL/layernorm_kernels.cu" --task rmsnorm --function rms_norm --include "$VL/csrc"
    for d in bf16 f16 f32; do
        passes vrms.cu rmsnorm $d small
    done
    LMAP=(--map mean=scratch --map rstd=scratch --map B=rows --map T=1 --map C=cols
          --map block_size=BLOCK)
    for v in 1 3; do
        import llm$v.cu "$FIX/llmc/layernorm_forward.cu" --task layernorm \
            --function layernorm_forward$v "${LMAP[@]}"
        passes llm$v.cu layernorm f32 small
    done
    begin "llm2.cu fails on layernorm (guard-corrupted: it writes past its output at 33x1000)"
    import llm2.cu "$FIX/llmc/layernorm_forward.cu" --task layernorm --function layernorm_forward2 \
        "${LMAP[@]}"
    verify llm2.cu layernorm f32 small
    [ "$(json_get status llm2.cu.f32.json 2>/dev/null)" = fail ] && grep -q guard-corrupted llm2.cu.f32.json ||
        fail "llm.c's version 2 writes past its output at 33x1000, and kiln did not say so: exit $rc, $(json_get status llm2.cu.f32.json 2>/dev/null): $(json_get reason llm2.cu.f32.json 2>/dev/null)"
    echo "# $(json_get reason llm2.cu.f32.json 2>/dev/null)"
    end
else
    import vadd.cu "$VL/layernorm_kernels.cu" --task add_rmsnorm --function fused_add_rms_norm \
        --include "$VL/csrc" --map input=x:y --map residual=residual:r --map weight=w
    grp=$("$KILN" task show add_rmsnorm | grep -q '^group decode' && echo decode)
    for d in bf16 f16 f32; do
        passes vadd.cu add_rmsnorm $d "$grp"
    done
fi
t_done
