/* test_search_archive.c - the population (harness/archive.c,
 * harness/features.c): the cell descriptors and code features, the cell
 * update rule, the seeded choice of parents and the inspirations (never a
 * surely beaten elite). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "rundb.h"

static void add_shape(kiln_verdict *v, const char *id, int visible, int timed, double speedup)
{
    kiln_shape_result *r = &v->results[v->nresults++];
    snprintf(r->id, sizeof r->id, "%s", id);
    r->visible = visible;
    r->timed = timed;
    r->speedup = speedup;
}

static void test_wins_bucket(void **state)
{
    (void)state;
    assert_string_equal(kiln_wins_bucket(0, 4), "none");
    assert_string_equal(kiln_wins_bucket(1, 4), "some");
    assert_string_equal(kiln_wins_bucket(2, 4), "most");
    assert_string_equal(kiln_wins_bucket(3, 4), "most");
    assert_string_equal(kiln_wins_bucket(4, 4), "all");
    assert_string_equal(kiln_wins_bucket(0, 0), "none");
    assert_string_equal(kiln_wins_bucket(1, 3), "some");
}

/* Hidden and untimed shapes count for nothing; the first knob names the
 * source's half of the cell. */
static void test_cell(void **state)
{
    (void)state;
    static kiln_verdict v;
    memset(&v, 0, sizeof v);
    add_shape(&v, "v1", 1, 1, 1.5);
    add_shape(&v, "v2", 1, 1, 0.8);
    add_shape(&v, "v3", 1, 0, 9.0);   /* untimed */
    add_shape(&v, "h1", 0, 1, 9.0);   /* hidden */
    char cell[KILN_CELL_MAX];
    const char *src = "#define BLOCK 256 //@kiln tune 128 256 512\n"
                      "#define UNROLL 2 //@kiln tune 1 2 4\nvoid f(void) {}\n";
    kiln_archive_cell(&v, src, cell, sizeof cell);
    assert_string_equal(cell, "most.BLOCK256");
    kiln_archive_cell(&v, "void f(void) {}\n", cell, sizeof cell);
    assert_string_equal(cell, "most.noknob");
    v.results[1].speedup = 1.01;
    kiln_archive_cell(&v, NULL, cell, sizeof cell);
    assert_string_equal(cell, "all.noknob");
    kiln_archive_cell(NULL, NULL, cell, sizeof cell);
    assert_string_equal(cell, "none.noknob");
}

static kiln_elite elite(const char *cell, int n, double speedup)
{
    kiln_elite e = {.n = n, .speedup = speedup, .lo = speedup * 0.9, .hi = speedup * 1.1};
    snprintf(e.cell, sizeof e.cell, "%s", cell);
    snprintf(e.commit, sizeof e.commit, "%040d", n);
    return e;
}

/* An empty cell takes anyone; a taken cell only a higher objective (a tie
 * keeps the incumbent); a full archive takes no new cell. */
static void test_offer(void **state)
{
    (void)state;
    kiln_elite a[3];
    int n = 0;
    kiln_elite e1 = elite("all.noknob", 1, 1.2), e2 = elite("some.noknob", 2, 0.9);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &e1), 0);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &e2), 1);
    kiln_elite worse = elite("all.noknob", 3, 1.1), tie = elite("all.noknob", 4, 1.2);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &worse), -1);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &tie), -1);
    assert_int_equal(a[0].n, 1);
    kiln_elite better = elite("all.noknob", 5, 1.3);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &better), 0);
    assert_int_equal(a[0].n, 5);
    assert_int_equal(n, 2);
    kiln_elite e6 = elite("most.noknob", 6, 1.0), e7 = elite("none.noknob", 7, 0.5);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &e6), 2);
    assert_int_equal(kiln_archive_offer(a, &n, 3, &e7), -1);
    assert_int_equal(n, 3);
    assert_int_equal(kiln_archive_best(a, n), 0);
    assert_int_equal(kiln_archive_best(a, 0), -1);
}

