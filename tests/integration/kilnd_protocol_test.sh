#!/usr/bin/env bash
# kilnd_protocol_test.sh - integration tests of the verifier daemon kilnd: its wire
# protocol (ping and status, every kind of malformed message, a request in
# pieces) over its Unix socket.
# (kilnd_common.sh holds what the kilnd tests share.)
#
# usage: kilnd_protocol_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/kilnd_common.sh"

start_main

# ---- a. ping and status ----------------------------------------------------

begin
probe "$S" --timeout-ms 10000 <<<'{"op":"ping","id":"a1"}'
[ $prc -eq 0 ] || problem "kiln_probe exit $prc"
[ "$(ev_of "$out")" = pong ] || problem "ping answered '$out'"
grep -q '"id":"a1"' <<<"$out" || problem "pong does not echo the id: $out"
end "a. ping -> pong"

begin
probe "$S" --timeout-ms 10000 <<<'{"op":"status","id":"a2"}'
[ "$(ev_of "$out")" = status ] || problem "status answered '$out'"
for f in '"devices":\[' '"queued":[0-9]' '"jobs_done":[0-9]' '"uptime_s":[0-9]' '"pid":[0-9]'; do
    grep -q -- "$f" <<<"$out" || problem "status lacks $f: $out"
done
[ "$(num_of "$out" pid)" = "$MAINPID" ] || problem "status pid $(num_of "$out" pid), started $MAINPID"
end "a. status -> devices, queued, jobs_done, uptime_s"

# ---- b. malformed messages ---------------------------------------------------

# bad NAME CODE FILE: FILE holds a bad line; a ping follows on the same
# connection: expect an error with CODE, then a pong.
bad() {
    begin
    local name=$1 code=$2 file=$3
    printf '{"op":"ping","id":"after"}\n' >>"$file"
    probe "$S" --finals 2 --timeout-ms 20000 <"$file"
    local first second
    first=$(head -1 <<<"$out")
    second=$(sed -n 2p <<<"$out")
    [ "$(ev_of "$first")" = error ] || problem "first answer is not an error: ${first:0:300}"
    [ "$(code_of "$first")" = "$code" ] || problem "error code '$(code_of "$first")', expected $code: ${first:0:300}"
    grep -q '"message":"[^"]' <<<"$first" || problem "error has no message: ${first:0:300}"
    [ "$(ev_of "$second")" = pong ] && grep -q '"id":"after"' <<<"$second" ||
        problem "no pong after it on the same connection: ${second:0:300}"
    [ "$(wc -l <<<"$out")" -eq 2 ] || problem "$(wc -l <<<"$out") lines, expected 2: ${out:0:500}"
    end "b. $name -> $code, then ping still answers"
}
B=$tmp/io/bad
printf '{nope\n' >"$B"; bad "garbage line" malformed "$B"
printf '[1,2,3]\n' >"$B"; bad "JSON array" malformed "$B"
printf '"ping"\n' >"$B"; bad "JSON string" malformed "$B"
printf '{"id":"b3"}\n' >"$B"; bad "object without op" malformed "$B"
printf '{"op":42,"id":"b3"}\n' >"$B"; bad "op not a string" malformed "$B"
printf '{"op":"frobnicate","id":"b4"}\n' >"$B"; bad "unknown op" unknown-op "$B"
printf '{"op":"verify","id":"b5"}\n' >"$B"; bad "verify without task and source" bad-request "$B"
printf '{"op":"verify","id":"b6","task":"rmsnorm"}\n' >"$B"; bad "verify without source" bad-request "$B"
printf '{"op":"verify","id":"b7","source":"int x;"}\n' >"$B"; bad "verify without task" bad-request "$B"
printf '{"op":"verify","id":"b8","task":"rmsnorm","source":"x","backend":"cuda","language":"c"}\n' >"$B"
bad "verify with backend cuda but language c" bad-request "$B"
printf '{"op":"verify","id":"b8","task":"rmsnorm","source":"x","backend":"tpu"}\n' >"$B"
bad "verify with an unknown backend" bad-request "$B"
printf '{"op":"verify","id":"b9","task":"rmsnorm","source":"x","timing_ms":-5}\n' >"$B"
bad "verify with negative timing_ms" bad-request "$B"
printf '{"op":"result","id":"b10","job":"../../etc/passwd"}\n' >"$B"; bad "result with a bad job id" bad-request "$B"
printf '{"op":"result","id":"b11","job":"j99999999"}\n' >"$B"; bad "result of an unknown job" unknown-job "$B"
printf '{"op":"ping","id":"n\0ul"}\n' >"$B"; bad "NUL byte inside a string" malformed "$B"
printf '{"op":"ping"}\0\n' >"$B"; bad "NUL byte after the object" malformed "$B"
printf '{"op":"ping","id":"bad\xff\xfeid"}\n' >"$B"; bad "invalid UTF-8 in the id" malformed "$B"
printf '{"op":"ping","id":"\xc0\xaf"}\n' >"$B"; bad "an overlong UTF-8 form" malformed "$B"
printf '{"op":"verify","id":"b12","task":"../../etc","source":"x"}\n' >"$B"
bad "a relative task path that climbs out" bad-request "$B"
printf '{"op":"verify","id":"b13","task":"/tmp/../etc","source":"x"}\n' >"$B"
bad "an absolute task path with '..'" bad-request "$B"
printf '{"op":"ping","id":"t"} trailing\n' >"$B"; bad "trailing garbage after the object" malformed "$B"
# A line just over the limit can arrive whole in one read; one far over it
# arrives in pieces. Both must be too-large (and not parsed).
for extra in 1 4096 300000; do
    head -c $((1048576 + extra)) /dev/zero | tr '\0' a >"$B"
    printf '\n' >>"$B"
    bad "oversized line (1 MiB + $extra bytes of 'a')" too-large "$B"
done
{
    printf '{"op":"verify","id":"big","task":"rmsnorm","group":"decode","timing_ms":200,"source":"'
    head -c $((1048576 + 100)) /dev/zero | tr '\0' ' '
    printf '"}\n'
} >"$B"
bad "valid verify request over 1 MiB" too-large "$B"

begin   # a request split over several writes is put together
out=$({ printf '{"op":"pi'; sleep 0.3; printf 'ng","id":"split"}'; sleep 0.3; printf '\n'; } |
      timeout -k 5 30 "$PROBE" "$S" --timeout-ms 10000)
[ "$(ev_of "$out")" = pong ] && grep -q '"id":"split"' <<<"$out" || problem "answer: $out"
end "b. a request line written in pieces -> pong"

begin   # empty lines are ignored; CRLF is accepted
probe "$S" --finals 1 --timeout-ms 10000 < <(printf '\n\n{"op":"ping","id":"crlf"}\r\n')
[ "$(ev_of "$out")" = pong ] || problem "answer: $out"
end "b. empty lines and CRLF"

begin
status "$S"
[ -n "$st" ] || problem "kilnd stopped answering"
[ "$(daemon_pid "$S")" = "$MAINPID" ] || problem "kilnd pid changed"
end "b. kilnd survived the malformed input"

# ---- h. after all -------------------------------------------------------------

after_all
t_done
