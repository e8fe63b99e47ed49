#!/usr/bin/env bash
# graph_ab.sh - on a GPU: the rmsnorm starter against itself on the small
# and prefill groups, with the timed batch as one CUDA graph (default) and
# as plain stream launches (KILN_NO_GRAPH=1), to see what graphs change in
# the gap between CUPTI's kernel time and the events.
#   bench/graph_ab.sh BUILD_DIR
B=${1:-build-gpu}
export KILN_STATE=${KILN_STATE:-/tmp/kiln-ab}
for mode in graph stream; do
    for g in small prefill; do
        echo "== $mode $g"
        if [ $mode = stream ]; then export KILN_NO_GRAPH=1; else unset KILN_NO_GRAPH; fi
        "$B/kiln" verify kernels/rmsnorm/cuda/starter.cu --task rmsnorm --dtype bf16 --group $g \
            --no-daemon --json >/tmp/ab.json 2>/tmp/ab.err || tail -2 /tmp/ab.err
        python3 bench/show_verdict.py /tmp/ab.json
    done
done
unset KILN_NO_GRAPH
