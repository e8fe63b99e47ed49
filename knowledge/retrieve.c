/* retrieve.c - finding lessons: FTS5 query escaping (with synonyms), the
 * scope filter, the fused ranking (BM25 x confidence x recency x confirmed
 * outcome, reciprocal rank fusion) and
 * the budgeted text block for a prompt; also the filtered listing behind
 * `kiln lessons list` and `search`. */
#include "lessons_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Reciprocal rank fusion: score = sum over lists of w / (K + rank). With
 * K = 60 neighbouring ranks differ little, so equal weights let confidence
 * and recency (which rank every lesson) drown relevance (which ranks only
 * the lessons sharing a word with the context). Relevance weighs as much as
 * the other two together; docs/knowledge.md has the measurements. */
#define RRF_K 60.0
#define W_BM25 1.0
#define W_CONF 0.25
#define W_RECENT 0.25
/* Confirmed outcomes: lessons whose prompts' candidates were kept more
 * often than they failed rank above untested ones, and those above the
 * ones that hurt more often. As a list of its own it orders lessons of
 * like relevance and leaves relevance first. */
#define W_OUTCOME 0.25
#define FTS_MAX_TOKENS 64

/* ---- FTS5 escaping -------------------------------------------------------- */

/* Words that match almost every lesson and only add noise to an OR query. */
static int stopword(const char *w, size_t n)
{
    static const char *words[] = {"a", "an", "the", "and", "or", "of", "to", "in", "on", "for",
                                  "is", "it", "be", "by", "with", "as", "at", "this", "that",
                                  "from", "are", "was", "its", "into", "we", "i"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && strncasecmp(words[i], w, n) == 0)
            return 1;
    return 0;
}

/* Letters, digits, '_' and any non-ASCII byte make up a token; everything
 * else (quotes, operators, parentheses, ':', '^', '*', '-') separates. */
