/* distill.c - `kiln lessons distill`: merge near-duplicate lessons of the
 * same polarity (a model, when given, rewrites each merged group into one
 * lesson), retire the ones later evidence contradicts or whose confidence
 * fell below the floor, unless their own confirmed outcomes support them,
 * and decay the unused. Run by hand, never inside the search loop.
 *
 * The steps run in an order that makes a second run change nothing: merges
 * first (they change counters), then contradictions (read the final
 * counters), then decay (recorded in decayed_at, so once per period), then
 * the floor (after decay). A dry run does the same work in a transaction
 * and rolls it back, so it reports exactly what a real run would do. */
#include "lessons_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JACCARD_MERGE 0.8
#define MAX_WORDS 128

typedef struct changes {
    kiln_distill_change *v;
    int n, cap;
} changes;

static int report(changes *c, long long id, const char *what, long long into, double before,
                  double after, const char *reason, kiln_error *err)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        kiln_distill_change *p = realloc(c->v, (size_t)cap * sizeof *p);
        if (!p)
            return kiln_fail(err, "out of memory");
        c->v = p;
        c->cap = cap;
    }
    kiln_distill_change *x = &c->v[c->n++];
    memset(x, 0, sizeof *x);
    x->id = id;
    snprintf(x->what, sizeof x->what, "%s", what);
    x->into = into;
    x->before = before;
    x->after = after;
    kn_copy(x->reason, sizeof x->reason, reason);
    return 0;
}

static int run_sql(sqlite3 *db, const char *sql, long long id, long long other, double value,
                   const char *text, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "distilling");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, other);
    sqlite3_bind_double(st, 3, value);
    sqlite3_bind_text(st, 4, text ? text : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 5, kn_now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "distilling");
}

static int retire(sqlite3 *db, long long id, long long into, const char *reason, kiln_error *err)
{
    return run_sql(db, "UPDATE lessons SET status='retired', retired_reason=?4, updated_at=?5,"
                   " merged_into=nullif(?2, 0) WHERE id=?1", id, into, 0, reason, err);
}

/* ---- near-duplicates ------------------------------------------------------ */

typedef struct words {
    char w[MAX_WORDS][32];
    int n;
} words;

/* The distinct lowercase words (letters, digits, '_' and '.') of a lesson. */
static void word_set(const kiln_lesson *l, words *ws)
{
    char text[2 * KILN_LESSON_TEXT + 2];
    snprintf(text, sizeof text, "%s %s", l->situation, l->action);
    ws->n = 0;
    for (const char *p = text; *p && ws->n < MAX_WORDS;) {
        char w[32];
        size_t k = 0;
        while (*p && !(isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80))
            p++;
        while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || (unsigned char)*p >= 0x80))
            if (k + 1 < sizeof w)
                w[k++] = (char)tolower((unsigned char)*p++);
            else
                p++;
        w[k] = '\0';
        int dup = k == 0;
        for (int i = 0; i < ws->n && !dup; i++)
            dup = strcmp(ws->w[i], w) == 0;
        if (!dup)
            memcpy(ws->w[ws->n++], w, k + 1);
    }
}

static double jaccard(const words *a, const words *b)
{
    int both = 0;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++)
            if (strcmp(a->w[i], b->w[j]) == 0) {
                both++;
                break;
            }
    int any = a->n + b->n - both;
    return any ? (double)both / any : 1.0;
}

/* Does the text say to avoid something? A word list, not a parser: it only
 * decides the polarity of lessons without a measured effect. */
static int says_avoid(const char *text)
{
    static const char *marks[] = {"avoid", "slower", "don't", "do not", "never", "hurt",
                                  "worse", "regress"};
    char low[KILN_LESSON_TEXT];
    size_t i = 0;
    for (; text[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)text[i]);
    low[i] = '\0';
    for (size_t k = 0; k < sizeof marks / sizeof *marks; k++)
        if (strstr(low, marks[k]))
            return 1;
    return 0;
}

/* +1 a lesson that says what helps, -1 one that says what hurts: by its
 * measured effect when it has one, else by its action's words. "Made it
 * 1.5x faster" and "made it 1.5x slower; avoid" share most words, so the
 * similarity alone would merge them. */
static int polarity(const kiln_lesson *l)
{
    if (l->effect > 1)
        return 1;
    if (l->effect > 0 && l->effect < 1)
        return -1;
    return says_avoid(l->action) ? -1 : 1;
}

