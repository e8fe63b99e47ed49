/* lessons_int.h - helpers shared by the knowledge layer's source files (not
 * part of its public API). */
#ifndef KILN_LESSONS_INT_H
#define KILN_LESSONS_INT_H

#include "lessons.h"

/* The columns kn_read_row expects, in order, for "SELECT <KN_COLUMNS> FROM lessons l". */
#define KN_COLUMNS                                                                            \
    "l.id, l.kind, l.situation, l.action, l.change, l.evidence, l.run, l.candidate, l.effect," \
    " l.source, l.status, l.retired_reason, l.shown, l.helped, l.hurt, l.confidence,"        \
    " l.created_at, l.updated_at, coalesce(l.last_used_at, 0)"

double kn_now(void);
int kn_db_fail(sqlite3 *db, kiln_error *err, const char *what);
int kn_exec(sqlite3 *db, const char *sql, kiln_error *err);
/* BEGIN IMMEDIATE / COMMIT / ROLLBACK: a read-modify-write takes the write
 * lock first, so the busy timeout (not SQLITE_BUSY) handles a concurrent writer. */
int kn_begin(sqlite3 *db, kiln_error *err);
int kn_commit(sqlite3 *db, kiln_error *err);
void kn_rollback(sqlite3 *db);
/* Fill l from a statement selecting KN_COLUMNS at column 0; then its tags. */
void kn_read_row(sqlite3_stmt *st, kiln_lesson *l);
int kn_read_tags(sqlite3 *db, kiln_lesson *l, kiln_error *err);
/* Replace a lesson's tags. */
int kn_set_tags(sqlite3 *db, long long id, const char (*tags)[KILN_TAG_MAX], int ntags,
                kiln_error *err);
/* Copy at most cap-1 bytes without cutting a UTF-8 sequence in half. */
void kn_copy(char *dst, size_t cap, const char *src);
/* Default starting confidence of a source. */
double kn_source_confidence(const char *source);
/* The scope tags as a JSON array text for json_each(); malloc'd. */
char *kn_tags_json(const char *const *tags, int ntags);

/* The synonym group (NULL-terminated entries) naming the words at tok[0],
 * or NULL; *used: how many of the ntok words it took (synonyms.c). */
const char *const *kn_synonyms(const char *const *tok, const size_t *len, int ntok, int *used);

#endif
