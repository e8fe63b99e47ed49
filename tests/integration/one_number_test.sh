#!/usr/bin/env bash
# one_number_test.sh - one number per kernel (issue 35, item 3): after a
# short CPU search the best kernel's pooled speedup against the task's
# baseline is the same number in the search's --json summary, in
# `kiln status --json` and in the export's decisions.json (the
# geomean_speedup of that kernel), and the report shows it. About 30 s of
# CPU timing.
#
# usage: one_number_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
ws=$tmp/ws

# same WHAT A B: A and B agree to 1e-6 (the figure, not its printing).
same() {
    awk -v a="$2" -v b="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-6) }' ||
        problem "$1: $2 against the summary's $3"
}

begin
"$KILN" search rmsnorm --iterations 3 --drafts 2 --timing-ms 100 --workspace "$ws" --json \
    >"$tmp/search.out" 2>"$tmp/search.err" </dev/null ||
    problem "search: exit $?: $(tail -c 400 "$tmp/search.err")"
best=$(json_get '[event=summary].best_speedup' "$tmp/search.out")
n=$(json_get '[event=summary].best_candidate' "$tmp/search.out")
commit=$(json_get '[event=summary].best_commit' "$tmp/search.out")
[ -n "$best" ] && [ -n "$n" ] && [ -n "$commit" ] ||
    problem "the summary event has no best_speedup, best_candidate or best_commit: $(tail -c 400 "$tmp/search.out")"
end "a short CPU search: its summary names the best kept kernel (#$n, ${best}x)"
stop_if_failed

begin
"$KILN" status --json --workspace "$ws" >"$tmp/status.json" 2>"$tmp/err" ||
    problem "status: exit $?: $(head -c 300 "$tmp/err")"
got=$(json_get best.n "$tmp/status.json")
[ "$got" = "$n" ] || problem "status's best is #$got, the summary's #$n"
got=$(json_get best.commit "$tmp/status.json")
[ "$got" = "$commit" ] || problem "status's best commit $got, the summary's $commit"
same "status's best geomean" "$(json_get best.geomean "$tmp/status.json")" "$best"
end "status --json: the same kernel at the same figure"

begin
"$KILN" export --task rmsnorm -o "$tmp/ex" --workspace "$ws" >/dev/null 2>"$tmp/err" ||
    problem "export: exit $?: $(head -c 300 "$tmp/err")"
got=$(json_get "kernels[candidate=$n].geomean_speedup" "$tmp/ex/decisions.json" | head -1)
same "decisions.json's geomean_speedup of #$n" "$got" "$best"
end "export: decisions.json gives the best kernel the same figure"

begin
"$KILN" report -o "$tmp/r.html" --workspace "$ws" >/dev/null 2>"$tmp/err" ||
    problem "report: exit $?: $(head -c 300 "$tmp/err")"
shown=$(printf '%.3fx' "$best")
grep -qF -- "<p>geomean $shown [" "$tmp/r.html" ||
    problem "the report's best is not at $shown: $(grep -o '<p>geomean [^,]*' "$tmp/r.html" | head -3)"
end "report: the best kernel's geomean is the same figure"
t_done
