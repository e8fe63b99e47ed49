#!/usr/bin/env bash
# from_trace_test.sh - `kiln task from-trace` (issue 38, item 1) on a
# hand-written trace in torch 2.x's format (tests/fixtures/traces): the
# table's rows and ranking by GPU time, the same found without the module
# scopes (from the op sequence) and ranked by CPU time without kernels; the
# written tasks load with the model group's shapes and the CPU starter
# verifies on the rmsnorm copy's model group; malformed and foreign traces
# are refused with exit 2, naming the file and what is missing.
#
# usage: from_trace_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"

TRACE=$SRC/tests/fixtures/traces/llama_tiny.json
export KILN_TASKS=$tmp/out

# row N LINE: line N of the table (1: the first op) is LINE, spaces squeezed.
row() {
    local got
    got=$(sed -n '/^op /,/^$/p' "$tmp/table" | sed -n "$(($1 + 1))p" | tr -s ' ')
    [ "$got" = "$2" ] || problem "row $1: '$got', expected '$2'"
}

begin
"$KILN" task from-trace "$TRACE" -o "$tmp/out" >"$tmp/table" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || problem "exit $rc: $(head -c 300 "$tmp/err")"
grep -qF "llama_tiny.json: 114 CPU ops, 75 GPU kernels, 5872.4 us of GPU kernel time" "$tmp/table" ||
    problem "no totals line: $(head -2 "$tmp/table")"
row 1 "aten::linear M=2048 N=11008 K=4096 17.8% 4 gemm"
row 2 "aten::linear M=2048 N=4096 K=4096 13.8% 8 gemm"
row 5 "aten::linear M=2048 N=32000 K=4096 12.7% 1 gemm"
row 7 "aten::add + RMSNorm 2048x4096 7.8% 4 add_rmsnorm"
row 8 "aten::softmax 65536x1024 3.3% 2 softmax"
row 9 "aten::cross_entropy_loss 2048x32000 2.2% 1 cross_entropy"
row 10 "RMSNorm (pow..mul) 2048x4096 1.7% 1 rmsnorm"
row 11 "aten::mul 2x1024x11008 1.4% 2 -"
grep -qxF "no kiln task yet: aten::matmul (attention) (2.6%), aten::mul (1.4%), aten::silu (1.1%), aten::to (1.0%), aten::embedding (0.2%)" \
    "$tmp/table" || problem "untasked line: $(grep 'no kiln task' "$tmp/table")"
sed -n '/^op /,/^no kiln task/p' "$tmp/table" >"$tmp/rows1"
end "the table: ops ranked by GPU time with their shapes, share, calls and task; what has no task"

begin
for t in gemm add_rmsnorm softmax cross_entropy rmsnorm; do
    [ -f "$tmp/out/llama_tiny_$t/task.json" ] || problem "llama_tiny_$t not written"
    grep -qF "task llama_tiny_$t: copied from $t to $tmp/out/llama_tiny_$t" "$tmp/table" ||
        problem "no line for llama_tiny_$t"
done
"$KILN" task show llama_tiny_rmsnorm >"$tmp/show" 2>&1 || problem "task show rmsnorm: $(head -c 300 "$tmp/show")"
grep -A1 "group model: visible shapes" "$tmp/show" | grep -q "v1 *rows=2048 cols=4096" ||
    problem "rmsnorm model group: $(grep -A2 'group model' "$tmp/show")"
"$KILN" task show llama_tiny_gemm --backend cuda >"$tmp/show" 2>&1 || problem "task show gemm: $(head -c 300 "$tmp/show")"
sed -n '/group model: visible shapes/,/plus hidden/p' "$tmp/show" | tr -s ' ' >"$tmp/gemm"
for s in "v1 M=2048 N=11008 K=4096" "v2 M=2048 N=4096 K=4096" "v5 M=2048 N=32000 K=4096" \
         "v6 M=2048 N=4096 K=11008"; do
    grep -qF "$s" "$tmp/gemm" || problem "gemm model group lacks '$s': $(cat "$tmp/gemm")"
