#!/usr/bin/env bash
# kilnd_cache_test.sh - integration tests of the verifier daemon kilnd: its build
# cache (what a job built is kept, a new candidate once and then served
# from the cache, a damaged entry rebuilt).
# (kilnd_common.sh holds what the kilnd tests share.)
#
# usage: kilnd_cache_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/kilnd_common.sh"

start_main

# ---- l. the build cache ---------------------------------------------------------
# kilnd keeps the libraries it built (build-cache/ in its state directory, by
# the hash of all that goes into the build): the baseline, the reference, a
# candidate. The same candidate again is served from it; a candidate that
# does not compile is not kept. A damaged entry is noticed, rebuilt and
# stored again.

cache_entries() { ls "$ST"/build-cache/*.so 2>/dev/null | wc -l; }
cache_sound() {   # every entry's bytes hash to the sum stored beside it
    local so
    for so in "$ST"/build-cache/*.so; do
        [ -e "$so" ] || continue
        [ "$(sha256sum <"$so" | cut -c1-64)" = "$(cat "${so%.so}.sha256")" ] || return 1
    done
}
begin
timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l1.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l1.out" || problem "the starter: $(head -c 300 "$tmp/io/l1.out")"
n0=$(cache_entries)
[ "$n0" -ge 2 ] || problem "only $n0 libraries kept after rmsnorm jobs (its baseline and reference expected)"
# A candidate nobody has sent before is kept; sent again, it is served from
# the cache: its entry is not written again (the same inode).
{ echo "/* kilnd_test l, $$ $RANDOM */"; cat "$HONEST2"; } >"$tmp/l_unique.c"
ls "$ST"/build-cache/*.so >"$tmp/l_before" 2>/dev/null
timeout -k 5 120 "$KILN" verify "$tmp/l_unique.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l2.out" || problem "a new honest candidate: $(head -c 300 "$tmp/io/l2.out")"
new_entry=$(ls "$ST"/build-cache/*.so 2>/dev/null | grep -vxF -f "$tmp/l_before")
[ "$(cache_entries)" -eq $((n0 + 1)) ] && [ -n "$new_entry" ] ||
    problem "$n0 libraries kept before a new candidate, $(cache_entries) after: expected one more"
inode=$(stat -c %i "$new_entry" 2>/dev/null)
timeout -k 5 120 "$KILN" verify "$tmp/l_unique.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2b.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l2b.out" || problem "the same candidate again: $(head -c 300 "$tmp/io/l2b.out")"
[ -n "$inode" ] && [ "$(stat -c %i "$new_entry" 2>/dev/null)" = "$inode" ] ||
    problem "the candidate's entry was written again: it was built, not taken from the cache"
# One that does not compile is not kept.
{ cat "$HONEST2"; echo "this does not compile"; } >"$tmp/l_broken.c"
timeout -k 5 120 "$KILN" verify "$tmp/l_broken.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2c.out" 2>&1 </dev/null
grep -q '"code":[[:space:]]*"compile-error"' "$tmp/io/l2c.out" ||
    problem "a broken candidate: $(head -c 300 "$tmp/io/l2c.out")"
[ "$(cache_entries)" -eq $((n0 + 1)) ] || problem "a candidate that does not compile changed the cache"
cache_sound || problem "an entry does not match its stored hash"
end "l. kilnd keeps what it built ($n0 for the first job), a new candidate once, served again from the cache"

begin
for so in "$ST"/build-cache/*.so; do printf 'not a library' >"$so"; done
timeout -k 5 120 "$KILN" verify "$HONEST2" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l3.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l3.out" || problem "after the cache was damaged: $(head -c 300 "$tmp/io/l3.out")"
# The job's three (candidate, baseline, reference) were rebuilt and stored
# again; the entries no job used since stay damaged until one does.
sound=0
for so in "$ST"/build-cache/*.so; do
    [ "$(sha256sum <"$so" | cut -c1-64)" = "$(cat "${so%.so}.sha256")" ] && sound=$((sound + 1))
done
[ "$sound" -eq 3 ] || problem "$sound entries hash as stored after a job used the damaged cache, expected 3"
end "l. a damaged cache entry is rebuilt, not loaded"

# ---- h. after all -------------------------------------------------------------

after_all 5
t_done
