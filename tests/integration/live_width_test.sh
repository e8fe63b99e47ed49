#!/usr/bin/env bash
# live_width_test.sh - the live lines fit the terminal (issue 38, item 4):
# on a pseudo terminal (pty_width.py, python3's pty) of 40 columns, every
# redraw of `kiln search`'s iteration line (stdout) and `kiln verify`'s line
# (stderr) holds at most 39 columns, the last left free, and the long ones
# are cut there; the terminal's own width wins over $COLUMNS; on 100
# columns, `search --iterations N` shows the time left estimated from the
# iterations done. unit_live_width tests the cut at multi-byte UTF-8
# characters and $COLUMNS off a terminal.
#   live_width_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
command -v python3 >/dev/null || skip_all "no python3 for a pseudo terminal"
PTY=$SRC/tests/integration/pty_width.py

# fits COLS LOG WHAT: every live line of LOG within COLS - 1 columns, and at
# least one exactly that wide (a line that long was cut, not left out).
fits() {
    local cols=$1 log=$2 what=$3 out
    out=$(python3 "$PTY" check "$cols" "$log") || problem "$what: wider than the terminal: $out"
    grep -qx "widest $((cols - 1))" <<<"$out" ||
        problem "$what: no live line cut at $((cols - 1)) columns ($(tail -1 <<<"$out"))"
}

begin "search on 40 columns: each redraw of the iteration line is cut at 39"
mkdir -p "$tmp/w"
(cd "$tmp/w" && python3 "$PTY" run 40 "$tmp/search40.log" "$KILN" search rmsnorm --iterations 2 \
    --group decode --timing-ms 200 --no-daemon)
rc=$?
[ $rc = 0 ] || problem "search on a terminal: exit $rc: $(tail -c 400 "$tmp/search40.log")"
fits 40 "$tmp/search40.log" "search"
end

begin "verify on 40 columns, \$COLUMNS=200: the terminal's width wins"
COLUMNS=200 python3 "$PTY" run 40 "$tmp/verify40.log" "$KILN" verify \
    "$SRC/kernels/rmsnorm/cpu/starter.c" --task rmsnorm --group decode --timing-ms 200 --no-daemon
rc=$?
[ $rc = 0 ] || problem "verify on a terminal: exit $rc: $(tail -c 400 "$tmp/verify40.log")"
fits 40 "$tmp/verify40.log" "verify"
end

begin "search --iterations 3 on 100 columns: the time left from the mean iteration"
rm -rf "$tmp/w" && mkdir -p "$tmp/w"
(cd "$tmp/w" && python3 "$PTY" run 100 "$tmp/search100.log" "$KILN" search rmsnorm \
    --iterations 3 --group decode --timing-ms 200 --no-daemon)
rc=$?
[ $rc = 0 ] || problem "search on a terminal: exit $rc: $(tail -c 400 "$tmp/search100.log")"
python3 "$PTY" check 100 "$tmp/search100.log" >"$tmp/check100" ||
    problem "search: wider than 100 columns: $(cat "$tmp/check100")"
tr '\r' '\n' <"$tmp/search100.log" |
    grep -aEq "^"$'\033'"\[K\[[0-9-]+\] it [12]/3  [0-9:]{8} \(about [0-9]{2}:[0-9]{2}:[0-9]{2} left\)  best" ||
    problem "no '(about HH:MM:SS left)' after an iteration: $(tr '\r' '\n' <"$tmp/search100.log" | grep -a ' it 1/3' | head -2)"
end
t_done
