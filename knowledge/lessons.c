/* lessons.c - the lessons store: schema, adding and editing lessons, and what
 * the search loop records after each verdict (notes, lessons, prompts shown,
 * outcomes). Ranking lives in retrieve.c, distillation in distill.c. */
#include "lessons_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

/* Every statement is IF NOT EXISTS so that running it again (every upgrade,
 * every test) is harmless. The FTS index is external content over lessons:
 * the text lives once, the triggers keep the index in step. The update
 * trigger fires only when the text changes, not on every counter bump. */
static const char knowledge_schema[] =
    "CREATE TABLE IF NOT EXISTS lessons ("
    " id INTEGER PRIMARY KEY,"
    " kind TEXT NOT NULL DEFAULT 'lesson' CHECK (kind IN ('lesson','note')),"
    " situation TEXT NOT NULL, action TEXT NOT NULL,"
    " change TEXT NOT NULL DEFAULT '', evidence TEXT NOT NULL DEFAULT '{}',"
    " run TEXT NOT NULL DEFAULT '', candidate INTEGER NOT NULL DEFAULT -1,"
    " effect REAL NOT NULL DEFAULT 0,"
    " source TEXT NOT NULL CHECK (source IN ('measured','model','person')),"
    " status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','retired')),"
    " retired_reason TEXT NOT NULL DEFAULT '', merged_into INTEGER,"
    " shown INTEGER NOT NULL DEFAULT 0, helped INTEGER NOT NULL DEFAULT 0,"
    " hurt INTEGER NOT NULL DEFAULT 0,"
    " confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),"
    " created_at REAL NOT NULL, updated_at REAL NOT NULL, last_used_at REAL, decayed_at REAL);"
    "CREATE INDEX IF NOT EXISTS lessons_status ON lessons(status, kind);"
    "CREATE INDEX IF NOT EXISTS lessons_run ON lessons(run, candidate);"
    "CREATE TABLE IF NOT EXISTS lesson_tags ("
    " lesson INTEGER NOT NULL REFERENCES lessons(id), tag TEXT NOT NULL,"
    " PRIMARY KEY (lesson, tag)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS lesson_tags_tag ON lesson_tags(tag);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS lessons_fts USING fts5(situation, action,"
    " content='lessons', content_rowid='id', tokenize='porter unicode61');"
    "CREATE TRIGGER IF NOT EXISTS lessons_ai AFTER INSERT ON lessons BEGIN"
    " INSERT INTO lessons_fts(rowid, situation, action) VALUES (new.id, new.situation, new.action);"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS lessons_ad AFTER DELETE ON lessons BEGIN"
    " INSERT INTO lessons_fts(lessons_fts, rowid, situation, action)"
    " VALUES ('delete', old.id, old.situation, old.action); END;"
    "CREATE TRIGGER IF NOT EXISTS lessons_au AFTER UPDATE OF situation, action ON lessons BEGIN"
    " INSERT INTO lessons_fts(lessons_fts, rowid, situation, action)"
    " VALUES ('delete', old.id, old.situation, old.action);"
    " INSERT INTO lessons_fts(rowid, situation, action) VALUES (new.id, new.situation, new.action);"
    " END;"
    "CREATE TABLE IF NOT EXISTS lesson_shown ("
    " run TEXT NOT NULL, candidate INTEGER NOT NULL, lesson INTEGER NOT NULL REFERENCES lessons(id),"
    " rank INTEGER NOT NULL, PRIMARY KEY (run, candidate, lesson)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS lesson_prompts ("
    " run TEXT NOT NULL, candidate INTEGER NOT NULL, lessons INTEGER NOT NULL,"
    " lesson_chars INTEGER NOT NULL, prompt_chars INTEGER NOT NULL, outcome INTEGER,"
    " created_at REAL NOT NULL, PRIMARY KEY (run, candidate)) WITHOUT ROWID;";

/* ---- small helpers ---------------------------------------------------- */

double kn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int kn_db_fail(sqlite3 *db, kiln_error *err, const char *what)
{
    if (sqlite3_errcode(db) == SQLITE_FULL)   /* named, so the user frees space and resumes */
        return kiln_fail(err, "lessons %s: %s: the disk is full", sqlite3_db_filename(db, "main"),
                         what);
    return kiln_fail(err, "lessons: %s: %s", what, sqlite3_errmsg(db));
}