done
grep -qF '"rows":	2049' "$tmp/out/llama_tiny_rmsnorm/hidden.json" &&
    grep -qF '"cols":	4095' "$tmp/out/llama_tiny_rmsnorm/hidden.json" ||
    problem "rmsnorm hidden shapes: no 2049 rows / 4095 cols"
"$KILN" verify "$SRC/kernels/rmsnorm/cpu/starter.c" --task llama_tiny_rmsnorm --group model \
    --no-daemon --timing-ms 100 >"$tmp/v.out" 2>"$tmp/v.err"
rc=$?
[ $rc -eq 0 ] || problem "verify on the model group: exit $rc: $(tail -c 400 "$tmp/v.out") $(head -c 300 "$tmp/v.err")"
end "the written tasks load, their model groups hold the shapes seen, the starter verifies on rmsnorm's"

begin
grep -v '"python_function"' "$TRACE" >"$tmp/noscope.json"
"$KILN" task from-trace "$tmp/noscope.json" -o "$tmp/o2" --prefix ns >"$tmp/table" 2>"$tmp/err" ||
    problem "no scopes: $(head -c 300 "$tmp/err")"
sed -n '/^op /,/^no kiln task/p' "$tmp/table" >"$tmp/rows2"
cmp -s "$tmp/rows1" "$tmp/rows2" || problem "no scopes: a table of its own: $(diff "$tmp/rows1" "$tmp/rows2" | head -8)"
row 7 "aten::add + RMSNorm 2048x4096 7.8% 4 add_rmsnorm"
[ -f "$tmp/o2/ns_rmsnorm/task.json" ] || problem "--prefix ns: no ns_rmsnorm"
grep -v '"cat": "kernel"' "$TRACE" >"$tmp/nokernel.json"
"$KILN" task from-trace "$tmp/nokernel.json" -o "$tmp/o3" >"$tmp/table" 2>"$tmp/err" ||
    problem "no kernels: $(head -c 300 "$tmp/err")"
grep -qF "0 GPU kernels, 636.0 us of CPU op time (no GPU kernels in the trace: ranked by the CPU ops' own time)" \
    "$tmp/table" || problem "no-kernel totals: $(head -1 "$tmp/table")"
row 1 "aten::add + RMSNorm 2048x4096 39.6% 4 add_rmsnorm"
# Kernels without "External id" reach their op through the launch's correlation id.
sed '/"cat": "kernel"/s/"External id": [0-9]*, //' "$TRACE" >"$tmp/corr.json"
grep -q '"cat": "kernel".*External id' "$tmp/corr.json" && problem "sed left External ids on kernels"
"$KILN" task from-trace "$tmp/corr.json" -o "$tmp/o5" >"$tmp/table" 2>"$tmp/err" ||
    problem "by correlation: $(head -c 300 "$tmp/err")"
row 1 "aten::linear M=2048 N=11008 K=4096 17.8% 4 gemm"
row 10 "RMSNorm (pow..mul) 2048x4096 1.7% 1 rmsnorm"
grep -qF "5872.4 us of GPU kernel time" "$tmp/table" || problem "by correlation: $(head -1 "$tmp/table")"
end "without module scopes RMSNorm is found from the op sequence, the same table; without kernels ranked by CPU time, saying so; kernels found by correlation id"

