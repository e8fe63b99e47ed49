#!/usr/bin/env bash
# search_nogpu_test.sh - `kiln search --backend cuda` where there is no GPU: exit 3
# at once saying so, the run kept with backend cuda, a resume keeps it.
# Skipped (77) where there is a GPU: search_cuda_test.sh's business there.
# (search_common.sh holds what the search tests share.)
#
# usage: search_nogpu_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/search_common.sh"

# ==== 10. the CUDA backend without a GPU ==========================================================

# Where there is no GPU (or no CUDA build) a CUDA search stops at its first
# verification: exit 3 at once, saying the backend is unavailable, with the
# run kept (backend cuda) for a --resume where there is one. On a GPU machine
# this is search_cuda_test.sh's business instead.
if have_gpu; then
    skip_all "CUDA search without a GPU: this machine has one"
else
    begin
    WS10=$tmp/ws10
    DB10=$WS10/.kiln/kiln.db
    kiln "$tmp/10.out" "$tmp/10.err" search rmsnorm --backend cuda --iterations 1 --workspace "$WS10" "${FAST[@]}"
    [ "$RC" -eq 3 ] || problem "exit $RC, expected 3"$'\n'"$(tail_of "$tmp/10.err")"
    [ "$SECS" -le 20 ] || problem "took $SECS s to find there is no GPU"
    grep -q 'the CUDA backend is unavailable' "$tmp/10.err" ||
        problem "stderr does not say the CUDA backend is unavailable:"$'\n'"$(tail_of "$tmp/10.err")"
    # The summary says what failed, once, and shows no empty best kernel.
    grep -q '^run .*: failed (the CUDA backend is unavailable' "$tmp/10.out" &&
        grep -q '^best: none' "$tmp/10.out" && ! grep -q 'best: commit ,' "$tmp/10.out" ||
        problem "the failed run's summary is garbled:"$'\n'"$(tail_of "$tmp/10.out")"
    if [ -f "$DB10" ]; then
        RUN10=$(last_run "$WS10")
        got=$(sq "$DB10" "SELECT backend || ' ' || dtype || ' ' || status FROM runs WHERE id='$RUN10'")
        [ "$got" = "cuda f32 failed" ] || problem "runs backend/dtype/status '$got', expected 'cuda f32 failed'"
        src=$(sq "$DB10" "SELECT source FROM candidates WHERE run='$RUN10' AND n=0")
        grep -q '@kiln launch' <<<"$src" && grep -q 'kiln_cuda.h' <<<"$src" ||
            problem "candidate 0 is not the CUDA starter:"$'\n'"${src:0:300}"
        dirty=$(git -C "$WS10" status --porcelain 2>&1)
        [ -z "$dirty" ] || problem "working tree not clean: $dirty"
        kiln "$tmp/10s.out" "$tmp/10s.err" status --workspace "$WS10"
        [ "$RC" -eq 0 ] && grep -q 'cuda/f32' "$tmp/10s.out" ||
            problem "kiln status: exit $RC, no 'cuda/f32':"$'\n'"$(tail_of "$tmp/10s.out")$(tail_of "$tmp/10s.err")"
        # Resuming keeps the backend (and asks again: the same message).
        kiln "$tmp/10b.out" "$tmp/10b.err" search --workspace "$WS10" --resume last "${FAST[@]}"
        [ "$RC" -eq 3 ] && grep -q 'the CUDA backend is unavailable' "$tmp/10b.err" ||
            problem "resume: exit $RC, expected 3 saying the backend is unavailable:"$'\n'"$(tail_of "$tmp/10b.err")"
        got=$(sq "$DB10" "SELECT count(*) || ' ' || group_concat(backend) FROM runs")
        [ "$got" = "1 cuda" ] || problem "after the resume runs are '$got', expected '1 cuda'"
        kiln "$tmp/10c.out" "$tmp/10c.err" search --workspace "$WS10" --resume last --backend cpu "${FAST[@]}"
        [ "$RC" -eq 2 ] && grep -q 'cuda backend' "$tmp/10c.err" ||
            problem "resume with --backend cpu: exit $RC, expected 2:"$'\n'"$(tail_of "$tmp/10c.err")"
    else
        problem "no database in $WS10: the run was not kept"
    fi
    kiln "$tmp/10d.out" "$tmp/10d.err" search rmsnorm --backend cuda --iterations 1 --no-daemon \
        --workspace "$tmp/ws10d" "${FAST[@]}"
    [ "$RC" -eq 3 ] && grep -q 'the CUDA backend is unavailable here' "$tmp/10d.err" ||
        problem "--no-daemon: exit $RC, expected 3 saying so:"$'\n'"$(tail_of "$tmp/10d.err")"
    kiln "$tmp/10e.out" "$tmp/10e.err" search rmsnorm --backend cuda --dtype f64 --workspace "$tmp/ws10e" "${FAST[@]}"
    [ "$RC" -eq 2 ] && grep -q 'no CUDA variant' "$tmp/10e.err" ||
        problem "--dtype f64: exit $RC, expected 2:"$'\n'"$(tail_of "$tmp/10e.err")"
    kiln "$tmp/10f.out" "$tmp/10f.err" search rmsnorm --backend metal --workspace "$tmp/ws10e" "${FAST[@]}"
    [ "$RC" -eq 2 ] && grep -q "unknown backend 'metal'" "$tmp/10f.err" ||
        problem "--backend metal: exit $RC, expected 2:"$'\n'"$(tail_of "$tmp/10f.err")"
    [ -e "$tmp/ws10e" ] && problem "a bad --dtype or --backend created the workspace"
    end "CUDA search without a GPU: exit 3 at once saying so, run kept with backend cuda, resume keeps it"
fi

t_done