int kn_exec(sqlite3 *db, const char *sql, kiln_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        if (sqlite3_errcode(db) == SQLITE_FULL)
            kn_db_fail(db, err, "writing");
        else
            kiln_fail(err, "lessons: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int kn_begin(sqlite3 *db, kiln_error *err)
{
    return kn_exec(db, "BEGIN IMMEDIATE", err);
}

int kn_commit(sqlite3 *db, kiln_error *err)
{
    if (kn_exec(db, "COMMIT", err) == 0)
        return 0;
    kn_rollback(db);
    return -1;
}

void kn_rollback(sqlite3 *db)
{
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

void kn_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) {
        n = cap - 1;
        /* Back off continuation bytes so the cut lands on a character start. */
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

double kn_source_confidence(const char *source)
{
    if (source && strcmp(source, "person") == 0)
        return 0.7;
    if (source && strcmp(source, "model") == 0)
        return 0.4;
    return 0.5;
}

char *kn_tags_json(const char *const *tags, int ntags)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < ntags; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(tags[i]));
    char *s = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return s;
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    kn_copy(buf, cap, t ? (const char *)t : "");
}

void kn_read_row(sqlite3_stmt *st, kiln_lesson *l)
{
    memset(l, 0, sizeof *l);
    l->id = sqlite3_column_int64(st, 0);
    col_text(st, 1, l->kind, sizeof l->kind);
    col_text(st, 2, l->situation, sizeof l->situation);
    col_text(st, 3, l->action, sizeof l->action);
    col_text(st, 4, l->change, sizeof l->change);
    col_text(st, 5, l->evidence, sizeof l->evidence);
    col_text(st, 6, l->run, sizeof l->run);
    l->candidate = sqlite3_column_int(st, 7);
    l->effect = sqlite3_column_double(st, 8);
    col_text(st, 9, l->source, sizeof l->source);
    col_text(st, 10, l->status, sizeof l->status);
    col_text(st, 11, l->retired_reason, sizeof l->retired_reason);
    l->shown = sqlite3_column_int(st, 12);
    l->helped = sqlite3_column_int(st, 13);
    l->hurt = sqlite3_column_int(st, 14);
    l->confidence = sqlite3_column_double(st, 15);
    l->created = sqlite3_column_double(st, 16);
    l->updated = sqlite3_column_double(st, 17);
    l->last_used = sqlite3_column_double(st, 18);
}

int kn_read_tags(sqlite3 *db, kiln_lesson *l, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT tag FROM lesson_tags WHERE lesson=?1 ORDER BY tag", -1, &st,
                           NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "reading tags");
    sqlite3_bind_int64(st, 1, l->id);
    int rc;
    l->ntags = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (l->ntags < KILN_LESSON_TAGS)
            col_text(st, 0, l->tags[l->ntags++], KILN_TAG_MAX);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "reading tags");
}

int kn_set_tags(sqlite3 *db, long long id, const char (*tags)[KILN_TAG_MAX], int ntags,
                kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM lesson_tags WHERE lesson=?1", -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "replacing tags");
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return kn_db_fail(db, err, "replacing tags");
    if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO lesson_tags (lesson, tag) VALUES (?1, ?2)", -1,
                           &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "storing tags");
    for (int i = 0; i < ntags && rc == SQLITE_DONE; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, tags[i], -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "storing tags");
}

/* ---- schema ----------------------------------------------------------- */

/* Schema 9: a lesson's structure, so two lessons can be compared
 * (docs/knowledge.md): the technique, task, dtype and width class it was
 * measured at, its effect against the task's baseline and how many
 * measurements and confirmed outcomes stand behind it. Added to an older
 * table in place. */
static const char *const v9_columns[][2] = {
    {"technique", "TEXT NOT NULL DEFAULT ''"}, {"task", "TEXT NOT NULL DEFAULT ''"},
    {"dtype", "TEXT NOT NULL DEFAULT ''"},     {"shape_class", "TEXT NOT NULL DEFAULT ''"},
    {"vs_baseline", "REAL"},                   {"baseline_effect", "REAL"},
    {"evidence_n", "INTEGER NOT NULL DEFAULT 1"}};

