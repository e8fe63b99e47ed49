/* export.c - lessons as JSON (export, import, --json output) and Markdown
 * (a readable export), and the stats behind `kiln lessons stats`. */
#include "lessons_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define EXPORT_FORMAT "kiln-lessons"
#define EXPORT_VERSION 1

void *kiln_lesson_json(const kiln_lesson *l)
{
    cJSON *o = cJSON_CreateObject(), *tags = cJSON_CreateArray();
    if (!o || !tags) {
        cJSON_Delete(o);
        cJSON_Delete(tags);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "id", (double)l->id);
    cJSON_AddStringToObject(o, "kind", l->kind);
    cJSON_AddStringToObject(o, "situation", l->situation);
    cJSON_AddStringToObject(o, "action", l->action);
    for (int i = 0; i < l->ntags; i++)
        cJSON_AddItemToArray(tags, cJSON_CreateString(l->tags[i]));
    cJSON_AddItemToObject(o, "tags", tags);
    cJSON_AddStringToObject(o, "source", l->source);
    cJSON_AddStringToObject(o, "status", l->status);
    if (l->retired_reason[0])
        cJSON_AddStringToObject(o, "retired_reason", l->retired_reason);
    cJSON_AddNumberToObject(o, "confidence", l->confidence);
    cJSON_AddNumberToObject(o, "shown", l->shown);
    cJSON_AddNumberToObject(o, "helped", l->helped);
    cJSON_AddNumberToObject(o, "hurt", l->hurt);
    if (l->change[0])
        cJSON_AddStringToObject(o, "change", l->change);
    if (l->effect > 0)
        cJSON_AddNumberToObject(o, "effect", l->effect);
    if (l->run[0])
        cJSON_AddStringToObject(o, "run", l->run);
    if (l->candidate >= 0)
        cJSON_AddNumberToObject(o, "candidate", l->candidate);
    cJSON *ev = cJSON_Parse(l->evidence);
    cJSON_AddItemToObject(o, "evidence", ev ? ev : cJSON_CreateObject());
    cJSON_AddNumberToObject(o, "created", l->created);
    cJSON_AddNumberToObject(o, "updated", l->updated);
    if (l->last_used > 0)
        cJSON_AddNumberToObject(o, "last_used", l->last_used);
    return o;
}

