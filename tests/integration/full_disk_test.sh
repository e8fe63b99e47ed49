#!/usr/bin/env bash
# full_disk_test.sh - a search whose workspace disk fills up mid-run stops
# with a message naming the full disk and how to resume; the run database
# and the git repository stay sound, and after space is freed --resume
# finishes the run with every candidate recorded before still there.
# Needs root to mount a small tmpfs (exit 77, ctest's skip, otherwise).
#   full_disk_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
if [ "$(id -u)" != 0 ] || ! command -v sqlite3 >/dev/null; then
    skip_all "needs root (to mount a small tmpfs) and sqlite3"
fi
T=$tmp
D=$T/disk
mkdir -p "$D"
mount -t tmpfs -o size=700k tmpfs "$D" 2>"$T/mount.err" ||
    skip_all "cannot mount a tmpfs here: $(cat "$T/mount.err")"
t_on_exit 'umount "$D" 2>/dev/null'
WS=$D/kiln-work

# The smallest group and timing budget: this checks the full disk, not timing.
FAST=(--group decode --timing-ms 200)
begin "the full disk stops the run and says so"
(cd "$D" && "$KILN" search rmsnorm --iterations 30 --no-daemon "${FAST[@]}" >"$T/a.out" 2>"$T/a.err")
rc=$?
[ $rc != 0 ] || fail "a search on a 700 KiB disk did not stop"
grep -Eq "the disk is full|No space left on device" "$T/a.err" ||
    fail "the error does not name the full disk: $(tail -c 400 "$T/a.err")"
grep -q "free space there, then resume" "$T/a.out" ||
    fail "the summary does not say to free space and resume: $(tail -c 600 "$T/a.out")"
run=$(sed -n 's/.*--resume \([0-9-]*\)$/\1/p' "$T/a.out" | tail -1)
[ -n "$run" ] || fail "no resume command in: $(tail -c 400 "$T/a.out")"
end "the full disk stops the run (exit $rc) and says so: $(tail -1 "$T/a.err")"

begin "database and repository sound"

[ "$(sqlite3 "$WS/.kiln/kiln.db" 'PRAGMA integrity_check')" = ok ] || fail "the run database is damaged"
git -C "$WS" fsck --no-progress >"$T/fsck" 2>&1 || fail "git fsck: $(head -c 300 "$T/fsck")"
before=$(sqlite3 "$WS/.kiln/kiln.db" "SELECT n || ':' || commit_id FROM candidates WHERE run = '$run' ORDER BY n")
end "database and repository sound; $(echo "$before" | grep -c .) candidates recorded"

begin "resumed, every earlier candidate kept"

mount -o remount,size=64m "$D" || fail "cannot grow the tmpfs"
(cd "$D" && "$KILN" search rmsnorm --workspace "$WS" --resume "$run" --iterations 4 --no-daemon "${FAST[@]}" \
    >"$T/b.out" 2>"$T/b.err")
rc=$?
[ $rc = 0 ] || fail "resume: exit $rc: $(tail -c 400 "$T/b.err")"
after=$(sqlite3 "$WS/.kiln/kiln.db" "SELECT n || ':' || commit_id FROM candidates WHERE run = '$run' ORDER BY n")
# Each earlier candidate is still there, with the same commit where it had
# one (one stopped before its commit gets it on resume).
while read -r row; do
    [ -n "$row" ] || continue
    case $row in
        *:) grep -q "^${row}" <<<"$after" ;;
        *) grep -qxF "$row" <<<"$after" ;;
    esac || fail "candidate $row was lost on resume"
done <<<"$before"
[ "$(echo "$after" | grep -c .)" -gt "$(echo "$before" | grep -c .)" ] ||
    fail "resume recorded no new candidate"
end "resumed; $(echo "$after" | grep -c .) candidates, every earlier one kept"
t_done
