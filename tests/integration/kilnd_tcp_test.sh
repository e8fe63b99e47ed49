#!/usr/bin/env bash
# kilnd_tcp_test.sh - integration tests of the verifier daemon kilnd: the TCP
# listener with a token, which kilnd kiln talks to (another build is
# refused or replaced), and the lanes kilnd makes of the visible GPUs.
# (kilnd_common.sh holds what the kilnd tests share.)
#
# usage: kilnd_tcp_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/kilnd_common.sh"

# ---- i. TCP listener with a token -----------------------------------------------

begin
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
printf 'not-the-right-token-at-all\n' >"$tmp/badtoken"
chmod 600 "$tmp/token" "$tmp/badtoken"
port=
for ((try = 0; try < 8; try++)); do
    p=$((20000 + ($$ + try * 997) % 20000))
    if start_kilnd "$TS" "$TST" "$TLOG" --listen "127.0.0.1:$p" --token-file "$tmp/token" --max-tcp 4; then
        port=$p
        TCPPID=$KPID
        break
    fi
    kill9 "$KPID"
done
[ -n "$port" ] || problem "no TCP kilnd: $(tail -3 "$TLOG")"
end "i. kilnd listens on 127.0.0.1:${port:-?} with a token file"

if [ -n "$port" ]; then
    begin
    KILN_TOKEN_FILE=$tmp/token timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i.out" 2>"$tmp/io/i.err" </dev/null
    rc=$?
    honest_out "$rc" "$tmp/io/i.out" ||
        problem "exit $rc: $(head -c 300 "$tmp/io/i.err")"
    who=$(tr -d ' \n\t' <"$tmp/io/i.out" | grep -o '"verifier":{[^}]*}')
    grep -q "\"endpoint\":\"tcp://127.0.0.1:$port\"" <<<"$who" && grep -q '"lane":"cpu"' <<<"$who" &&
        grep -q "\"host\":\"$(hostname)\"" <<<"$who" ||
        problem "the verdict does not name this kilnd and its cpu lane: '$who'"
    end "i. kiln verify over TCP with the right token passes; the verdict names the endpoint and lane"

    begin
    KILN_TOKEN_FILE=$tmp/badtoken timeout -k 5 60 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i2.out" 2>"$tmp/io/i2.err" </dev/null
    rc=$?
    [ $rc -eq 3 ] || problem "exit $rc, expected 3"
    grep -qi token "$tmp/io/i2.err" || problem "no word about the token: $(head -c 300 "$tmp/io/i2.err")"
    timeout -k 5 60 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i3.out" 2>"$tmp/io/i3.err" </dev/null
    rc=$?
    [ $rc -eq 3 ] && grep -qi token "$tmp/io/i3.err" ||
        problem "without KILN_TOKEN_FILE: exit $rc: $(head -c 300 "$tmp/io/i3.err")"
    end "i. a wrong or missing token: exit 3 and a message about the token"

    begin   # raw, unauthenticated: bash's /dev/tcp
    if exec 7<>"/dev/tcp/127.0.0.1/$port"; then
        printf '{"op":"ping","id":"noauth"}\n{"op":"ping","id":"again"}\n' >&7
        out=$(timeout 10 cat <&7)
        exec 7<&-
        [ "$(code_of "$(head -1 <<<"$out")")" = unauthorized ] || problem "answer: ${out:0:300}"
        grep -q pong <<<"$out" && problem "an unauthenticated ping got a pong"
        [ "$(wc -l <<<"$out")" -eq 1 ] || problem "expected one line then a closed connection: ${out:0:300}"
    else
        problem "cannot connect with /dev/tcp"
    fi
    end "i. an unauthenticated TCP request gets unauthorized and the connection closes"

    begin   # idle strangers: a limit apart from local clients, and closed after 5 s
    for fd in 20 21 22 23; do eval "exec $fd<>/dev/tcp/127.0.0.1/$port"; done
    sleep 0.5
    if exec 24<>"/dev/tcp/127.0.0.1/$port"; then
        busy=$(timeout 5 cat <&24)
        exec 24<&-
        grep -q '"busy"' <<<"$busy" || problem "a fifth idle TCP connection was not told busy: ${busy:0:200}"
    fi
    timeout 10 "$KILN" daemon status --socket "$TS" >/dev/null 2>&1 ||
        problem "a local client was locked out by idle TCP connections"
    t0=$SECONDS
    expired=$(timeout 15 cat <&20)
    ((SECONDS - t0 <= 10)) || problem "an idle connection stayed open $((SECONDS - t0)) s"
    grep -q auth-timeout <<<"$expired" || problem "no auth-timeout before the close: ${expired:0:200}"
    for fd in 20 21 22 23; do eval "exec $fd<&-"; done
    end "i. idle unauthenticated TCP connections: limited apart from local ones, closed after 5 s"

    begin
    timeout -k 5 60 "$KILN" daemon stop --socket "$TS" >/dev/null 2>&1
    wait_gone "$TCPPID" 30 || problem "TCP kilnd did not stop"
    end "i. TCP kilnd stops cleanly"
