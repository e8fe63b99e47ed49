/* test_lessons_rank.c - ranking quality of lesson retrieval as a regression
 * test: loads the fixture lessons (tests/unit/fixtures/lessons.json) into an
 * in-memory database, asks kiln_lessons_for_prompt for the top 3 of each
 * fixture query, and checks the mean precision at 3 against the measured
 * value (docs/knowledge.md) minus a small margin.
 *
 * Precision at 3 of a query = relevant lessons in its top 3 divided by
 * min(3, number of relevant lessons), so a query with two relevant lessons
 * scores 1.0 when both are in the top 3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "lessons.h"

/* Measured with RRF k=60, weights bm25 1.0 / confidence 0.25 / recency 0.25
 * (knowledge/retrieve.c); keep in step with docs/knowledge.md. */
#define MEASURED_P3 0.917
#define MARGIN 0.05

static const char *fixture_path;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

static void load_lesson(sqlite3 *db, const cJSON *o, double now)
{
    kiln_lesson l;
    long long id = 0;
    kiln_error err = {0};
    const cJSON *t;
    kiln_lesson_init(&l);
    snprintf(l.situation, sizeof l.situation, "%s",
             cJSON_GetObjectItem(o, "situation")->valuestring);
    snprintf(l.action, sizeof l.action, "%s", cJSON_GetObjectItem(o, "action")->valuestring);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(o, "tags"))
        snprintf(l.tags[l.ntags++], KILN_TAG_MAX, "%s", t->valuestring);
    l.confidence = cJSON_GetObjectItem(o, "confidence")->valuedouble;
    /* Ages spread the lessons over two months so recency has a say. */
    l.created = l.updated = now - cJSON_GetObjectItem(o, "age_days")->valuedouble * 86400.0;
    if (kiln_lesson_add(db, &l, &id, &err) < 0)
        fail_msg("adding a fixture lesson: %s", err.msg);
    /* Fresh database: ids are assigned in order, so they match the fixture's. */
    assert_int_equal(id, (long long)cJSON_GetObjectItem(o, "id")->valuedouble);
}

static double query_precision(sqlite3 *db, const cJSON *q, int qn)
{
    const char *tags[16];
    int ntags = 0, n = 0, hits = 0, nrel = 0;
    long long ids[3];
    char *text = NULL;
    kiln_error err = {0};
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(q, "tags"))
        tags[ntags++] = t->valuestring;
    kiln_lesson_query kq = {.tags = tags, .ntags = ntags,
                            .context = cJSON_GetObjectItem(q, "context")->valuestring,
                            .budget_chars = 100000, .max_lessons = 3};
    assert_int_equal(kiln_lessons_for_prompt(db, &kq, &text, ids, 3, &n, &err), 0);
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(q, "relevant")) {
        nrel++;
        for (int i = 0; i < n; i++)
            hits += ids[i] == (long long)t->valuedouble;
    }
    for (int i = 0; i < n; i++)
        assert_int_not_equal(ids[i], 60);   /* below the confidence floor */
    double p = (double)hits / (nrel < 3 ? nrel : 3);
    printf("query %2d: top3 =", qn);
    for (int i = 0; i < n; i++)
        printf(" #%lld", ids[i]);
    printf("  p@3 = %.2f  (%s)\n", p, kq.context);
    free(text);
    return p;
}

static void test_precision_at_3(void **state)
{
    (void)state;
    char *text = slurp(fixture_path);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    sqlite3 *db = NULL;
    kiln_error err = {0};
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(kiln_knowledge_schema(db, &err), 0);
    const cJSON *o, *lessons = cJSON_GetObjectItem(root, "lessons"), *queries = cJSON_GetObjectItem(root, "queries");
    assert_true(cJSON_GetArraySize(lessons) >= 50);
    assert_true(cJSON_GetArraySize(queries) >= 12);
    double now = 1.8e9, sum = 0;
    cJSON_ArrayForEach(o, lessons)
        load_lesson(db, o, now);
    int qn = 0;
    cJSON_ArrayForEach(o, queries)
        sum += query_precision(db, o, ++qn);
    double mean = sum / qn;
    printf("precision@3 over %d queries: %.3f (regression floor %.3f)\n", qn, mean,
           MEASURED_P3 - MARGIN);
    assert_true(mean >= MEASURED_P3 - MARGIN);
    sqlite3_close(db);
    cJSON_Delete(root);
    free(text);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s tests/unit/fixtures/lessons.json\n", argv[0]);
        return 2;
    }
    fixture_path = argv[1];
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_precision_at_3)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
