# pipeline_common.sh - what the pipelining tests share (sourced by
# pipeline_model_test.sh and pipeline_prompt_test.sh after lib.sh's
# t_init): eight distinct model answers, $T/v1.md .. $T/v8.md (the tunable
# kernel with other accumulator counts and unrolls, each a different source
# once normalised, each with a hypothesis of its own), and search WS
# ARGS..., a model search through the fake server and a kilnd of the test's.
T=$tmp
i=0
for acc in 2 4 8 16; do
    for su in 1 4; do
        i=$((i + 1))
        { printf 'Here it is.\n\n```c\n'
          sed -e "s/^#define ACC 1 /#define ACC $acc /" -e "s/^#define SUNROLL 1 /#define SUNROLL $su /" \
              "$SRC/kernels/rmsnorm/cpu/tunable.c"
          printf '```\n\nHYPOTHESIS: %d accumulators, the sum unrolled by %d\n' "$acc" "$su"; } >"$T/v$i.md"
    done
done
search() {   # WS ARGS...
    local ws=$1
    shift
    OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake \
        --base-url "http://127.0.0.1:$PORT/v1" --group decode --timing-ms 200 \
        --socket "$T/k.sock" --workspace "$ws" "$@"
}
