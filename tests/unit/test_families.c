/* test_families.c - cmocka tests of the CUDA kernel families
 * (kernels/<task>/cuda/tunable.cu) that need no GPU:
 *  - the neutral default: every knob starts at the first value it lists
 *    (docs/cuda.md), and the header explains every knob on a line
 *    "*   NAME  ..." (the prompt shows the source);
 *  - every setting's manifest resolves at every shape a job can draw:
 *    each CUDA group's visible and hidden shapes, shapes drawn from its
 *    random ranges, and edge shapes (1 x 1, odd and huge widths), for
 *    every CUDA dtype, with exactly one launch; a cluster is used only
 *    where each of its CTAs gets a vector per thread of the row, and a
 *    cluster of more than 8 CTAs asks for at most 100 KiB of shared
 *    memory a CTA (two CTAs share an SM; see the kernels);
 *  - settings: the default, every knob at its smallest and largest value,
 *    and 300 drawn with a fixed seed.
 * Whether the kernels compute the right thing is kiln verify's business
 * (tests/integration/tunable_cuda_test.sh, on a GPU).
 *
 * Usage: test_families SOURCE_DIR (the repository root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "task.h"
#include "tune.h"

static const char *root = ".";

#define MAX_SHAPES 256

typedef struct family {
    const char *task;
    kiln_task t;
    char *src;
    kiln_knob k[KILN_KNOBS_MAX];
    int nk;
    kiln_shape shapes[MAX_SHAPES];
    int nshapes;
} family;

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(n > 0);
    return buf;
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void add_shape(family *F, int64_t rows, int64_t cols)
{
    assert_true(F->nshapes < MAX_SHAPES);
    kiln_shape s = {{0}};
    s.d[0] = rows;
    s.d[1] = cols;
    F->shapes[F->nshapes++] = s;
}

/* Every CUDA group's shapes, drawn ones, and edge shapes. */
static void collect_shapes(family *F)
{
    static const int64_t edge[][2] = {{1, 1}, {1, 2}, {3, 1}, {1, 7}, {2, 9}, {65537, 1},
                                      {1, 262147}, {2, 1048583}, {5, 4194304}, {70000, 8},
                                      {1, 65536}, {100000, 4096}, {3, 131072}};
    uint64_t seed = 33;
    for (int g = 0; g < F->t.ngroups; g++) {
        const kiln_group *gr = &F->t.groups[g];
        if (!(gr->backends & KILN_GROUP_CUDA))
            continue;
        for (int i = 0; i < gr->nvisible; i++)
            add_shape(F, gr->visible[i].d[0], gr->visible[i].d[1]);
        for (int i = 0; i < gr->nhidden; i++)
            add_shape(F, gr->hidden[i].d[0], gr->hidden[i].d[1]);
        for (int i = 0; i < (gr->nrandom ? 8 : 0); i++) {
            int64_t d[2];
            for (int k = 0; k < 2; k++)
                d[k] = gr->range_lo[k] +
                       (int64_t)(rng_next(&seed) % (uint64_t)(gr->range_hi[k] - gr->range_lo[k] + 1));
            add_shape(F, d[0], d[1]);
        }
    }
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        add_shape(F, edge[i][0], edge[i][1]);
}

static void load_family(family *F, const char *task)
{
    char path[4096];
    kiln_error err = {0};
    F->task = task;
    snprintf(path, sizeof path, "%s/tasks/%s", root, task);
    if (kiln_task_load(path, &F->t, &err) != 0)
        fail_msg("%s: %s", task, err.msg);
    snprintf(path, sizeof path, "%s/kernels/%s/cuda/tunable.cu", root, task);
    F->src = read_text(path);
    F->nk = kiln_knobs_parse(F->src, F->k, KILN_KNOBS_MAX, &err);
    if (F->nk < 0)
        fail_msg("%s: %s", task, err.msg);
    collect_shapes(F);
}

static long long knob_of(const family *F, const char vals[][64], const char *name)
{
    for (int i = 0; i < F->nk; i++)
        if (strcmp(F->k[i].name, name) == 0)
            return atoll(vals[i]);
    fail_msg("%s: no knob %s", F->task, name);
    return 0;
}