/* The same seed and iteration give the same parent; over many iterations
 * the best comes about p_best of the time and every elite is drawn but
 * "d": 0.5x [0.45, 0.55], below every other's lower end, surely beaten. */
static void test_pick(void **state)
{
    (void)state;
    kiln_elite a[4] = {elite("a", 0, 1.0), elite("b", 1, 2.0), elite("c", 2, 1.5),
                       elite("d", 3, 0.5)};
    assert_int_equal(kiln_archive_pick(a, 0, 0.5, 1, 1), -1);
    int best = 0, drawn[4] = {0}, differ = 0;
    for (int it = 1; it <= 2000; it++) {
        int p = kiln_archive_pick(a, 4, 0.5, 7, it);
        assert_int_equal(p, kiln_archive_pick(a, 4, 0.5, 7, it));
        differ |= p != kiln_archive_pick(a, 4, 0.5, 8, it);
        if (p < 0)
            best++;
        else
            drawn[p]++;
    }
    assert_true(best > 850 && best < 1150);
    for (int i = 0; i < 3; i++)
        assert_true(drawn[i] > 250);
    assert_int_equal(drawn[3], 0);
    assert_true(differ);   /* another seed, another sequence */
    for (int it = 1; it < 50; it++) {
        assert_true(kiln_archive_pick(a, 4, 1.0, 3, it) == -1);
        assert_true(kiln_archive_pick(a, 4, 0.0, 3, it) >= 0);
    }
}

static void test_inspirations(void **state)
{
    (void)state;
    kiln_elite a[4] = {elite("a", 0, 1.0), elite("b", 1, 2.0), elite("c", 2, 1.5),
                       elite("d", 3, 0.5)};
    int out[4];
    assert_int_equal(kiln_archive_inspirations(a, 4, 1, out, 2), 2);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 0);
    /* "d" (0.5x [0.45, 0.55]) is surely beaten by all three others. */
    assert_int_equal(kiln_archive_inspirations(a, 4, -1, out, 4), 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 0);
    assert_int_equal(kiln_archive_inspirations(a, 1, 0, out, 3), 0);
}

static kiln_elite elite_in(const char *cell, int n, double speedup, double lo, double hi)
{
    kiln_elite e = elite(cell, n, speedup);
    e.lo = lo;
    e.hi = hi;
    return e;
}

/* The run of issue 35: the untouched start kernel (1.00x) next to an 8.7x
 * and a 1.3x kernel is surely beaten by both, so it is never drawn nor
 * shown; one kept kernel whose lower end is not above its upper end is
 * enough to keep it in. */
static void test_surely_beaten(void **state)
{
    (void)state;
    kiln_elite a[4] = {elite_in("all.noknob", 0, 1.00, 0.98, 1.02),
                       elite_in("all.v256-omp", 5, 8.7, 8.5, 8.9),
                       elite_in("all.rs", 3, 1.3, 1.25, 1.35),
                       elite_in("some.rs", 4, 1.01, 0.99, 1.03)};
    assert_int_equal(kiln_archive_surely_beaten(a, 3, 0), 1);
    assert_int_equal(kiln_archive_surely_beaten(a, 3, 1), 0);   /* the best, never */
    assert_int_equal(kiln_archive_surely_beaten(a, 3, 2), 0);   /* 8.5 > 1.35 but 0.98 is not */
    assert_int_equal(kiln_archive_surely_beaten(a, 4, 0), 0);   /* 0.99 is not above 1.02 */
    assert_int_equal(kiln_archive_surely_beaten(a, 1, 0), 0);   /* alone: nobody beats it */
    assert_int_equal(kiln_archive_surely_beaten(a, 3, 3), 0);   /* out of range */
    assert_int_equal(kiln_archive_surely_beaten(a, 3, -1), 0);
    kiln_elite ties[2] = {elite_in("a", 0, 1.0, 0.9, 1.1), elite_in("b", 1, 2.0, 1.1, 2.2)};
    assert_int_equal(kiln_archive_surely_beaten(ties, 2, 0), 0);   /* equal ends: not surely */
    kiln_elite open[2] = {elite_in("a", 0, 1.0, 0, 0), elite_in("b", 1, 9.0, 8.0, 10.0)};
    assert_int_equal(kiln_archive_surely_beaten(open, 2, 0), 0);   /* no upper end known */
    int drawn[3] = {0}, best = 0;
    for (int it = 1; it <= 600; it++) {
        int p = kiln_archive_pick(a, 3, 0.0, 11, it);
        assert_true(p >= -1 && p < 3);
        if (p < 0)
            best++;
        else
            drawn[p]++;
    }
    assert_int_equal(best, 0);
    assert_int_equal(drawn[0], 0);
    assert_true(drawn[1] > 200 && drawn[2] > 200);
    int out[3];
    assert_int_equal(kiln_archive_inspirations(a, 3, 1, out, 3), 1);
    assert_int_equal(out[0], 2);
    assert_int_equal(kiln_archive_inspirations(a, 4, 1, out, 3), 3);
    assert_int_equal(out[2], 0);   /* kept in by #4, shown last */
}