static int lessons_has_column(sqlite3 *db, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('lessons') WHERE name=?1", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, column, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

static int add_v9_columns(sqlite3 *db, kiln_error *err)
{
    char sql[160];
    for (size_t i = 0; i < sizeof v9_columns / sizeof *v9_columns; i++) {
        int found = lessons_has_column(db, v9_columns[i][0]);
        if (found < 0)
            return kn_db_fail(db, err, "reading the lessons schema");
        snprintf(sql, sizeof sql, "ALTER TABLE lessons ADD COLUMN %s %s", v9_columns[i][0],
                 v9_columns[i][1]);
        if (!found && kn_exec(db, sql, err) < 0)
            return -1;
    }
    return 0;
}

int kiln_knowledge_schema(sqlite3 *db, kiln_error *err)
{
    /* A savepoint nests inside kiln_db_open's upgrade transaction and is a
     * transaction of its own when called alone. */
    if (kn_exec(db, "SAVEPOINT kiln_knowledge", err) < 0)
        return -1;
    if (kn_exec(db, knowledge_schema, err) < 0 || add_v9_columns(db, err) < 0) {
        sqlite3_exec(db, "ROLLBACK TO kiln_knowledge; RELEASE kiln_knowledge", NULL, NULL, NULL);
        return kiln_error_prefix(err, "creating the lessons tables");
    }
    return kn_exec(db, "RELEASE kiln_knowledge", err);
}

/* ---- tags --------------------------------------------------------------- */

static int tag_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '+' ||
           c == '-';
}

int kiln_tag_valid(const char *tag)
{
    size_t n = strlen(tag), seg = 0;
    if (n == 0 || n >= KILN_TAG_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (tag[i] == '/') {
            if (seg == 0)
                return 0;   /* leading or doubled slash */
            seg = 0;
        } else if (!tag_char((unsigned char)tag[i])) {
            return 0;
        } else {
            seg++;
        }
    }
    return seg > 0;         /* no trailing slash */
}

int kiln_tag_applies(const char *lesson_tag, const char *scope_tag)
{
    size_t n = strlen(lesson_tag);
    return strncmp(lesson_tag, scope_tag, n) == 0 && (scope_tag[n] == '\0' || scope_tag[n] == '/');
}

/* A name as a tag segment: lowercase, anything unusual becomes '_'. */
static void tag_segment(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) {
        int c = tolower((unsigned char)src[i]);
        dst[i] = tag_char(c) ? (char)c : '_';
    }
    dst[i] = '\0';
}

static const char *family_of(const char *task)
{
    if (strstr(task, "norm"))
        return "norm";      /* rmsnorm, layernorm, groupnorm */
    if (strstr(task, "softmax"))
        return "softmax";
    if (strstr(task, "gemm") || strstr(task, "matmul"))
        return "gemm";
    if (strstr(task, "rope"))
        return "rope";
    return "misc";
}

static int add_scope(char tags[][KILN_TAG_MAX], int n, const char *prefix, const char *value)
{
    char seg[KILN_TAG_MAX - 16];
    if (!value || !*value)
        return n;
    tag_segment(seg, sizeof seg, value);
    snprintf(tags[n], KILN_TAG_MAX, "%s/%s", prefix, seg);
    return n + 1;
}

int kiln_lesson_scope(const char *task, const char *dtype, const char *backend, const char *group,
                      const char *arch, char tags[][KILN_TAG_MAX])
{
    int n = 0;
    if (task && *task) {
        char fam[32];
        snprintf(fam, sizeof fam, "op/%s", family_of(task));
        n = add_scope(tags, n, fam, task);
    }
    n = add_scope(tags, n, "dtype", dtype);
    n = add_scope(tags, n, "backend", backend);
    n = add_scope(tags, n, "shape", group);
    n = add_scope(tags, n, "arch", arch);
    return n;
}

/* ---- adding, reading, editing ------------------------------------------ */

