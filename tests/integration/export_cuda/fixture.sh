# fixture.sh - sourced by the CUDA export tests: make_fixture WS SRC builds
# a workspace as `kiln search --backend cuda` leaves it, without a GPU: a
# run of rmsnorm (cuda, bf16) with three kept candidates, each committed at
# rmsnorm/cuda/kernel.cu on the run's branch and recorded in .kiln/kiln.db
# with a passing verdict whose per-shape speedups make each win some shapes
# of rmsnorm's cuda_groups (small, decode, prefill, large; the CPU groups
# are not the CUDA backend's, so export must not list them):
#   A  kernels/rmsnorm/cuda/starter.cu              (BLOCK 256)
#   B  the same with the knob BLOCK set to 1024
#   C  export_cuda/two_launch.cu (scratch, cluster, >48 KiB shared memory)
# rows=1 cols=2048 is measured by none (the fallback takes it, as it takes
# the prefill shapes and the rest of large); C wins rows=16384 cols=16384,
# where its shared memory (64 KiB) needs the opt-in. rows=4 cols=16384, a
# CPU group's shape, is in the verdicts but must not be exported.
# Expected: k1 = A, k2 = B, k3 = C (order of first use over small, then
# decode); the fallback is B (geomean 1.235 against A 1.17 and C 1.222).
# Needs bash, coreutils, and sqlite3 or python3; git when present.

# rows cols speedup-A speedup-B speedup-C ("-": not measured)
FIXTURE_SHAPES=(
    "32 1024 1.30 1.10 0.90"  "64 4096 1.10 1.40 1.00"  "33 1000 1.20 1.35 -"
    "128 2048 1.05 - 1.15"    "256 4096 1.00 1.10 1.60" "512 2048 1.50 1.20 1.10"
    "1 2048 - - -"            "1 4096 1.40 - 1.00"      "8 4096 1.10 1.30 1.35"
    "16 5120 1.00 1.20 1.55"  "32 8192 - 1.25 1.50"     "16384 16384 - 1.25 1.30"
    "4 16384 - 1.25 1.30"   # a CPU decode shape, no CUDA one: export must ignore it
)

# fixture_verdict COLUMN(3..5) SHA: the record verdict of one candidate.
fixture_verdict() {
    local col=$1 sha=$2 first=1 s
    printf '{"status":"pass","stage":"done","code":"ok","task":"%s","backend":"cuda",' "$FIXTURE_TASK"
    printf '"dtype":"bf16","group":"prefill","shapes":['
    for s in "${FIXTURE_SHAPES[@]}"; do
        set -- $s
        local sp=${!col}
        [ "$sp" = - ] && continue
        local base=20000 cand
        cand=$(awk -v b=$base -v s="$sp" 'BEGIN { printf "%.1f", b / s }')
        [ $first = 1 ] || printf ','
        first=0
        printf '{"id":"v","visible":true,"dims":{"rows":%s,"cols":%s},"dtype":"bf16",' "$1" "$2"
        printf '"time":{"candidate":{"median_ns":%s,"p20_ns":%s,"p80_ns":%s,"count":20},' "$cand" "$cand" "$cand"
        printf '"baseline":{"median_ns":%s,"p20_ns":%s,"p80_ns":%s,"count":20}},' $base $base $base
        printf '"speedup":%s,"roofline_fraction":0.5}' "$sp"
    done
    printf '],"summary":{"geomean_speedup":1.2},"flags":[],'
    printf '"environment":{"cpu":"fixture cpu","host":"fixture","kernel":"6.0",'
    printf '"gpu":{"name":"NVIDIA H200","cc":"9.0","sms":132,"driver":13000}},'
    printf '"source_sha256":"%s","verifier_version":"fixture"}' "$sha"
}

# fixture_commit WS FILE N: commit FILE as TASK/cuda/kernel.cu; prints the id.
fixture_commit() {
    local ws=$1 file=$2 n=$3
    if command -v git >/dev/null; then
        mkdir -p "$ws/$FIXTURE_TASK/cuda"
        cp "$file" "$ws/$FIXTURE_TASK/cuda/kernel.cu"
        # fixed dates: the commits, and so an export of the fixture, are the
        # same bytes every time (tests/integration/nvcc_memo.sh relies on it)
        git -C "$ws" add "$FIXTURE_TASK/cuda/kernel.cu" &&
            GIT_AUTHOR_DATE="@$((1767225600 + n * 60)) +0000" GIT_COMMITTER_DATE="@$((1767225600 + n * 60)) +0000" \
                git -C "$ws" -c user.name=kiln -c user.email=kiln@localhost commit -q \
                -m "$FIXTURE_TASK candidate $n" && git -C "$ws" rev-parse HEAD
    else
        printf '%040d\n' "$n"
    fi
}