/* The lesson's confirmed outcomes (prompts showing it whose candidate was
 * kept, against those it broke or slowed) speak for it. */
static int supported(const kiln_lesson *l)
{
    return l->helped > l->hurt;
}

static int same_tags(const kiln_lesson *a, const kiln_lesson *b)
{
    if (a->ntags != b->ntags)
        return 0;
    for (int i = 0; i < a->ntags; i++)   /* both sorted by kn_read_tags */
        if (strcmp(a->tags[i], b->tags[i]) != 0)
            return 0;
    return 1;
}

static int by_confidence(const void *a, const void *b)
{
    const kiln_lesson *x = a, *y = b;
    if (x->confidence != y->confidence)
        return x->confidence < y->confidence ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static int merge_one(sqlite3 *db, kiln_lesson *keep, const kiln_lesson *dup, double sim,
                     changes *c, kiln_error *err)
{
    char reason[128];
    snprintf(reason, sizeof reason, "merged into #%lld (near-duplicate, similarity %.2f)", keep->id,
             sim);
    /* The kept lesson carries the merged one's history. */
    if (run_sql(db, "UPDATE lessons SET shown=shown+(SELECT shown FROM lessons WHERE id=?2),"
                " helped=helped+(SELECT helped FROM lessons WHERE id=?2),"
                " hurt=hurt+(SELECT hurt FROM lessons WHERE id=?2), updated_at=?5 WHERE id=?1",
                keep->id, dup->id, 0, NULL, err) < 0 ||
        retire(db, dup->id, keep->id, reason, err) < 0)
        return -1;
    keep->shown += dup->shown;
    keep->helped += dup->helped;
    keep->hurt += dup->hurt;
    return report(c, dup->id, "merge", keep->id, dup->confidence, dup->confidence, reason, err);
}

/* Each lesson, most confident first, merges into the first kept lesson it
 * duplicates (same tags, same polarity, similar words); the kept ones end
 * up pairwise distinct. into[i]: the index ls[i] merged into, or -1. */
static int merge_duplicates(sqlite3 *db, kiln_lesson *ls, int n, int *into_of, changes *c,
                            kiln_error *err)
{
    words *ws = malloc((size_t)(n ? n : 1) * sizeof *ws);
    int *kept = malloc((size_t)(n ? n : 1) * sizeof *kept), nk = 0, rc = 0;
    if (!ws || !kept) {
        free(ws);
        free(kept);
        return kiln_fail(err, "out of memory");
    }
    if (n > 1)
        qsort(ls, (size_t)n, sizeof *ls, by_confidence);
    for (int i = 0; i < n && rc == 0; i++) {
        word_set(&ls[i], &ws[i]);
        int into = -1;
        double sim = 0;
        for (int k = 0; k < nk && into < 0; k++) {
            sim = jaccard(&ws[i], &ws[kept[k]]);
            if (same_tags(&ls[i], &ls[kept[k]]) && polarity(&ls[i]) == polarity(&ls[kept[k]]) &&
                sim >= JACCARD_MERGE)
                into = kept[k];
        }
        into_of[i] = into;
        if (into < 0)
            kept[nk++] = i;
        else
            rc = merge_one(db, &ls[into], &ls[i], sim, c, err);
        if (into >= 0)
            strcpy(ls[i].status, "retired");
    }
    free(ws);
    free(kept);
    return rc;
}

/* ---- contradictions -------------------------------------------------------- */

static void tag_string(const kiln_lesson *l, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < l->ntags; i++) {
        size_t k = strlen(out);
        snprintf(out + k, cap - k, "%s%s", i ? " " : "", l->tags[i]);
    }
}