static int token_byte(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

static int seen(const char *const *tok, const size_t *len, int n, const char *w, size_t wn)
{
    for (int i = 0; i < n; i++)
        if (len[i] == wn && strncasecmp(tok[i], w, wn) == 0)
            return 1;
    return 0;
}

/* Split text into at most FTS_MAX_TOKENS distinct tokens (pointers into text). */
static int tokenize(const char *text, const char **tok, size_t *len, int skip_stop)
{
    int n = 0;
    for (const char *p = text; *p && n < FTS_MAX_TOKENS;) {
        if (!token_byte((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *s = p;
        while (*p && token_byte((unsigned char)*p))
            p++;
        size_t wn = (size_t)(p - s);
        if ((skip_stop && stopword(s, wn)) || seen(tok, len, n, s, wn))
            continue;
        tok[n] = s;
        len[n++] = wn;
    }
    return n;
}

/* Append "token" with every embedded '"' doubled (FTS5 string syntax). */
static char *quote_into(char *out, const char *s, size_t n)
{
    *out++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            *out++ = '"';
        *out++ = s[i];
    }
    *out++ = '"';
    return out;
}

/* Room for one synonym group, quoted and joined by OR, in parentheses. */
static size_t group_size(const char *const *g)
{
    size_t n = 2;
    for (int k = 0; g[k]; k++)
        n += strlen(g[k]) + 2 + 4;
    return n;
}

static char *group_into(char *out, const char *const *g, int any)
{
    if (!any)
        *out++ = '(';
    for (int k = 0; g[k] && g[k][0] != '~'; k++) {   /* '~': recognised, not searched */
        if (k)
            out += sprintf(out, " OR ");
        out = quote_into(out, g[k], strlen(g[k]));
    }
    if (!any)
        *out++ = ')';
    return out;
}

/* Each token quoted, or, where it (or it and the next) names an idea of
 * the synonym table, the whole group: a word of the query matches any of
 * its names. any: OR between them all; else AND between the words, OR
 * within a group. */
char *kiln_fts_query(const char *text, int any)
{
    const char *tok[FTS_MAX_TOKENS];
    size_t len[FTS_MAX_TOKENS], total = 1;
    if (!text)
        return NULL;
    int n = tokenize(text, tok, len, 1);
    if (n == 0)
        n = tokenize(text, tok, len, 0);   /* only stopwords: search them after all */
    if (n == 0)
        return NULL;
    for (int i = 0, used = 1; i < n; i++) {
        const char *const *g = kn_synonyms(&tok[i], &len[i], n - i, &used);
        total += 2 * len[i] + 2 + 5 + (g ? group_size(g) : 0);
    }
    char *q = malloc(total), *o = q;
    if (!q)
        return NULL;
    for (int i = 0, used = 1; i < n; i += used) {
        const char *const *g = kn_synonyms(&tok[i], &len[i], n - i, &used);
        if (i)
            o += sprintf(o, "%s", any ? " OR " : " AND ");
        if (g)
            o = group_into(o, g, any);
        else
            o = quote_into(o, tok[i], len[i]), used = 1;
    }
    *o = '\0';
    return q;
}

/* ---- ranking ------------------------------------------------------------ */

typedef struct cand {
    long long id;
    double confidence, recency, score;
    int helped, hurt, rank_bm25, rank_conf, rank_recent, rank_outcome;
    char *line;
} cand;

/* Active lessons above the floor whose every tag applies to the scope. */
static const char scope_sql[] =
    "SELECT l.id, l.situation, l.action, l.confidence, l.helped, l.hurt,"
    " max(l.updated_at, coalesce(l.last_used_at, 0)) FROM lessons l"
    " WHERE l.kind='lesson' AND l.status='active' AND l.confidence >= ?2"
    " AND NOT EXISTS (SELECT 1 FROM lesson_tags t WHERE t.lesson=l.id AND NOT EXISTS ("
    "  SELECT 1 FROM json_each(?1) s WHERE s.value = t.tag"
    "  OR substr(s.value, 1, length(t.tag) + 1) = t.tag || '/'))";

static char *format_line(const unsigned char *sit, const unsigned char *act, double conf, int helped,
                         int hurt)
{
    char *s = NULL;
    if (asprintf(&s, "- When %s: %s (confidence %.2f, helped %d, hurt %d)\n",
                 sit ? (const char *)sit : "", act ? (const char *)act : "", conf, helped, hurt) < 0)
        return NULL;
    return s;
}

static void free_cands(cand *c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i].line);
    free(c);
}

static int load_scope(sqlite3 *db, const kiln_lesson_query *q, double floor, cand **out, int *n,
                      kiln_error *err)
{
    char *tags = kn_tags_json(q->tags, q->ntags);
    sqlite3_stmt *st = NULL;
    int cap = 0, rc;
    *out = NULL;
    *n = 0;
    if (!tags || sqlite3_prepare_v2(db, scope_sql, -1, &st, NULL) != SQLITE_OK) {
        free(tags);
        return kn_db_fail(db, err, "selecting lessons for a scope");
    }
    sqlite3_bind_text(st, 1, tags, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 2, floor);
    free(tags);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 32;
            cand *p = realloc(*out, (size_t)cap * sizeof *p);
            if (!p)
                break;
            *out = p;
        }
        cand *c = &(*out)[*n];
        memset(c, 0, sizeof *c);
        c->id = sqlite3_column_int64(st, 0);
        c->confidence = sqlite3_column_double(st, 3);
        c->helped = sqlite3_column_int(st, 4);
        c->hurt = sqlite3_column_int(st, 5);
        c->recency = sqlite3_column_double(st, 6);
        c->line = format_line(sqlite3_column_text(st, 1), sqlite3_column_text(st, 2), c->confidence,
                              c->helped, c->hurt);
        if (!c->line)
            break;
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free_cands(*out, *n);
        *out = NULL;
        *n = 0;
        return rc == SQLITE_ROW ? kiln_fail(err, "out of memory") : kn_db_fail(db, err, "selecting lessons");
    }
    return 0;
}

static cand *find(cand *c, int n, long long id)
{
    for (int i = 0; i < n; i++)
        if (c[i].id == id)
            return &c[i];
    return NULL;
}

/* BM25 rank (1 = best) of each in-scope lesson that matches the context;
 * ranks count only in-scope lessons, and equal scores share a rank (the
 * same text is as relevant, whatever its id). */
