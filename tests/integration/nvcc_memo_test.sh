#!/usr/bin/env bash
# nvcc_memo_test.sh - tests/integration/nvcc_memo.sh with a stand-in nvcc
# (a script that "compiles" a source and the header it includes into its
# output, answers -M as nvcc does, and counts its compiles): a repeat at
# another path is served, a changed header or flag is compiled, a failed
# compile is not remembered, and without a memo directory nothing is kept.
#
# usage: nvcc_memo_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
MEMO=$SRC/tests/integration/nvcc_memo.sh
cd "$tmp" || exit 2

# The stand-in: -M prints "x.o : SRC HEADER", a compile writes the flags,
# the source and the header it names (#include "H", found in the -I dir) to
# -o, prints a warning on stderr and counts itself; a source holding
# "error" fails.
cat > fake-nvcc <<'EOF'
#!/usr/bin/env bash
inc= out= src= dep=0 flags=()
while [ $# -gt 0 ]; do
    case $1 in
    -I*) inc=${1#-I}; flags+=("$1") ;;
    -o) out=$2; shift ;;
    -M) dep=1 ;;
    *.cu) src=$1 ;;
    *) flags+=("$1") ;;
    esac
    shift
done
h=$inc/$(sed -n 's/^#include "\(.*\)"/\1/p' "$src")
if [ $dep = 1 ]; then printf 'x.o : %s \\\n    %s\n' "$src" "$h"; exit 0; fi
echo compiled >> "$(dirname "$0")/count"
grep -q error "$src" && { echo "$src: error" >&2; exit 1; }
echo "warning: from $src" >&2
{ echo "${flags[*]}"; cat "$src" "$h"; } > "$out"
EOF
chmod +x fake-nvcc
compiles() { cat count 2>/dev/null | wc -l; }
nv() { KILN_TEST_NVCC_MEMO=$tmp/memo "$MEMO" "$tmp/fake-nvcc" "$@"; }

mkdir -p a/inc b/inc
printf '#include "h.h"\nint main;\n' > a/x.cu
echo "int h1;" > a/inc/h.h
cp a/x.cu b/x.cu
cp a/inc/h.h b/inc/h.h

(cd a && nv -O2 -Iinc -o out x.cu > stdout 2> stderr)
rc=$?
begin
[ $rc -eq 0 ] && [ "$(compiles)" = 1 ] && grep -q "int h1;" a/out && grep -q "warning: from x.cu" a/stderr &&
    [ "$(ls memo | wc -l)" = 1 ] ||
    problem "a first compile: rc $rc, $(compiles) compiles, $(ls memo 2>/dev/null | wc -l) entries"
end "a first compile runs nvcc, passes its text on, and is kept"

nv -O2 -I"$tmp/b/inc" -o "$tmp/b/out" b/x.cu > b/stdout 2> b/stderr
rc=$?
begin
[ $rc -eq 0 ] && [ "$(compiles)" = 1 ] && cmp -s a/out b/out && cmp -s a/stderr b/stderr ||
    problem "a repeat elsewhere: rc $rc, $(compiles) compiles"
end "the same inputs at other paths: the kept output and text, no compile"

echo "int h2;" > b/inc/h.h
nv -O2 -I"$tmp/b/inc" -o "$tmp/b/out" b/x.cu > /dev/null 2>&1
begin
[ "$(compiles)" = 2 ] && grep -q "int h2;" b/out ||
    problem "a changed header: $(compiles) compiles, out: $(tr '\n' ' ' < b/out)"
end "a changed header is compiled"

nv -O3 -I"$tmp/b/inc" -o "$tmp/b/out" b/x.cu > /dev/null 2>&1
begin
[ "$(compiles)" = 3 ] && grep -q "^-O3" b/out ||
    problem "a changed flag: $(compiles) compiles"
end "a changed flag is compiled"

printf '#include "h.h"\nerror\n' > b/y.cu
for i in 1 2; do
    nv -O2 -I"$tmp/b/inc" -o "$tmp/b/yout" b/y.cu > /dev/null 2> b/yerr
    rc=$?
done
begin
[ $rc -eq 1 ] && [ "$(compiles)" = 5 ] && grep -q "error" b/yerr && [ ! -e b/yout ] ||
    problem "a failed compile: rc $rc, $(compiles) compiles"
end "a failed compile fails with nvcc's status and text, and is not kept"

n=$(ls memo | wc -l)
(cd a && "$MEMO" "$tmp/fake-nvcc" -O2 -Iinc -o out2 x.cu > /dev/null 2>&1)
begin
[ "$(compiles)" = 6 ] && [ "$(ls memo | wc -l)" = "$n" ] ||
    problem "without a memo: $(compiles) compiles, $(ls memo | wc -l) entries (was $n)"
end "without KILN_TEST_NVCC_MEMO: nvcc, nothing kept"

t_done
