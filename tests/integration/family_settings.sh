# family_settings.sh - the settings of a CUDA kernel family that the tests
# check (sourced by family_compile_test.sh and tunable_cuda_test.sh):
#   family_settings FILE N SEED   prints one setting a line, "NAME=V ..."
#                                 ("" is the default): the default, each
#                                 knob at its smallest and largest value
#                                 (where that is not the default), then N
#                                 drawn with a fixed seed (Park-Miller, so
#                                 the same ones on every machine)
#   family_apply FILE SETTING OUT writes FILE with SETTING's values to OUT
# A knob is a line "#define NAME VALUE //@kiln tune V1 V2 ..." (docs/cuda.md).

family_settings() {
    awk -v n="$2" -v seed="$3" '
        /^#define [A-Z_][A-Z0-9_]* -?[0-9]+ \/\/@kiln tune / {
            k++; name[k] = $2; def[k] = $3; nv[k] = NF - 5
            for (j = 1; j <= nv[k]; j++) val[k, j] = $(j + 5)
        }
        END {
            print ""
            for (i = 1; i <= k; i++) {
                lo = val[i, 1]; hi = val[i, 1]
                for (j = 2; j <= nv[i]; j++) {
                    if (val[i, j] + 0 < lo + 0) lo = val[i, j]
                    if (val[i, j] + 0 > hi + 0) hi = val[i, j]
                }
                if (lo != def[i]) print name[i] "=" lo
                if (hi != def[i] && hi != lo) print name[i] "=" hi
            }
            s = seed
            for (r = 0; r < n; r++) {
                line = ""
                for (i = 1; i <= k; i++) {
                    s = (s * 16807) % 2147483647
                    line = line (i > 1 ? " " : "") name[i] "=" val[i, s % nv[i] + 1]
                }
                print line
            }
        }' "$1"
}

family_apply() {
    local args=() kv
    for kv in $2; do
        args+=(-e "s|^#define ${kv%%=*} -\\?[0-9]* //@kiln tune |#define ${kv%%=*} ${kv#*=} //@kiln tune |")
    done
    if [ ${#args[@]} -eq 0 ]; then
        cp -- "$1" "$3"
    else
        sed "${args[@]}" -- "$1" > "$3"
    fi
}