char *kiln_lessons_export_json(const kiln_lesson *ls, int n)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    if (!root || !arr) {
        cJSON_Delete(root);
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON_AddStringToObject(root, "format", EXPORT_FORMAT);
    cJSON_AddNumberToObject(root, "version", EXPORT_VERSION);
    for (int i = 0; i < n; i++) {
        cJSON *o = kiln_lesson_json(&ls[i]);
        if (o)
            cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(root, "lessons", arr);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

static int md_lesson(FILE *f, const kiln_lesson *l)
{
    fprintf(f, "## #%lld %s\n\n", l->id, l->situation);
    fprintf(f, "- **When:** %s\n- **Do:** %s\n- **Tags:** ", l->situation, l->action);
    for (int i = 0; i < l->ntags; i++)
        fprintf(f, "%s`%s`", i ? ", " : "", l->tags[i]);
    fprintf(f, "%s\n- **Confidence:** %.2f (shown %d, helped %d, hurt %d); source %s; %s%s%s\n",
            l->ntags ? "" : "(none)", l->confidence, l->shown, l->helped, l->hurt, l->source,
            l->status, l->retired_reason[0] ? ": " : "", l->retired_reason);
    if (l->effect > 0 || l->run[0])
        fprintf(f, "- **Evidence:** %s\n", l->evidence);
    return fputc('\n', f) == EOF ? -1 : 0;
}

char *kiln_lessons_export_md(const kiln_lesson *ls, int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "# kiln lessons\n\n%d lesson%s. Each: when the situation holds, take the action.\n\n",
            n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++)
        md_lesson(f, &ls[i]);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- import ------------------------------------------------------------ */

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int copy_field(char *dst, size_t cap, const char *src, const char *name, int i, kiln_error *err)
{
    if (!src)
        return 0;
    if (strlen(src) >= cap)
        return kiln_fail(err, "lesson %d: %s is longer than %zu bytes", i + 1, name, cap - 1);
    kn_copy(dst, cap, src);
    return 0;
}

static int parse_tags(const cJSON *o, kiln_lesson *l, int i, kiln_error *err)
{
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(o, "tags"), *t;
    if (tags && !cJSON_IsArray(tags))
        return kiln_fail(err, "lesson %d: tags must be an array of strings", i + 1);
    cJSON_ArrayForEach(t, tags) {
        if (!cJSON_IsString(t))
            return kiln_fail(err, "lesson %d: tags must be an array of strings", i + 1);
        if (l->ntags >= KILN_LESSON_TAGS)
            return kiln_fail(err, "lesson %d: more than %d tags", i + 1, KILN_LESSON_TAGS);
        if (copy_field(l->tags[l->ntags++], KILN_TAG_MAX, t->valuestring, "a tag", i, err) < 0)
            return -1;
    }
    return 0;
}

static int parse_lesson(const cJSON *o, kiln_lesson *l, int i, kiln_error *err)
{
    kiln_lesson_init(l);
    if (!cJSON_IsObject(o))
        return kiln_fail(err, "lesson %d: not an object", i + 1);
    if (!jstr(o, "situation") || !jstr(o, "action"))
        return kiln_fail(err, "lesson %d: needs \"situation\" and \"action\"", i + 1);
    if (copy_field(l->situation, sizeof l->situation, jstr(o, "situation"), "situation", i, err) < 0 ||
        copy_field(l->action, sizeof l->action, jstr(o, "action"), "action", i, err) < 0 ||
        copy_field(l->kind, sizeof l->kind, jstr(o, "kind"), "kind", i, err) < 0 ||
        copy_field(l->source, sizeof l->source, jstr(o, "source"), "source", i, err) < 0 ||
        copy_field(l->status, sizeof l->status, jstr(o, "status"), "status", i, err) < 0 ||
        copy_field(l->retired_reason, sizeof l->retired_reason, jstr(o, "retired_reason"),
                   "retired_reason", i, err) < 0 ||
        copy_field(l->change, sizeof l->change, jstr(o, "change"), "change", i, err) < 0 ||
        copy_field(l->run, sizeof l->run, jstr(o, "run"), "run", i, err) < 0 ||
        parse_tags(o, l, i, err) < 0)
        return -1;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "evidence");
    char *evs = cJSON_IsObject(ev) ? cJSON_PrintUnformatted(ev) : NULL;
    kn_copy(l->evidence, sizeof l->evidence, evs ? evs : "{}");
    cJSON_free(evs);
    l->confidence = jnum(o, "confidence", -1);
    l->candidate = (int)jnum(o, "candidate", -1);
    l->effect = jnum(o, "effect", 0);
    l->shown = (int)jnum(o, "shown", 0);
    l->helped = (int)jnum(o, "helped", 0);
    l->hurt = (int)jnum(o, "hurt", 0);
    l->created = jnum(o, "created", 0);
    l->updated = jnum(o, "updated", 0);
    l->last_used = jnum(o, "last_used", 0);
    return 0;
}

/* 1 when a lesson with the same kind, text and tags is already stored. */
static int present(sqlite3 *db, const kiln_lesson *l, kiln_error *err)
{
    kiln_lesson_filter f = {.status = "all", .kind = l->kind, .sort = "id"};
    const char *tags[KILN_LESSON_TAGS];
    for (int i = 0; i < l->ntags; i++)
        tags[i] = l->tags[i];
    f.tags = tags;
    f.ntags = l->ntags;
    kiln_lesson *ls = NULL;
    int n = 0, found = 0;
    if (kiln_lessons_list(db, &f, &ls, &n, err) < 0)
        return -1;
    for (int i = 0; i < n && !found; i++)
        found = strcmp(ls[i].situation, l->situation) == 0 && strcmp(ls[i].action, l->action) == 0 &&
                ls[i].ntags == l->ntags;
    free(ls);
    return found;
}

static int import_all(sqlite3 *db, const cJSON *arr, int *added, int *skipped, kiln_error *err)
{
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach(o, arr) {
        kiln_lesson l;
        long long id;
        if (parse_lesson(o, &l, i, err) < 0)
            return -1;
        int dup = present(db, &l, err);
        if (dup < 0)
            return -1;
        if (dup)
            (*skipped)++;
        else if (kiln_lesson_add(db, &l, &id, err) < 0)
            return kiln_error_prefix(err, "lesson %d", i + 1);
        else
            (*added)++;
        i++;
    }
    return 0;
}

int kiln_lessons_import_json(sqlite3 *db, const char *text, int *added, int *skipped,
                             kiln_error *err)
{
    *added = *skipped = 0;
    cJSON *root = cJSON_Parse(text);
    if (!root)
        return kiln_fail(err, "not valid JSON (near byte %td)",
                         cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : (ptrdiff_t)0);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "lessons");
    int rc = -1;
    if (!cJSON_IsArray(arr))
        kiln_fail(err, "not a kiln lessons export (no \"lessons\" array)");
    else if (kn_begin(db, err) == 0) {
        rc = import_all(db, arr, added, skipped, err);
        if (rc < 0)
            kn_rollback(db);
        else
            rc = kn_commit(db, err);
    }
    if (rc < 0)
        *added = *skipped = 0;
    cJSON_Delete(root);
    return rc;
}