void kiln_lesson_init(kiln_lesson *l)
{
    memset(l, 0, sizeof *l);
    snprintf(l->kind, sizeof l->kind, "lesson");
    snprintf(l->source, sizeof l->source, "person");
    snprintf(l->status, sizeof l->status, "active");
    snprintf(l->evidence, sizeof l->evidence, "{}");
    l->candidate = -1;
    l->confidence = -1;
}

static int blank(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* Lowercase the tags into out and check them. */
static int normalise_tags(const char (*in)[KILN_TAG_MAX], int n, char (*out)[KILN_TAG_MAX],
                          kiln_error *err)
{
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        for (; in[i][k] && k + 1 < KILN_TAG_MAX; k++)
            out[i][k] = (char)tolower((unsigned char)in[i][k]);
        out[i][k] = '\0';
        if (!kiln_tag_valid(out[i]))
            return kiln_fail(err, "bad tag '%s' (want a path like op/norm/rmsnorm: lowercase "
                                  "letters, digits, _ . + - between single slashes)", in[i]);
    }
    return 0;
}

static int check_lesson(const kiln_lesson *l, kiln_error *err)
{
    if (blank(l->situation) || blank(l->action))
        return kiln_fail(err, "a lesson needs a situation and an action");
    if (strcmp(l->kind, "lesson") != 0 && strcmp(l->kind, "note") != 0)
        return kiln_fail(err, "bad kind '%s' (lesson or note)", l->kind);
    if (strcmp(l->source, "measured") != 0 && strcmp(l->source, "model") != 0 &&
        strcmp(l->source, "person") != 0)
        return kiln_fail(err, "bad source '%s' (measured, model or person)", l->source);
    if (strcmp(l->status, "active") != 0 && strcmp(l->status, "retired") != 0)
        return kiln_fail(err, "bad status '%s' (active or retired)", l->status);
    if (l->confidence > 1 || isnan(l->confidence))
        return kiln_fail(err, "confidence must be between 0 and 1");
    if (l->ntags < 0 || l->ntags > KILN_LESSON_TAGS)
        return kiln_fail(err, "at most %d tags", KILN_LESSON_TAGS);
    return 0;
}

static int insert_row(sqlite3 *db, const kiln_lesson *l, long long *id, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO lessons (kind, situation, action, change, evidence, run,"
                           " candidate, effect, source, status, retired_reason, shown, helped, hurt,"
                           " confidence, created_at, updated_at, last_used_at) VALUES (?1,?2,?3,?4,"
                           "?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)",
                           -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "adding a lesson");
    double now = kn_now();
    const char *texts[] = {l->kind, l->situation, l->action, l->change,
                           *l->evidence ? l->evidence : "{}", l->run};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 7, l->candidate);
    sqlite3_bind_double(st, 8, l->effect);
    sqlite3_bind_text(st, 9, l->source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 10, l->status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 11, l->retired_reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 12, l->shown);
    sqlite3_bind_int(st, 13, l->helped);
    sqlite3_bind_int(st, 14, l->hurt);
    sqlite3_bind_double(st, 15, l->confidence < 0 ? kn_source_confidence(l->source) : l->confidence);
    sqlite3_bind_double(st, 16, l->created > 0 ? l->created : now);
    sqlite3_bind_double(st, 17, l->updated > 0 ? l->updated : (l->created > 0 ? l->created : now));
    if (l->last_used > 0)
        sqlite3_bind_double(st, 18, l->last_used);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return kn_db_fail(db, err, "adding a lesson");
    *id = sqlite3_last_insert_rowid(db);
    return 0;
}

int kiln_lesson_add(sqlite3 *db, const kiln_lesson *l, long long *id, kiln_error *err)
{
    char tags[KILN_LESSON_TAGS][KILN_TAG_MAX];
    if (check_lesson(l, err) < 0 || normalise_tags(l->tags, l->ntags, tags, err) < 0)
        return -1;
    /* Inside a caller's transaction (import, record) a savepoint keeps the
     * row and its tags together without committing the caller's work. */
    if (kn_exec(db, "SAVEPOINT kiln_add", err) < 0)
        return -1;
    if (insert_row(db, l, id, err) < 0 || kn_set_tags(db, *id, (const char(*)[KILN_TAG_MAX])tags,
                                                       l->ntags, err) < 0) {
        sqlite3_exec(db, "ROLLBACK TO kiln_add; RELEASE kiln_add", NULL, NULL, NULL);
        return -1;
    }
    return kn_exec(db, "RELEASE kiln_add", err);
}

