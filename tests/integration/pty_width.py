#!/usr/bin/env python3
"""pty_width.py - a command on a pseudo terminal of a given width, and the
check of its live lines (live_width_test.sh).

    pty_width.py run COLS LOG CMD...   run CMD with stdin, stdout and stderr on
                                       a terminal COLS columns wide; its raw
                                       output in LOG; exit with CMD's status
    pty_width.py check COLS LOG        every redrawn live line of LOG (LIVE)
                                       is valid UTF-8 of at most COLS - 1
                                       columns; prints the widest, exit 1 if not
"""
import fcntl
import os
import re
import struct
import subprocess
import sys
import termios


def run(cols, log, cmd):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO: every copy of the terminal's other end closed
            break
        if not chunk:
            break
        out += chunk
    with open(log, "wb") as f:
        f.write(out)
    return p.wait()


# a live line's redraw: search's "[run] it ..." or verify's "  mm:ss  stage"
LIVE = re.compile(rb"\033\[K(\[|  [0-9]{2}:[0-9]{2}  )")


def check(cols, log):
    raw = open(log, "rb").read()
    widest, bad = 0, 0
    for seg in re.split(rb"[\r\n]", raw):
        if not LIVE.match(seg):
            continue   # not a live line's redraw: other output after a clear
        try:
            text = seg[3:].decode("utf-8")
        except UnicodeDecodeError as e:
            print(f"a character split by the cut: {seg[3:]!r}: {e}")
            bad += 1
            continue
        widest = max(widest, len(text))
        if len(text) > cols - 1:
            print(f"{len(text)} columns on a terminal of {cols}: {text}")
            bad += 1
    print(f"widest {widest}")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "run":
        return run(int(argv[2]), argv[3], argv[4:])
    if len(argv) == 4 and argv[1] == "check":
        return check(int(argv[2]), argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