/* ---- stats ------------------------------------------------------------- */

static int stats_counts(sqlite3 *db, kiln_lesson_stats *s, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM lessons WHERE kind='lesson' AND status='active'),"
                           " (SELECT count(*) FROM lessons WHERE kind='lesson' AND status='retired'),"
                           " (SELECT count(*) FROM lessons WHERE kind='note'),"
                           " (SELECT count(*) FROM lessons WHERE kind='lesson' AND status='active' AND source='measured'),"
                           " (SELECT count(*) FROM lessons WHERE kind='lesson' AND status='active' AND source='model'),"
                           " (SELECT count(*) FROM lessons WHERE kind='lesson' AND status='active' AND source='person'),"
                           " count(*), coalesce(sum(lessons), 0), coalesce(sum(lesson_chars), 0),"
                           " coalesce(sum(prompt_chars), 0), coalesce(sum(outcome > 0), 0),"
                           " coalesce(sum(outcome < 0), 0) FROM lesson_prompts",
                           -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "counting lessons");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int *ints[] = {&s->active, &s->retired, &s->notes, &s->measured, &s->model, &s->person};
        long long *longs[] = {&s->prompts, &s->shown, &s->lesson_chars, &s->prompt_chars, &s->kept,
                              &s->regressed};
        for (int i = 0; i < 6; i++)
            *ints[i] = sqlite3_column_int(st, i);
        for (int i = 0; i < 6; i++)
            *longs[i] = sqlite3_column_int64(st, 6 + i);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : kn_db_fail(db, err, "counting lessons");
}

static int stats_tags(sqlite3 *db, kiln_lesson_stats *s, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT t.tag, sum(l.status='active'), sum(l.status='retired')"
                           " FROM lesson_tags t JOIN lessons l ON l.id=t.lesson WHERE l.kind='lesson'"
                           " GROUP BY t.tag ORDER BY t.tag", -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "counting tags");
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->ntags == cap) {
            cap = cap ? 2 * cap : 16;
            kiln_tag_count *p = realloc(s->tags, (size_t)cap * sizeof *p);
            if (!p)
                break;
            s->tags = p;
        }
        kiln_tag_count *t = &s->tags[s->ntags++];
        const unsigned char *tag = sqlite3_column_text(st, 0);
        kn_copy(t->tag, sizeof t->tag, tag ? (const char *)tag : "");
        t->active = sqlite3_column_int(st, 1);
        t->retired = sqlite3_column_int(st, 2);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return kiln_fail(err, "out of memory");
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "counting tags");
}

int kiln_lessons_stats(sqlite3 *db, kiln_lesson_stats *s, kiln_error *err)
{
    memset(s, 0, sizeof *s);
    /* One read transaction: the counts and the tags see the same moment. */
    if (kn_exec(db, "BEGIN", err) < 0)
        return -1;
    int rc = stats_counts(db, s, err) < 0 || stats_tags(db, s, err) < 0 ? -1 : 0;
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc < 0)
        kiln_lessons_stats_free(s);
    return rc;
}

void kiln_lessons_stats_free(kiln_lesson_stats *s)
{
    free(s->tags);
    s->tags = NULL;
    s->ntags = 0;
}