static void features_are(const char *src, const char *want)
{
    char got[KILN_CELL_MAX];
    kiln_code_features(src, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("features of:\n%s\ngot \"%s\", want \"%s\"", src, got, want);
}

/* Each feature from its own source; comments and literals count for
 * nothing; a count of 1 asks for no unrolling. */
static void test_features(void **state)
{
    (void)state;
    features_are("void f(const float *x, float *y, int n)\n{\n    for (int i = 0; i < n; i++)\n"
                 "        y[i] = x[i];\n}\n", "");
    features_are(NULL, "");
    features_are("#include <immintrin.h>\nvoid f(float *restrict y) { __m256 v = "
                 "_mm256_setzero_ps(); _mm_prefetch(0, 0); }\n", "v256-rs");
    features_are("__m512 a; __m128 b;", "v512");
    features_are("_mm_add_ps(a, b);", "v128");
    features_are("_mm_prefetch(p, 3);", "");
    features_are("#include <arm_neon.h>\nfloat32x4_t a = vld1q_f32(p); int8x16_t b;", "v128");
    features_are("typedef float v8 __attribute__((vector_size(32)));", "v256");
    features_are("float4 a = reinterpret_cast<const float4 *>(x)[i];", "v128");
    features_are("double4 d; float2 e;", "v256");
    features_are("__half2 h = __floats2half2_rn(a, b);", "v32");
    features_are("auto p = make_float2(a, b); float3 c; dim3 g;", "v64");
    features_are("#pragma unroll 4\nfor (;;) {}\n#pragma unroll 8\n", "u8");
    features_are("  #pragma unroll\nfor (;;) {}\n", "u");
    features_are("#pragma unroll 1\nfor (;;) {}\n", "");
    features_are("#pragma GCC unroll 16\n", "u16");
    features_are("#pragma clang loop unroll_count(2)\n", "u2");
    features_are("__global__ void k() { extern __shared__ float sh[]; v += __shfl_xor_sync(m, v, "
                 "16); }", "shm-shfl");
    features_are("#pragma omp parallel for simd\nfor (;;) {}", "omp");
    features_are("# pragma omp simd\n", "omp");
    features_are("const float *__restrict__ x; float *__restrict y;", "rs");
    /* Not code: comments, strings, characters, words that only contain a
     * feature's name, a #pragma that is not at a line's start. */
    features_are("// float4 restrict __shared__\n/* #pragma omp\n __m256 */ const char *s = "
                 "\"float4 _mm256_add_ps\"; char c = '\\''; int restricted, float4x, x2;\n"
                 "int n = 10e4; /* #pragma unroll 4 */ x = a # pragma_unroll;\n", "");
    features_are("#pragma omp parallel for \\\n    schedule(static)\n#pragma unroll 4\n"
                 "double2 d; float *restrict p; __shared__ int s[4]; __shfl_sync(1, 2, 3);\n",
                 "v128-u4-shm-shfl-omp-rs");
    char small[5];
    kiln_code_features("float4 a; float *restrict p;", small, sizeof small);
    assert_string_equal(small, "v128");   /* cut, not overrun */
}

/* The start kernel and a model's rewrite of it (no knobs in either) no
 * longer share a cell. */
static void test_cell_features(void **state)
{
    (void)state;
    static kiln_verdict v;
    memset(&v, 0, sizeof v);
    add_shape(&v, "v1", 1, 1, 1.0);
    add_shape(&v, "v2", 1, 1, 1.2);
    const char *starter = "void f(const float *x, float *y, long n)\n{\n    for (long i = 0; "
                          "i < n; i++)\n        y[i] = 2 * x[i];\n}\n";
    const char *rewrite = "#include <immintrin.h>\nvoid f(const float *restrict x, float "
                          "*restrict y, long n)\n{\n    long i = 0;\n    for (; i + 8 <= n; "
                          "i += 8)\n        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_set1_ps"
                          "(2), _mm256_loadu_ps(x + i)));\n    for (; i < n; i++)\n        "
                          "y[i] = 2 * x[i];\n}\n";
    char a[KILN_CELL_MAX], b[KILN_CELL_MAX];
    kiln_archive_cell(&v, starter, a, sizeof a);
    kiln_archive_cell(&v, rewrite, b, sizeof b);
    assert_string_equal(a, "most.noknob");
    assert_string_equal(b, "most.v256-rs");
    /* A knob still names the cell, whatever the code uses. */
    kiln_archive_cell(&v, "#define B 4 //@kiln tune 2 4\nfloat4 q;\n", b, sizeof b);
    assert_string_equal(b, "most.B4");
}

/* The archive table round-trips, a cell's row is replaced, and a version 4
 * database (no archive, no runs.parents) is upgraded on open. */
static void test_db(void **state)
{
    (void)state;
    char path[] = "/tmp/kiln-archive-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    sqlite3 *db;
    kiln_error err;
    assert_int_equal(kiln_db_open(&db, path, &err), 0);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE archive; ALTER TABLE runs DROP COLUMN parents;"
                                  " PRAGMA user_version=4", NULL, NULL, NULL), SQLITE_OK);
    kiln_db_close(db);
    assert_int_equal(kiln_db_open(&db, path, &err), 0);
    kiln_run r = {.id = "r1", .task = "t", .parents = "archive"}, back;
    assert_int_equal(kiln_db_run_insert(db, &r, &err), 0);
    assert_int_equal(kiln_db_run_get(db, "r1", &back, &err), 1);
    assert_string_equal(back.parents, "archive");
    kiln_elite e1 = elite("all.noknob", 1, 1.2), e2 = elite("some.noknob", 2, 0.9);
    kiln_elite e3 = elite("all.noknob", 3, 1.4);
    assert_int_equal(kiln_db_archive_put(db, "r1", &e1, &err), 0);
    assert_int_equal(kiln_db_archive_put(db, "r1", &e2, &err), 0);
    assert_int_equal(kiln_db_archive_put(db, "r1", &e3, &err), 0);
    kiln_elite *a;
    int n;
    assert_int_equal(kiln_db_archive(db, "r1", &a, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(a[0].cell, "all.noknob");
    assert_int_equal(a[0].n, 3);
    assert_true(a[0].lo > 1.25 && a[0].hi < 1.55);
    assert_string_equal(a[0].commit, e3.commit);
    free(a);
    assert_int_equal(kiln_db_archive(db, "other", &a, &n, &err), 0);
    assert_int_equal(n, 0);
    free(a);
    kiln_db_close(db);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wins_bucket), cmocka_unit_test(test_cell),
        cmocka_unit_test(test_offer),       cmocka_unit_test(test_pick),
        cmocka_unit_test(test_inspirations), cmocka_unit_test(test_surely_beaten),
        cmocka_unit_test(test_features),    cmocka_unit_test(test_cell_features),
        cmocka_unit_test(test_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