fixture_sql_text() { sed "s/'/''/g" "$1"; }

# make_fixture WS SRC [TWO_LAUNCH_SOURCE [TASK]]: returns non-zero on failure.
# TASK (default rmsnorm) must have dims rows and cols: A and B are its CUDA
# starter, C the source given.
make_fixture() {
    local ws=$1 src=$2 c_src=${3:-$2/tests/integration/export_cuda/two_launch.cu}
    FIXTURE_TASK=${4:-rmsnorm}
    local run=20260101-000000-cuda sql=$1/.kiln/fixture.sql i
    mkdir -p "$ws/.kiln" || return 1
    if command -v git >/dev/null; then
        git init -q -b "kiln/$FIXTURE_TASK/$run" "$ws" 2>/dev/null || git init -q "$ws" || return 1
    fi
    cp "$src/kernels/$FIXTURE_TASK/cuda/starter.cu" "$ws/.kiln/a.cu"
    sed 's/^#define BLOCK 256 /#define BLOCK 1024 /' "$src/kernels/$FIXTURE_TASK/cuda/starter.cu" > "$ws/.kiln/b.cu"
    cp "$c_src" "$ws/.kiln/c.cu"
    grep -q '^#define BLOCK 1024 ' "$ws/.kiln/b.cu" || return 1
    {
        echo "CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT,"
        echo " grp TEXT, agent TEXT, model TEXT, seed INTEGER, branch TEXT, start_commit TEXT,"
        echo " head_commit TEXT, status TEXT, iterations_done INTEGER, budget_iterations INTEGER,"
        echo " drafts INTEGER, budget_seconds REAL, seconds_used REAL, budget_tokens INTEGER,"
        echo " tokens_used INTEGER, best_speedup REAL, started_at REAL, updated_at REAL,"
        echo " base_url TEXT, from_path TEXT);"
        echo "CREATE TABLE candidates (run TEXT NOT NULL, n INTEGER NOT NULL, iteration INTEGER,"
        echo " draft INTEGER, parent TEXT, commit_id TEXT, proposer TEXT, state TEXT, hypothesis TEXT,"
        echo " job TEXT, confirm_job TEXT, record_job TEXT, status TEXT, stage TEXT, code TEXT,"
        echo " reason TEXT, decision TEXT, speedup REAL, confirm_speedup REAL,"
        echo " speedup_vs_baseline REAL, roofline REAL, verdict TEXT, confirm_verdict TEXT,"
        echo " record_verdict TEXT, source TEXT, updated_at REAL, PRIMARY KEY (run, n));"
        echo "INSERT INTO runs (id, task, backend, dtype, grp, agent, branch, status, started_at,"
        echo " updated_at) VALUES ('$run', '$FIXTURE_TASK', 'cuda', 'bf16', 'prefill', 'offline',"
        echo " 'kiln/$FIXTURE_TASK/$run', 'done', 1767225600, 1767229200);"
    } > "$sql"
    i=0
    for v in a b c; do
        i=$((i + 1))
        local f=$ws/.kiln/$v.cu commit sha
        commit=$(fixture_commit "$ws" "$f" "$i") || return 1
        sha=$(sha256sum "$f" | cut -d' ' -f1)
        {
            echo "INSERT INTO candidates (run, n, iteration, commit_id, proposer, state, hypothesis,"
            echo " record_job, status, decision, speedup_vs_baseline, record_verdict, source,"
            echo " updated_at) VALUES ('$run', $i, $i, '$commit', 'offline', 'done',"
            echo " 'fixture candidate $v', 'job-$i', 'pass', 'keep', 1.2,"
            echo " '$(fixture_verdict $((i + 2)) "$sha")', '$(fixture_sql_text "$f")' || char(10),"
            echo " $((1767225600 + i * 60)));"
        } >> "$sql"
    done
    if command -v sqlite3 >/dev/null; then
        sqlite3 "$ws/.kiln/kiln.db" < "$sql"
    else
        python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read()); c.commit()' \
            "$ws/.kiln/kiln.db" "$sql"
    fi
}