static int rank_bm25(sqlite3 *db, const char *context, cand *c, int n, kiln_error *err)
{
    char *match = kiln_fts_query(context, 1);
    if (!match)
        return 0;   /* no context: relevance has no say */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT rowid, bm25(lessons_fts) FROM lessons_fts WHERE"
                           " lessons_fts MATCH ?1 ORDER BY 2, rowid", -1, &st, NULL) != SQLITE_OK) {
        free(match);
        return kn_db_fail(db, err, "ranking lessons");
    }
    sqlite3_bind_text(st, 1, match, -1, SQLITE_TRANSIENT);
    free(match);
    int rank = 0, seen = 0, rc;
    double last = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cand *x = find(c, n, sqlite3_column_int64(st, 0));
        double score = sqlite3_column_double(st, 1);
        if (!x)
            continue;
        seen++;
        if (rank == 0 || score != last)
            rank = seen;
        last = score;
        x->rank_bm25 = rank;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "ranking lessons");
}

/* Competition ranking (1, 2, 2, 4) by a key, descending: equal keys share a
 * rank, so ties say nothing in the fusion. */
static void rank_by(cand *c, int n, int by_recency)
{
    for (int i = 0; i < n; i++) {
        double ki = by_recency ? c[i].recency : c[i].confidence;
        int better = 0;
        for (int j = 0; j < n; j++) {
            double kj = by_recency ? c[j].recency : c[j].confidence;
            better += kj > ki;
        }
        if (by_recency)
            c[i].rank_recent = better + 1;
        else
            c[i].rank_conf = better + 1;
    }
}

/* 2 confirmed gains, 1 untested (or even), 0 hurt more often than helped. */
static int outcome_tier(const cand *c)
{
    return c->helped > c->hurt ? 2 : c->hurt > c->helped ? 0 : 1;
}

static void rank_by_outcome(cand *c, int n)
{
    for (int i = 0; i < n; i++) {
        int better = 0;
        for (int j = 0; j < n; j++)
            better += outcome_tier(&c[j]) > outcome_tier(&c[i]);
        c[i].rank_outcome = better + 1;
    }
}