int kiln_lesson_get(sqlite3 *db, long long id, kiln_lesson *l, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT " KN_COLUMNS " FROM lessons l WHERE l.id=?1", -1, &st,
                           NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "reading a lesson");
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        kn_read_row(st, l);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return kn_db_fail(db, err, "reading a lesson");
    if (rc == SQLITE_DONE)
        return 0;
    return kn_read_tags(db, l, err) < 0 ? -1 : 1;
}

static int update_text(sqlite3 *db, long long id, const char *col, const char *value, kiln_error *err)
{
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE lessons SET %s=?2, updated_at=?3 WHERE id=?1", col);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "editing a lesson");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, kn_now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "editing a lesson");
}

static int touch(sqlite3 *db, long long id, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET updated_at=?2 WHERE id=?1", -1, &st, NULL) !=
        SQLITE_OK)
        return kn_db_fail(db, err, "editing a lesson");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, kn_now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "editing a lesson");
}

static int edit_fields(sqlite3 *db, long long id, const char *situation, const char *action,
                       const char (*tags)[KILN_TAG_MAX], int ntags, double confidence,
                       kiln_error *err)
{
    char conf[32];
    snprintf(conf, sizeof conf, "%.6f", confidence);
    if (situation && update_text(db, id, "situation", situation, err) < 0)
        return -1;
    if (action && update_text(db, id, "action", action, err) < 0)
        return -1;
    if (confidence >= 0 && update_text(db, id, "confidence", conf, err) < 0)
        return -1;
    if (ntags >= 0 && kn_set_tags(db, id, tags, ntags, err) < 0)
        return -1;
    /* Tags live in their own table: touch the lesson so it counts as changed. */
    if (ntags >= 0 && touch(db, id, err) < 0)
        return -1;
    return 0;
}

int kiln_lesson_edit(sqlite3 *db, long long id, const char *situation, const char *action,
                     const char *const *tags, int ntags, double confidence, kiln_error *err)
{
    char norm[KILN_LESSON_TAGS][KILN_TAG_MAX], raw[KILN_LESSON_TAGS][KILN_TAG_MAX];
    if ((situation && blank(situation)) || (action && blank(action)))
        return kiln_fail(err, "a lesson needs a situation and an action");
    if ((situation && strlen(situation) >= KILN_LESSON_TEXT) ||
        (action && strlen(action) >= KILN_LESSON_TEXT))
        return kiln_fail(err, "situation and action are at most %d bytes each", KILN_LESSON_TEXT - 1);
    if (confidence > 1 || isnan(confidence))
        return kiln_fail(err, "confidence must be between 0 and 1");
    if (ntags > KILN_LESSON_TAGS)
        return kiln_fail(err, "at most %d tags", KILN_LESSON_TAGS);
    for (int i = 0; i < ntags; i++)
        kn_copy(raw[i], KILN_TAG_MAX, tags[i]);
    if (ntags > 0 && normalise_tags((const char(*)[KILN_TAG_MAX])raw, ntags, norm, err) < 0)
        return -1;
    kiln_lesson cur;
    if (kn_begin(db, err) < 0)
        return -1;
    int found = kiln_lesson_get(db, id, &cur, err);
    if (found <= 0 || edit_fields(db, id, situation, action, (const char(*)[KILN_TAG_MAX])norm,
                                  ntags, confidence, err) < 0) {
        kn_rollback(db);
        return found;
    }
    return kn_commit(db, err) < 0 ? -1 : 1;
}

int kiln_lesson_retire(sqlite3 *db, long long id, const char *reason, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET status='retired', retired_reason=?2,"
                           " updated_at=?3 WHERE id=?1 AND status='active'", -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "retiring a lesson");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, reason && *reason ? reason : "retired by hand", -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, kn_now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return kn_db_fail(db, err, "retiring a lesson");
    return sqlite3_changes(db) > 0;
}