/* Later measurements of the same change in the same situation and scope. */
static int later_evidence(sqlite3 *db, const kiln_lesson *l, int *helped, int *hurt, kiln_error *err)
{
    char tags[KILN_LESSON_TAGS * KILN_TAG_MAX];
    sqlite3_stmt *st = NULL;
    *helped = *hurt = 0;
    tag_string(l, tags, sizeof tags);
    if (sqlite3_prepare_v2(db,
                           "SELECT m.effect FROM lessons m WHERE m.kind='lesson' AND m.id != ?1"
                           " AND m.situation=?2 AND m.change=?3 AND m.created_at > ?4 AND m.effect > 0"
                           " AND coalesce((SELECT group_concat(tag, ' ') FROM (SELECT tag FROM"
                           " lesson_tags WHERE lesson=m.id ORDER BY tag)), '') = ?5",
                           -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "distilling");
    sqlite3_bind_int64(st, 1, l->id);
    sqlite3_bind_text(st, 2, l->situation, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, l->change, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 4, l->created);
    sqlite3_bind_text(st, 5, tags, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double e = sqlite3_column_double(st, 0);
        *helped += e > 1;
        *hurt += e < 1;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "distilling");
}

/* Why a lesson is contradicted, or "" when it is not. */
static int contradiction(sqlite3 *db, const kiln_lesson *l, char *why, size_t cap, kiln_error *err)
{
    int helped = 0, hurt = 0;
    why[0] = '\0';
    if (l->change[0] && l->effect > 0 && later_evidence(db, l, &helped, &hurt, err) < 0)
        return -1;
    if (l->effect > 1 && hurt > helped)
        snprintf(why, cap, "contradicted: later the same change hurt %d time(s), helped %d", hurt,
                 helped);
    else if (l->effect > 0 && l->effect < 1 && helped > hurt)
        snprintf(why, cap, "contradicted: later the same change helped %d time(s), hurt %d", helped,
                 hurt);
    else if (l->hurt >= 2 && l->hurt > l->helped)
        snprintf(why, cap, "contradicted: prompts showing it regressed %d time(s), were kept %d",
                 l->hurt, l->helped);
    return 0;
}

static int retire_contradicted(sqlite3 *db, kiln_lesson *ls, int n, changes *c, kiln_error *err)
{
    char why[256];
    for (int i = 0; i < n; i++) {
        if (strcmp(ls[i].status, "active") != 0 || supported(&ls[i]))
            continue;
        if (contradiction(db, &ls[i], why, sizeof why, err) < 0)
            return -1;
        if (!why[0])
            continue;
        if (retire(db, ls[i].id, 0, why, err) < 0 ||
            report(c, ls[i].id, "retire", 0, ls[i].confidence, ls[i].confidence, why, err) < 0)
            return -1;
        strcpy(ls[i].status, "retired");
    }
    return 0;
}

/* ---- decay and floor ------------------------------------------------------ */

static int decay_unused(sqlite3 *db, kiln_lesson *ls, int n, const kiln_distill_opts *o, changes *c,
                        kiln_error *err)
{
    double cut = o->now - o->decay_days * 86400.0;
    sqlite3_stmt *st = NULL;
    char why[128];
    snprintf(why, sizeof why, "not shown for %g days: confidence x %g", o->decay_days, o->decay_factor);
    for (int i = 0; i < n; i++) {
        if (strcmp(ls[i].status, "active") != 0)
            continue;
        if (sqlite3_prepare_v2(db, "SELECT 1 FROM lessons WHERE id=?1 AND"
                               " coalesce(last_used_at, created_at) < ?2 AND"
                               " (decayed_at IS NULL OR decayed_at < ?2)", -1, &st, NULL) != SQLITE_OK)
            return kn_db_fail(db, err, "distilling");
        sqlite3_bind_int64(st, 1, ls[i].id);
        sqlite3_bind_double(st, 2, cut);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return kn_db_fail(db, err, "distilling");
        if (rc == SQLITE_DONE)
            continue;
        double after = ls[i].confidence * o->decay_factor;
        /* decayed_at takes the distill's clock so the period is its own. */
        if (run_sql(db, "UPDATE lessons SET confidence=?3, decayed_at=?2 WHERE id=?1", ls[i].id,
                    (long long)o->now, after, NULL, err) < 0 ||
            report(c, ls[i].id, "decay", 0, ls[i].confidence, after, why, err) < 0)
            return -1;
        ls[i].confidence = after;
    }
    return 0;
}

static int retire_below_floor(sqlite3 *db, kiln_lesson *ls, int n, double floor, changes *c,
                              kiln_error *err)
{
    char why[128];
    snprintf(why, sizeof why, "confidence below the floor %.2f", floor);
    for (int i = 0; i < n; i++) {
        if (strcmp(ls[i].status, "active") != 0 || ls[i].confidence >= floor || supported(&ls[i]))
            continue;
        if (retire(db, ls[i].id, 0, why, err) < 0 ||
            report(c, ls[i].id, "retire", 0, ls[i].confidence, ls[i].confidence, why, err) < 0)
            return -1;
        strcpy(ls[i].status, "retired");
    }
    return 0;
}

/* ---- rewriting merged lessons ---------------------------------------------- */

/* One kept lesson and those merged into it, rewritten by o->rewrite. A
 * failed or empty rewrite leaves the plain merge, and the report says so. */
static int rewrite_group(sqlite3 *db, const kiln_distill_opts *o, kiln_lesson *keep,
                         const kiln_lesson *merged, int nm, changes *c, kiln_error *err)
{
    char action[KILN_LESSON_TEXT] = "", why[1280];
    kiln_error e = {0};
    int rc = o->rewrite(o->rewrite_ctx, keep, merged, nm, action, sizeof action, &e);
    while (rc == 0 && *action && strchr(" \t\n", action[strlen(action) - 1]))
        action[strlen(action) - 1] = '\0';
    if (rc < 0 || !*action) {
        snprintf(why, sizeof why, "the model's rewrite failed (%.900s): kept the plain merge",
                 rc < 0 ? e.msg : "an empty answer");
        return report(c, keep->id, "rewrite", 0, keep->confidence, keep->confidence, why, err);
    }
    if (run_sql(db, "UPDATE lessons SET action=?4, updated_at=?5 WHERE id=?1", keep->id, 0, 0,
                action, err) < 0)
        return -1;
    snprintf(why, sizeof why, "rewritten by the model (%d merged): %s", nm, action);
    kn_copy(keep->action, sizeof keep->action, action);
    return report(c, keep->id, "rewrite", 0, keep->confidence, keep->confidence, why, err);
}

static int rewrite_merged(sqlite3 *db, const kiln_distill_opts *o, kiln_lesson *ls, int n,
                          const int *into, changes *c, kiln_error *err)
{
    kiln_lesson *group = malloc((size_t)(n ? n : 1) * sizeof *group);
    int rc = group ? 0 : kiln_fail(err, "out of memory");
    for (int k = 0; rc == 0 && o->rewrite && k < n; k++) {
        int nm = 0;
        for (int i = 0; i < n; i++)
            if (into[i] == k)
                group[nm++] = ls[i];
        if (nm > 0)
            rc = rewrite_group(db, o, &ls[k], group, nm, c, err);
    }
    free(group);
    return rc;
}

static int distill_steps(sqlite3 *db, const kiln_distill_opts *o, changes *c, kiln_error *err)
{
    kiln_lesson_filter f = {.status = "active", .kind = "lesson", .sort = "id"};
    kiln_lesson *ls = NULL;
    int n = 0;
    if (kiln_lessons_list(db, &f, &ls, &n, err) < 0)
        return -1;
    int *into = malloc((size_t)(n ? n : 1) * sizeof *into);
    if (!into) {
        free(ls);
        return kiln_fail(err, "out of memory");
    }
    int rc = merge_duplicates(db, ls, n, into, c, err) < 0 ||
             rewrite_merged(db, o, ls, n, into, c, err) < 0 ||
             retire_contradicted(db, ls, n, c, err) < 0 ||
             decay_unused(db, ls, n, o, c, err) < 0 ||
             retire_below_floor(db, ls, n, o->floor, c, err) < 0 ? -1 : 0;
    free(into);
    free(ls);
    return rc;
}

int kiln_lessons_distill(sqlite3 *db, const kiln_distill_opts *opts, kiln_distill_change **out,
                         int *n, kiln_error *err)
{
    kiln_distill_opts o = opts ? *opts : (kiln_distill_opts){0};
    changes c = {0};
    *out = NULL;
    *n = 0;
    o.floor = o.floor > 0 ? o.floor : 0.3;
    o.decay_days = o.decay_days > 0 ? o.decay_days : 30;
    o.decay_factor = o.decay_factor > 0 ? o.decay_factor : 0.9;
    o.now = o.now > 0 ? o.now : kn_now();
    if (kn_begin(db, err) < 0)
        return -1;
    if (distill_steps(db, &o, &c, err) < 0) {
        kn_rollback(db);
        free(c.v);
        return -1;
    }
    if (o.dry_run)
        kn_rollback(db);
    else if (kn_commit(db, err) < 0) {
        free(c.v);
        return -1;
    }
    *out = c.v;
    *n = c.n;
    return 0;
}