fi

# ---- j. which daemon -----------------------------------------------------------
# kiln talks only to the kilnd it would start itself (same SHA-256). A copy
# of kilnd with one byte more is another build: started by hand it is
# refused, naming both; started on demand it is replaced.

OLD=$tmp/kilnd-other
cp "$KILND" "$OLD" && printf 'x' >>"$OLD" && chmod +x "$OLD"
for mode in by-hand on-demand; do
    begin
    JS=$tmp/j-$mode.sock JST=$tmp/j-$mode-state JLOG=$tmp/kilnd-j-$mode.stderr
    extra=()
    [ $mode = on-demand ] && extra=(--idle-exit 600)
    KILND_SAVED=$KILND
    KILND=$OLD
    start_kilnd "$JS" "$JST" "$JLOG" "${extra[@]}" || problem "the other kilnd did not start"
    KILND=$KILND_SAVED
    OLDPID=$KPID
    KILN_STATE=$JST timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm --socket "$JS" --json \
        "${FAST[@]}" >"$tmp/io/j.out" 2>"$tmp/io/j.err" </dev/null
    rc=$?
    if [ $mode = by-hand ]; then
        [ $rc -eq 3 ] || problem "exit $rc, expected 3: $(head -c 300 "$tmp/io/j.err")"
        grep -q "is build" "$tmp/io/j.err" && grep -q "this kiln's kilnd" "$tmp/io/j.err" ||
            problem "the refusal does not name both builds: $(head -c 400 "$tmp/io/j.err")"
        kill -0 "$OLDPID" 2>/dev/null || problem "a daemon kiln did not start was stopped"
        timeout -k 5 60 "$KILN" daemon stop --socket "$JS" >/dev/null 2>&1
        end "j. a kilnd of another build, started by hand: refused, naming both builds"
    else
        honest_out "$rc" "$tmp/io/j.out" || problem "exit $rc: $(head -c 300 "$tmp/io/j.err")"
        wait_gone "$OLDPID" 30 || problem "the old on-demand kilnd is still running"
        newpid=$(KILN_STATE=$JST kilnd_pid "$JS")
        [ -n "$newpid" ] && [ "$newpid" != "$OLDPID" ] || problem "no new kilnd answers (pid '$newpid')"
        KILN_STATE=$JST timeout -k 5 60 "$KILN" daemon stop --socket "$JS" >/dev/null 2>&1
        end "j. a kilnd of another build, started on demand: replaced by this kiln's"
    fi
done

# ---- k. lanes --------------------------------------------------------------------
# By default one lane per visible GPU ($CUDA_VISIBLE_DEVICES, else /dev/nvidiaN)
# after the cpu lane; --devices overrides. No job runs here, so no GPU is needed.

lanes_of() {   # the lane names of a status line, comma-separated
    grep -o '"name":"[^"]*"' <<<"$1" | sed 's/"name":"\(.*\)"/\1/' | paste -sd,
}
nvdev=0
while [ -e "/dev/nvidia$nvdev" ]; do nvdev=$((nvdev + 1)); done
want_default=cpu
for ((g = 0; g < nvdev; g++)); do want_default+=",cuda:$g"; done
for case in "0,1|cpu,cuda:0,cuda:1|" "|cpu|" "unset|$want_default|" "3|cpu,cuda:7|--devices cpu,cuda:7"; do
    IFS='|' read -r cvd want args <<<"$case"
    begin
    KS=$tmp/lanes.sock KST=$tmp/lanes-state KLG=$tmp/kilnd-lanes.stderr
    saved_cvd=${CUDA_VISIBLE_DEVICES-unset}
    if [ "$cvd" = unset ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$cvd; fi
    start_kilnd "$KS" "$KST" "$KLG" $args || problem "kilnd did not come up: $(tail -3 "$KLG")"
    if [ "$saved_cvd" = unset ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$saved_cvd; fi
    status "$KS"
    [ "$(lanes_of "$st")" = "$want" ] || problem "lanes '$(lanes_of "$st")', expected '$want': ${st:0:300}"
    "$KILN" daemon status --socket "$KS" 2>&1 | grep -q "^device ${want##*,}: idle" ||
        problem "kiln daemon status does not list lane ${want##*,}"
    timeout -k 5 60 "$KILN" daemon stop --socket "$KS" >/dev/null 2>&1
    wait_gone "$KPID" 30 || problem "kilnd did not stop"
    end "k. CUDA_VISIBLE_DEVICES=$cvd ${args:-(default devices)} -> lanes $want"
done

# ---- h. after all -------------------------------------------------------------

after_all_left
t_done
