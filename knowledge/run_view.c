/* run_view.c - what one run recorded in and read from the lessons tables,
 * for kiln status and kiln report (see lessons.h). The database may be
 * older than these tables, or hold an older form of them, so each query
 * asks first what is there, and nothing here fails. */
#include "lessons_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the database has the table. */
static int table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* 1 when the table has the column. */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    /* pragma_table_info takes the table name as a bound value: no quoting. */
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* The count a "SELECT count(*) ... WHERE run=?1" gives; -1 when it fails. */
static int count_where_run(sqlite3 *db, const char *sql, const char *run)
{
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

int kiln_lessons_present(sqlite3 *db)
{
    return table_exists(db, "lessons");
}

void kiln_lessons_run_counts(sqlite3 *db, const char *run, int *created, int *shown)
{
    *created = *shown = -1;
    if (table_exists(db, "lessons") && has_column(db, "lessons", "run"))
        *created = count_where_run(db, "SELECT count(*) FROM lessons WHERE run=?1", run);
    if (table_exists(db, "lesson_shown") && has_column(db, "lesson_shown", "run"))
        *shown = count_where_run(db, "SELECT count(*) FROM lesson_shown WHERE run=?1", run);
}

/* Append the statement's current row to t; -1 out of memory. */
static int add_row(kiln_lesson_table *t, sqlite3_stmt *st)
{
    size_t cells = (size_t)(t->nrow + 1) * (size_t)t->ncol;
    char **text = realloc(t->text, cells * sizeof *text);
    if (!text)
        return -1;
    t->text = text;
    double *num = realloc(t->num, cells * sizeof *num);
    if (!num)
        return -1;
    t->num = num;
    for (int i = 0; i < t->ncol; i++) {
        const unsigned char *s = sqlite3_column_text(st, i);
        size_t k = (size_t)t->nrow * (size_t)t->ncol + (size_t)i;
        text[k] = s ? strdup((const char *)s) : NULL;
        num[k] = sqlite3_column_double(st, i);
    }
    t->nrow++;
    return 0;
}

/* The rows of sql (run bound to ?1) into t, with its column names;
 * returns the number of rows (0 when the query fails). */
static int query_rows(sqlite3 *db, const char *sql, const char *run, kiln_lesson_table *t)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    int ncol = sqlite3_column_count(st);
    t->names = calloc((size_t)ncol, sizeof *t->names);
    if (t->names) {
        t->ncol = ncol;
        for (int i = 0; i < ncol; i++) {
            const char *name = sqlite3_column_name(st, i);
            t->names[i] = strdup(name ? name : "");
        }
        while (sqlite3_step(st) == SQLITE_ROW && add_row(t, st) == 0) {
        }
    }
    sqlite3_finalize(st);
    return t->nrow;
}

/* "a, b, c" of the wanted columns the table has (names from a fixed list). */
static void columns(sqlite3 *db, const char *table, const char *const *want, char *buf, size_t len)
{
    buf[0] = '\0';
    for (; *want; want++)
        if (has_column(db, table, *want) && strlen(buf) + strlen(*want) + 3 < len)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", *want);
}

int kiln_lessons_run_created(sqlite3 *db, const char *run, kiln_lesson_table *t)
{
    static const char *const want[] = {"id", "kind", "situation", "action", "status", "confidence",
                                       "created_at", NULL};
    char cols[256], sql[512];
    memset(t, 0, sizeof *t);
    columns(db, "lessons", want, cols, sizeof cols);
    if (!cols[0] || !has_column(db, "lessons", "run"))
        return 0;
    snprintf(sql, sizeof sql, "SELECT %s FROM lessons WHERE run=?1 ORDER BY rowid LIMIT 200", cols);
    return query_rows(db, sql, run, t);
}

int kiln_lessons_run_shown(sqlite3 *db, const char *run, kiln_lesson_table *t)
{
    char sql[512];
    memset(t, 0, sizeof *t);
    /* The lesson's column is read under either of its names. */
    const char *lcol = has_column(db, "lesson_shown", "lesson")      ? "lesson"
                       : has_column(db, "lesson_shown", "lesson_id") ? "lesson_id"
                                                                     : NULL;
    if (!lcol || !has_column(db, "lesson_shown", "run") || !has_column(db, "lessons", "situation"))
        return 0;
    snprintf(sql, sizeof sql, "SELECT s.%s AS lesson, count(*) AS prompts, l.situation, l.action"
             " FROM lesson_shown s LEFT JOIN lessons l ON l.id = s.%s WHERE s.run=?1"
             " GROUP BY s.%s ORDER BY 2 DESC LIMIT 200", lcol, lcol, lcol);
    return query_rows(db, sql, run, t);
}

void kiln_lesson_table_free(kiln_lesson_table *t)
{
    for (int i = 0; t->names && i < t->ncol; i++)
        free(t->names[i]);
    for (size_t k = 0; t->text && k < (size_t)t->nrow * (size_t)t->ncol; k++)
        free(t->text[k]);
    free(t->names);
    free(t->text);
    free(t->num);
    memset(t, 0, sizeof *t);
}
