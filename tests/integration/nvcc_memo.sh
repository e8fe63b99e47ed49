#!/usr/bin/env bash
# nvcc_memo.sh - nvcc for the tests, remembered between the normal and the
# sanitizer suite of one scripts/test.sh run.
#
# The tests compile kiln's exported headers with nvcc (5-6 s a compile on
# two cores, the largest share of export_cuda's and examples' time). The
# sanitizer suite exports byte-identical files, and nvcc is not kiln's code:
# compiling them again checks nothing the first compile did not. So, with
# KILN_TEST_NVCC_MEMO=DIR (tests/CMakeLists.txt sets it; scripts/test.sh
# shares and empties it), a compile whose every input is the same as an
# earlier successful one gives back that one's output file, printed text
# and exit status. Anything else runs nvcc.
#
# "Every input": nvcc's identity (path, size, mtime), the host compiler's,
# PATH and NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, the arguments (a path in
# them stands as PATH: what it names is hashed below), the content of every
# file the preprocessor reads for each source (nvcc -M: 0.6 s, the system
# headers included) and of each object file linked. Failed compiles are not
# remembered.
#
# usage: nvcc_memo.sh NVCC ARGS...   (without KILN_TEST_NVCC_MEMO: exec NVCC)
set -u
nvcc=$1
shift
memo=${KILN_TEST_NVCC_MEMO:-}
[ -n "$memo" ] || exec "$nvcc" "$@"

out= sources=() objects=() keyargs=() mflags=()
while [ $# -gt 0 ]; do
    a=$1
    shift
    case $a in
    -o) out=$1; shift; keyargs+=(-o OUT); continue ;;
    *.cu | *.cpp | *.cc | *.c) sources+=("$a"); keyargs+=(SOURCE); continue ;;
    *.o | *.a) objects+=("$a"); keyargs+=(OBJECT); continue ;;
    -I*) p=${a#-I} ;;
    *) p=$a ;;
    esac
    mflags+=("$a")
    if [ -n "$p" ] && [ -e "$p" ] && [ "${p#-}" = "$p" ]; then
        keyargs+=("${a%"$p"}PATH")
    else
        keyargs+=("$a")
    fi
done
[ -n "$out" ] || exec "$nvcc" "${mflags[@]}" "${sources[@]}" "${objects[@]}"

id_of() {   # id_of PROGRAM: its real path, size and mtime
    local p
    p=$(readlink -f -- "$(command -v "$1" || echo "$1")") && stat -c '%n %s %Y' -- "$p"
}
# deps SOURCE: the hashes of the files the preprocessor reads for it, in
# the order read; fails where nvcc -M does.
deps() {
    local m f h noc=()
    for f in "${mflags[@]}"; do
        [ "$f" = -c ] || noc+=("$f")
    done
    m=$("$nvcc" "${noc[@]}" -M "$1" 2>/dev/null) || return 1
    while read -r f; do
        h=$(sha256sum -- "$f") || return 1
        echo "${h%% *}"
    done < <(sed 's/^[^:]*://; s/\\$//' <<<"$m" | tr ' ' '\n' | sed '/^$/d')
}
inputs() {
    echo "nvcc-memo-1"
    id_of "$nvcc" && id_of g++ || return 1
    echo "PATH=$PATH"
    echo "NVCC_PREPEND_FLAGS=${NVCC_PREPEND_FLAGS:-} NVCC_APPEND_FLAGS=${NVCC_APPEND_FLAGS:-}"
    printf '%s\n' "${keyargs[@]}"
    for s in "${sources[@]}"; do
        deps "$s" || return 1
    done
    [ ${#objects[@]} -eq 0 ] || sha256sum -- "${objects[@]}" | cut -c1-64
}
all=$(inputs) || exec "$nvcc" "${mflags[@]}" "${sources[@]}" "${objects[@]}" -o "$out"
key=$(sha256sum <<<"$all" | cut -c1-64)
entry=$memo/$key
if [ -f "$entry/rc" ] && cp -- "$entry/out" "$out" 2>/dev/null; then
    cat -- "$entry/stdout"
    cat -- "$entry/stderr" >&2
    exit "$(cat -- "$entry/rc")"
fi
mkdir -p -- "$memo" || exec "$nvcc" "${mflags[@]}" "${sources[@]}" "${objects[@]}" -o "$out"
tmp=$(mktemp -d "$memo/.new.XXXXXX") || exit 2
"$nvcc" "${mflags[@]}" "${sources[@]}" "${objects[@]}" -o "$out" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
cat -- "$tmp/stdout"
cat -- "$tmp/stderr" >&2
if [ $rc -eq 0 ] && cp -- "$out" "$tmp/out" && echo 0 >"$tmp/rc"; then
    mv -T -- "$tmp" "$entry" 2>/dev/null || rm -rf -- "$tmp"   # a concurrent twin got there first
else
    rm -rf -- "$tmp"
fi
exit $rc
