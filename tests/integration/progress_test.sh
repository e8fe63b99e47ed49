#!/usr/bin/env bash
# progress_test.sh - long commands show a live line on a terminal (a pseudo
# terminal from script(1)): `kiln verify` with elapsed time, stage and
# shape i of n (and the timing budget left), `kiln search` with its
# iteration line, `kiln reverify` with commit i of n; and nothing of it
# when the output is not a terminal.
#   progress_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
command -v script >/dev/null || skip_all "no script(1) for a pseudo terminal"
T=$tmp
on_tty() {   # on_tty LOG COMMAND...: run under a pseudo terminal, its output in LOG
    local log=$1
    shift
    # 300 columns, wide enough for the whole line, which is cut to the
    # terminal's width (live_width_test.sh): script's terminal takes the
    # size of the one ctest runs on, if any
    script -qec "stty cols 300 2>/dev/null; $(printf '%q ' "$@")" "$log" >/dev/null 2>&1
}
esc=$'\033\\[K'

begin "kiln verify shows a live line on a terminal"
on_tty "$T/verify.log" "$KILN" verify "$SRC/kernels/rmsnorm/cpu/starter.c" --task rmsnorm \
    --group decode --timing-ms 200 --no-daemon
rc=$?
[ $rc = 0 ] || fail "verify on a terminal: exit $rc"
tr '\r' '\n' <"$T/verify.log" >"$T/verify.lines"
grep -aEq "^${esc}  [0-9]{2}:[0-9]{2}  visible +shape v1 \(1 of [0-9]+\)" "$T/verify.lines" ||
    fail "no live visible-shape line: $(head -c 600 "$T/verify.lines")"
grep -aEq "^${esc}  [0-9]{2}:[0-9]{2}  timing +shape v1 \(1 of [0-9]+\), at most [0-9.]+ s of the timing budget left" \
    "$T/verify.lines" || fail "no live timing line with the budget left"
end

begin "no live line when the output is not a terminal"

"$KILN" verify "$SRC/kernels/rmsnorm/cpu/starter.c" --task rmsnorm --group decode \
    --timing-ms 200 --no-daemon >"$T/plain.out" 2>"$T/plain.err"
grep -q $'\033' "$T/plain.out" "$T/plain.err" && fail "escape codes when not on a terminal"
end

begin "kiln search shows a live iteration line"

mkdir -p "$T/w"
(cd "$T/w" && on_tty "$T/search.log" "$KILN" search rmsnorm --iterations 2 --group decode --timing-ms 200 --no-daemon)
rc=$?
[ $rc = 0 ] || fail "search on a terminal: exit $rc: $(tail -c 400 "$T/search.log")"
tr '\r' '\n' <"$T/search.log" | grep -aEq "^${esc}\[[0-9-]+\] it [0-9]+/2  [0-9]{2}:[0-9]{2}:[0-9]{2}" ||
    fail "no live iteration line: $(head -c 600 "$T/search.log")"
end

begin "kiln reverify shows a live line"

(cd "$T/w" && on_tty "$T/reverify.log" "$KILN" reverify --best --no-daemon --timing-ms 200)
tr '\r' '\n' <"$T/reverify.log" | grep -aEq "^${esc}  [0-9]{2}:[0-9]{2}  reverify +commit 1 of [0-9]+" ||
    fail "no live reverify line: $(head -c 600 "$T/reverify.log")"
end
t_done