static int by_score(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static void fuse(cand *c, int n)
{
    rank_by(c, n, 0);
    rank_by(c, n, 1);
    rank_by_outcome(c, n);
    for (int i = 0; i < n; i++) {
        c[i].score = W_CONF / (RRF_K + c[i].rank_conf) + W_RECENT / (RRF_K + c[i].rank_recent) +
                     W_OUTCOME / (RRF_K + c[i].rank_outcome);
        if (c[i].rank_bm25)
            c[i].score += W_BM25 / (RRF_K + c[i].rank_bm25);
    }
    if (n > 1)   /* qsort wants a non-NULL base even for nothing */
        qsort(c, (size_t)n, sizeof *c, by_score);
}

static const char header[] = "Lessons from earlier measurements (apply only where they fit):\n";

/* Whole lessons, best first, while they fit the budget (header included);
 * one that does not fit is skipped so a shorter one further down may. */
static char *fill(const cand *c, int nc, size_t budget, int max, long long *ids, int *n)
{
    size_t used = strlen(header);
    char *text = calloc(1, budget + 1);
    *n = 0;
    if (!text)
        return NULL;
    for (int i = 0; i < nc && *n < max; i++) {
        size_t len = strlen(c[i].line);
        if (used + len > budget)
            continue;
        if (*n == 0)
            strcpy(text, header);
        strcat(text, c[i].line);
        used += len;
        ids[(*n)++] = c[i].id;
    }
    return text;
}

int kiln_lessons_for_prompt(sqlite3 *db, const kiln_lesson_query *q, char **text, long long *ids,
                            int cap, int *n, kiln_error *err)
{
    cand *c = NULL;
    int nc = 0;
    *text = NULL;
    *n = 0;
    if (!q || cap < 0 || (cap > 0 && !ids))
        return kiln_fail(err, "lessons: bad arguments to kiln_lessons_for_prompt");
    size_t budget = q->budget_chars ? q->budget_chars : 1500;
    double floor = q->confidence_floor > 0 ? q->confidence_floor : 0.3;
    int max = q->max_lessons > 0 ? q->max_lessons : 5;
    if (max > cap)
        max = cap;
    if (load_scope(db, q, floor, &c, &nc, err) < 0)
        return -1;
    if (rank_bm25(db, q->context, c, nc, err) < 0) {
        free_cands(c, nc);
        return -1;
    }
    fuse(c, nc);
    *text = fill(c, nc, budget, max, ids, n);
    free_cands(c, nc);
    return *text ? 0 : kiln_fail(err, "out of memory");
}

/* ---- listing ------------------------------------------------------------ */

static const char *order_by(const kiln_lesson_filter *f)
{
    const char *s = f->sort;
    if (!s)
        return f->query ? "f.score, l.id" : "l.confidence DESC, l.id";
    if (strcmp(s, "recent") == 0)
        return "max(l.updated_at, coalesce(l.last_used_at, 0)) DESC, l.id DESC";
    if (strcmp(s, "uses") == 0)
        return "l.shown DESC, l.helped DESC, l.id";
    if (strcmp(s, "id") == 0)
        return "l.id";
    return "l.confidence DESC, l.id";
}

static char *list_sql(const kiln_lesson_filter *f)
{
    char *sql = NULL;
    const char *st = f->status ? f->status : "active";
    const char *kd = f->kind ? f->kind : "lesson";
    if (asprintf(&sql,
                 "SELECT " KN_COLUMNS " FROM lessons l%s WHERE 1%s%s"
                 " AND NOT EXISTS (SELECT 1 FROM json_each(?1) q WHERE NOT EXISTS ("
                 "  SELECT 1 FROM lesson_tags t WHERE t.lesson=l.id AND (t.tag = q.value"
                 "  OR substr(t.tag, 1, length(q.value) + 1) = q.value || '/')))"
                 " ORDER BY %s LIMIT ?4",
                 f->query ? " JOIN (SELECT rowid AS rid, bm25(lessons_fts) AS score FROM lessons_fts"
                            " WHERE lessons_fts MATCH ?2) f ON f.rid = l.id" : "",
                 strcmp(st, "all") == 0 ? "" : " AND l.status = ?3",
                 strcmp(kd, "all") == 0 ? "" : " AND l.kind = ?5", order_by(f)) < 0)
        return NULL;
    return sql;
}

static int collect(sqlite3 *db, sqlite3_stmt *st, kiln_lesson **out, int *n, kiln_error *err)
{
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            kiln_lesson *p = realloc(*out, (size_t)cap * sizeof *p);
            if (!p)
                return kiln_fail(err, "out of memory");
            *out = p;
        }
        kn_read_row(st, &(*out)[(*n)++]);
    }
    if (rc != SQLITE_DONE)
        return kn_db_fail(db, err, "listing lessons");
    for (int i = 0; i < *n; i++)
        if (kn_read_tags(db, &(*out)[i], err) < 0)
            return -1;
    return 0;
}

static int list_once(sqlite3 *db, const kiln_lesson_filter *f, const char *match, kiln_lesson **out,
                     int *n, kiln_error *err)
{
    char *sql = list_sql(f), *tags = kn_tags_json(f->tags, f->ntags);
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (!sql || !tags)
        rc = kiln_fail(err, "out of memory");
    else if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        rc = kn_db_fail(db, err, "listing lessons");
    else {
        sqlite3_bind_text(st, 1, tags, -1, SQLITE_TRANSIENT);
        if (match)
            sqlite3_bind_text(st, 2, match, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, f->status ? f->status : "active", -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : -1);
        sqlite3_bind_text(st, 5, f->kind ? f->kind : "lesson", -1, SQLITE_TRANSIENT);
        rc = collect(db, st, out, n, err);
    }
    sqlite3_finalize(st);
    free(sql);
    free(tags);
    return rc;
}

int kiln_lessons_list(sqlite3 *db, const kiln_lesson_filter *f, kiln_lesson **out, int *n,
                      kiln_error *err)
{
    kiln_lesson_filter none = {0};
    *out = NULL;
    *n = 0;
    if (!f)
        f = &none;
    int rc = 0;
    if (!f->query)
        rc = list_once(db, f, NULL, out, n, err);
    /* Every word first; when nothing has them all, any word (ranked by BM25).
     * A query with nothing searchable in it finds nothing. */
    for (int any = 0; f->query && any <= 1 && *n == 0 && rc == 0; any++) {
        char *match = kiln_fts_query(f->query, any);
        if (!match)
            break;
        rc = list_once(db, f, match, out, n, err);
        free(match);
    }
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