/* One setting at every shape and dtype. */
static void check_setting(const family *F, const char vals[][64], const char *what)
{
    char *src = kiln_knobs_apply(F->src, F->k, F->nk, vals);
    assert_non_null(src);
    kiln_manifest *m = calloc(1, sizeof *m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_true(m && rq);
    kiln_error err = {0};
    if (kiln_manifest_parse(src, strlen(src), &F->t, m, &err) != 0)
        fail_msg("%s %s: %s", F->task, what, err.msg);
    const long long tpr = knob_of(F, vals, "TPR");
    for (int d = 0; d < F->t.ncuda_dtypes; d++) {
        kiln_dtype dt = F->t.cuda_dtypes[d];
        const int64_t esize = dt == KILN_DT_F32 ? 4 : 2;
        for (int s = 0; s < F->nshapes; s++) {
            const kiln_shape *sh = &F->shapes[s];
            if (kiln_manifest_resolve(m, &F->t, dt, sh, NULL, rq, &err) != 0)
                fail_msg("%s %s dtype %d at %lldx%lld: %s", F->task, what, (int)dt,
                         (long long)sh->d[0], (long long)sh->d[1], err.msg);
            if (rq->nlaunches != 1)
                fail_msg("%s %s at %lldx%lld: %u launches", F->task, what,
                         (long long)sh->d[0], (long long)sh->d[1], rq->nlaunches);
            const kiln_wire_launch *L = &rq->launches[0];
            const int64_t ce = L->cluster[0] ? L->cluster[0] : 1;
            if (L->cluster[0] && (L->cluster[1] != 1 || L->cluster[2] != 1))
                fail_msg("%s %s: a cluster not along x", F->task, what);
            if (ce > 1 && sh->d[1] * esize / 16 < ce * tpr)
                fail_msg("%s %s at %lldx%lld: a cluster of %lld for a row that narrow",
                         F->task, what, (long long)sh->d[0], (long long)sh->d[1], (long long)ce);
            if (ce > 8 && L->smem > 102400)
                fail_msg("%s %s at %lldx%lld: %u bytes of shared memory in a cluster of %lld",
                         F->task, what, (long long)sh->d[0], (long long)sh->d[1], L->smem,
                         (long long)ce);
            if (L->smem > 225280)
                fail_msg("%s %s: %u bytes of dynamic shared memory leave too little for the "
                         "kernel's own", F->task, what, L->smem);
        }
    }
    free(rq);
    free(m);
    free(src);
}

static void defaults_of(const family *F, char vals[][64])
{
    for (int i = 0; i < F->nk; i++)
        snprintf(vals[i], 64, "%s", F->k[i].value);
}

/* Index of the numerically smallest (or largest) of knob i's values. */
static int extreme(const kiln_knob *k, int largest)
{
    int at = 0;
    for (int j = 1; j < k->nvalues; j++) {
        long long v = atoll(k->values[j]), a = atoll(k->values[at]);
        if (largest ? v > a : v < a)
            at = j;
    }
    return at;
}

static void check_family(const char *task)
{
    family *F = calloc(1, sizeof *F);
    assert_non_null(F);
    load_family(F, task);
    char vals[KILN_KNOBS_MAX][64], what[512];
    /* the neutral default: each knob's first value, each explained */
    for (int i = 0; i < F->nk; i++) {
        char line[96];
        if (strcmp(F->k[i].value, F->k[i].values[0]) != 0)
            fail_msg("%s: knob %s starts at %s, not at its first value %s", task, F->k[i].name,
                     F->k[i].value, F->k[i].values[0]);
        snprintf(line, sizeof line, "\n *   %s ", F->k[i].name);
        if (!strstr(F->src, line))
            fail_msg("%s: the header does not explain knob %s", task, F->k[i].name);
    }
    defaults_of(F, vals);
    check_setting(F, (const char (*)[64])vals, "default");
    for (int i = 0; i < F->nk; i++)
        for (int largest = 0; largest < 2; largest++) {
            defaults_of(F, vals);
            snprintf(vals[i], 64, "%.63s", F->k[i].values[extreme(&F->k[i], largest)]);
            snprintf(what, sizeof what, "%.63s=%.63s", F->k[i].name, vals[i]);
            check_setting(F, (const char (*)[64])vals, what);
        }
    uint64_t seed = 2026;
    for (int r = 0; r < 300; r++) {
        size_t used = 0;
        what[0] = '\0';
        for (int i = 0; i < F->nk; i++) {
            const int j = (int)(rng_next(&seed) % (uint64_t)F->k[i].nvalues);
            snprintf(vals[i], 64, "%s", F->k[i].values[j]);
            used += (size_t)snprintf(what + used, sizeof what - used, "%s%s=%s", i ? " " : "",
                                     F->k[i].name, vals[i]);
            if (used >= sizeof what)
                used = sizeof what - 1;
        }
        check_setting(F, (const char (*)[64])vals, what);
    }
    free(F->src);
    free(F);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    check_family("rmsnorm");
}

static void test_layernorm(void **state)
{
    (void)state;
    check_family("layernorm");
}

static void test_softmax(void **state)
{
    (void)state;
    check_family("softmax");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        root = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_softmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