# A few ops the Llama trace lacks: aten::rms_norm after a residual add,
# layer_norm around native_layer_norm, log_softmax then nll_loss_nd.
begin
cat >"$tmp/mini.json" <<'JSON'
{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"External id": 1, "Input Dims": [[4, 256, 2048], [4, 256, 2048], []], "Input type": ["float", "float", "Scalar"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::rms_norm", "pid": 1, "tid": 1, "ts": 20, "dur": 30, "args": {"External id": 2, "Input Dims": [[4, 256, 2048], [2048], [], []], "Input type": ["float", "float", "", "Scalar"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::layer_norm", "pid": 1, "tid": 1, "ts": 60, "dur": 40, "args": {"External id": 3, "Input Dims": [[1024, 768], [768], [768], [768], [], []], "Input type": ["float", "", "float", "float", "Scalar", "Scalar"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::native_layer_norm", "pid": 1, "tid": 1, "ts": 61, "dur": 38, "args": {"External id": 4, "Input Dims": [[1024, 768], [], [768], [768], []], "Input type": ["float", "", "float", "float", "Scalar"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::log_softmax", "pid": 1, "tid": 1, "ts": 110, "dur": 20, "args": {"External id": 5, "Input Dims": [[1024, 50257], [], []], "Input type": ["float", "Scalar", ""]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::nll_loss_nd", "pid": 1, "tid": 1, "ts": 140, "dur": 10, "args": {"External id": 6, "Input Dims": [[1024, 50257], [1024], [], [], []], "Input type": ["float", "long int", "", "Scalar", "Scalar"]}}
]}
JSON
"$KILN" task from-trace "$tmp/mini.json" -o "$tmp/o6" >"$tmp/table" 2>"$tmp/err" ||
    problem "mini: $(head -c 300 "$tmp/err")"
row 1 "aten::layer_norm 1024x768 38.1% 1 layernorm"
row 2 "aten::add + aten::rms_norm 1024x2048 33.3% 1 add_rmsnorm"
row 3 "aten::log_softmax 1024x50257 28.6% 1 cross_entropy"
grep -qxF "no kiln task yet: nothing" "$tmp/table" || problem "mini: $(grep 'no kiln task' "$tmp/table")"
KILN_TASKS=$tmp/o6 "$KILN" task show mini_cross_entropy >"$tmp/show" 2>&1 || problem "show mini_cross_entropy: $(head -c 300 "$tmp/show")"
grep -A1 "group model: visible shapes" "$tmp/show" | grep -q "v1 *rows=1024 vocab=50257" ||
    problem "cross_entropy model group: $(grep -A2 'group model' "$tmp/show")"
end "aten::rms_norm after an add, layer_norm, log_softmax with nll_loss: add_rmsnorm, layernorm, cross_entropy"

# refused NAME WANT: from-trace of $tmp/NAME exits 2 naming the file and WANT.
refused() {
    local rc
    "$KILN" task from-trace "$tmp/$1" -o "$tmp/o4" >"$tmp/so" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || problem "$1: exit $rc, expected 2"
    grep -qF "kiln task from-trace: $tmp/$1: $2" "$tmp/err" || problem "$1: stderr: $(head -c 300 "$tmp/err")"
    [ ! -e "$tmp/o4" ] || problem "$1: tasks were written"
}

begin
printf '{"traceEvents": [' >"$tmp/cut.json"
refused cut.json "not JSON"
printf '{"events": []}' >"$tmp/noev.json"
refused noev.json 'no "traceEvents" array'
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}' >"$tmp/noargs.json"
refused noargs.json "cpu_op event 'aten::mm' has no \"args\""
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": {}}]}' >"$tmp/nodims.json"
refused nodims.json 'no aten:: op has "Input Dims"'
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "MyOp", "ts": 1, "dur": 2, "args": {}}]}' >"$tmp/foreign.json"
refused foreign.json "no aten:: CPU ops"
"$KILN" task from-trace "$tmp/none.json" >"$tmp/so" 2>"$tmp/err"
[ $? -eq 2 ] && grep -qF "$tmp/none.json: cannot open" "$tmp/err" || problem "missing file: $(cat "$tmp/err")"
end "malformed traces (not JSON, no traceEvents, no args, no Input Dims), a foreign one and a missing file: exit 2, naming what is missing"

t_done
