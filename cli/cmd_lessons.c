/* cmd_lessons.c - `kiln lessons`: read and curate the lessons a search
 * learned (list, show, search, add, edit, retire, export, import, distill,
 * stats). Tables on a terminal, plain aligned text in a pipe, JSON with
 * --json. The database is opened through kiln_db_open so that an old one is
 * upgraded and a corrupt or foreign file is refused by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lessons.h"
#include "lessons_rewrite.h"
#include "rundb.h"

static const char usage[] =
    "usage: kiln lessons SUBCOMMAND [options] [--workspace DIR]\n"
    "\n"
    "The lessons of a workspace (DIR/.kiln/kiln.db, default ./kiln-work): what a\n"
    "change did in which situation, scoped by tags (op/norm/rmsnorm, dtype/bf16,\n"
    "arch/sm_90, backend/cpu, shape/decode; a tag matches itself and below it).\n"
    "\n"
    "subcommands:\n"
    "  list [--tag T]... [--status active|retired|all] [--kind lesson|note|all]\n"
    "       [--sort confidence|recent|uses] [--limit N] [--json]\n"
    "  show ID [--json]\n"
    "  search QUERY [--tag T]... [--status S] [--limit N] [--json]\n"
    "  add --situation TEXT --action TEXT --tag T [--tag T]... [--confidence C] [--json]\n"
    "  edit ID [--situation TEXT] [--action TEXT] [--tag T]... (replaces) [--confidence C]\n"
    "  retire ID [--reason TEXT]\n"
    "  export [--format json|md] [--status S] [--kind K]   (to stdout)\n"
    "  import FILE                 a JSON export ('-' for stdin); present lessons are skipped\n"
    "  distill [--dry-run] [--floor F] [--json] [--model M [--base-url URL] [--agent A]]\n"
    "                              merge near-duplicates of one polarity (the model, if\n"
    "                              given, rewrites each merge), retire contradicted and\n"
    "                              weak lessons their outcomes do not support, decay\n"
    "                              unused ones; prints every change\n"
    "  stats [--json]              counts by status and tag; prompt characters spent\n"
    "\n"
    "Exit status: 0 ok, 1 not found, 2 bad input or no usable database, 3 internal error.\n";

#define MAX_TAGS 16

typedef struct opts {
    const char *sub, *arg, *workspace, *status, *kind, *sort, *format, *situation, *action;
    const char *confidence, *reason, *floor, *limit, *model, *base_url, *agent;
    const char *tags[MAX_TAGS];
    int ntags, json, dry_run;
} opts;

/* ---- command line --------------------------------------------------------- */

static int flag(int argc, char **argv, int *i, opts *o, int *matched)
{
    static const char *names[] = {"--workspace", "--status", "--kind", "--sort", "--format",
                                  "--situation", "--action", "--confidence", "--reason", "--floor",
                                  "--limit", "--model", "--base-url", "--agent"};
    const char **slots[] = {&o->workspace, &o->status, &o->kind, &o->sort, &o->format,
                            &o->situation, &o->action, &o->confidence, &o->reason, &o->floor,
                            &o->limit, &o->model, &o->base_url, &o->agent};
    int miss = 0;
    const char *v;
    *matched = 1;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if ((v = kiln_flag_value(argc, argv, i, names[k], &miss))) {
            *slots[k] = v;
            return 0;
        }
    if (!miss && (v = kiln_flag_value(argc, argv, i, "--tag", &miss))) {
        if (o->ntags == MAX_TAGS)
            return fprintf(stderr, "kiln lessons: at most %d tags\n", MAX_TAGS), -1;
        o->tags[o->ntags++] = v;
        return 0;
    }
    if (miss)
        return fprintf(stderr, "kiln lessons: %s needs a value\n", argv[*i]), -1;
    *matched = 0;
    return 0;
}

static int parse(int argc, char **argv, opts *o)
{
    o->sub = argv[1];
    for (int i = 2; i < argc; i++) {
        int matched = 0;
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            exit(KILN_EXIT_OK);
        }
        if (flag(argc, argv, &i, o, &matched) < 0)
            return -1;
        if (matched)
            continue;
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--dry-run") == 0)
            o->dry_run = 1;
        else if ((argv[i][0] == '-' && argv[i][1] != '\0') || o->arg)
            return fprintf(stderr, "kiln lessons %s: unexpected argument '%s'\n", o->sub, argv[i]), -1;
        else
            o->arg = argv[i];
    }
    return 0;
}

static int one_of(const char *v, const char *const *allowed, const char *what)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(v, allowed[i]) == 0)
            return 0;
    fprintf(stderr, "kiln lessons: bad %s '%s'\n", what, v);
    return -1;
}

static int check_opts(const opts *o)
{
    static const char *const status[] = {"active", "retired", "all", NULL};
    static const char *const kind[] = {"lesson", "note", "all", NULL};
    static const char *const sort[] = {"confidence", "recent", "uses", "id", NULL};
    static const char *const format[] = {"json", "md", NULL};
    if ((o->status && one_of(o->status, status, "--status")) ||
        (o->kind && one_of(o->kind, kind, "--kind")) ||
        (o->sort && one_of(o->sort, sort, "--sort")) ||
        (o->format && one_of(o->format, format, "--format")))
        return -1;
    return 0;
}

static int parse_number(const char *v, double lo, double hi, const char *what, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || d < lo || d > hi)
        return fprintf(stderr, "kiln lessons: bad %s '%s' (want %g to %g)\n", what, v, lo, hi), -1;
    *out = d;
    return 0;
}

static int parse_id(const char *v, long long *id)
{
    char *end;
    if (!v)
        return fprintf(stderr, "kiln lessons: need a lesson ID\n"), -1;
    *id = strtoll(v, &end, 10);
    if (*v == '#')
        *id = strtoll(v + 1, &end, 10);
    if (*end || *id <= 0)
        return fprintf(stderr, "kiln lessons: bad lesson ID '%s'\n", v), -1;
    return 0;
}

/* ---- the database ---------------------------------------------------------- */

static int open_db(const opts *o, sqlite3 **db)
{
    const char *ws = o->workspace ? o->workspace : "kiln-work";
    char path[4096];
    kiln_error err = {0};
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", ws);
    /* kiln_db_open would create it: a missing database is a user mistake. */
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "kiln lessons: no kiln database in %s (run kiln search first)\n", ws);
        return -1;
    }
    if (kiln_db_open(db, path, &err) < 0) {
        fprintf(stderr, "kiln lessons: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int fail(const char *what, const kiln_error *err, int code)
{
    fprintf(stderr, "kiln lessons %s: %s\n", what, err->msg);
    return code;
}

static void print_json(cJSON *o)
{
    char *s = cJSON_Print(o);
    if (s)
        puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* ---- list, show, search ------------------------------------------------------ */

static int term_width(void)
{
    struct winsize w;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40)
        return w.ws_col;
    const char *c = getenv("COLUMNS");
    return c && atoi(c) >= 40 ? atoi(c) : 100;
}

static void join_tags(const kiln_lesson *l, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < l->ntags; i++) {
        size_t k = strlen(out);
        snprintf(out + k, cap - k, "%s%s", i ? "," : "", l->tags[i]);
    }
    if (!l->ntags)
        snprintf(out, cap, "-");
}

/* Print at most width display columns of s (UTF-8 aware), "..." when cut. */
static void print_cut(const char *s, int width)
{
    int cols = 0;
    const char *p = s;
    for (; *p; p++)
        cols += ((unsigned char)*p & 0xC0) != 0x80;
    if (width <= 0 || cols <= width) {
        fputs(s, stdout);
        return;
    }
    cols = 0;
    for (p = s; *p; p++) {
        int start = ((unsigned char)*p & 0xC0) != 0x80;
        if (start && ++cols > width - 3)
            break;
        putchar(*p);
    }
    fputs("...", stdout);
}

/* One table for list and search: on a terminal the text is cut to the
 * window; in a pipe every line is whole so grep sees all of it. */
static void print_table(const kiln_lesson *ls, int n, int show_status)
{
    int tty = isatty(STDOUT_FILENO), width = tty ? term_width() : 0, tagw = 4;
    char tags[KILN_LESSON_TAGS * KILN_TAG_MAX];
    for (int i = 0; i < n; i++) {
        join_tags(&ls[i], tags, sizeof tags);
        int len = (int)strlen(tags);
        tagw = len > tagw ? len : tagw;
    }
    if (tty && tagw > 36)
        tagw = 36;
    printf("%5s  %4s  %5s  %-9s  %s%-*s  %s\n", "ID", "CONF", "SHOWN", "HELP/HURT",
           show_status ? "STATUS   " : "", tagw, "TAGS", "LESSON (when SITUATION: ACTION)");
    for (int i = 0; i < n; i++) {
        const kiln_lesson *l = &ls[i];
        char hh[32], text[2 * KILN_LESSON_TEXT + 16];
        join_tags(l, tags, sizeof tags);
        snprintf(hh, sizeof hh, "%d/%d", l->helped, l->hurt);
        snprintf(text, sizeof text, "%s: %s", l->situation, l->action);
        printf("%5lld  %4.2f  %5d  %-9s  ", l->id, l->confidence, l->shown, hh);
        if (show_status)
            printf("%-8s ", l->status);
        print_cut(tags, tty ? tagw : 0);
        printf("%*s  ", tagw - (int)strlen(tags) > 0 ? tagw - (int)strlen(tags) : 0, "");
        print_cut(text, tty ? width - (33 + tagw + (show_status ? 9 : 0)) : 0);
        putchar('\n');
    }
    if (tty)
        printf("(%d lesson%s)\n", n, n == 1 ? "" : "s");
}

static void print_list_json(const kiln_lesson *ls, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, kiln_lesson_json(&ls[i]));
    print_json(arr);
}

static int filter_of(const opts *o, kiln_lesson_filter *f)
{
    double limit = 0;
    memset(f, 0, sizeof *f);
    if (o->limit && parse_number(o->limit, 1, 1e9, "--limit", &limit) < 0)
        return -1;
    f->tags = o->tags;
    f->ntags = o->ntags;
    f->status = o->status;
    f->kind = o->kind;
    f->sort = o->sort;
    f->limit = (int)limit;
    return 0;
}

static int cmd_list(sqlite3 *db, const opts *o, const char *query)
{
    kiln_lesson_filter f;
    kiln_lesson *ls = NULL;
    int n = 0;
    kiln_error err = {0};
    if (filter_of(o, &f) < 0)
        return KILN_EXIT_BAD_INPUT;
    f.query = query;
    if (kiln_lessons_list(db, &f, &ls, &n, &err) < 0)
        return fail(o->sub, &err, KILN_EXIT_INTERNAL);
    if (o->json)
        print_list_json(ls, n);
    else if (n == 0)
        printf("no lessons%s\n", query ? " match" : "");
    else
        print_table(ls, n, o->status && strcmp(o->status, "active") != 0);
    free(ls);
    return KILN_EXIT_OK;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static double json_num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : 0;
}

/* The verdict's numbers and the confirmed outcome, as the evidence holds
 * them (knowledge/record.c, outcome.c); the whole object after them. */
static void print_evidence(const char *evidence)
{
    cJSON *e = cJSON_Parse(evidence);
    const char *shape = json_str(e, "shape"), *outcome = json_str(e, "outcome");
    if (shape) {
        printf("  numbers:    %s: %.1f us", shape, json_num(e, "time_us"));
        if (json_num(e, "gbps") > 0)
            printf(", %.0f GB/s", json_num(e, "gbps"));
        if (json_num(e, "roofline") > 0)
            printf(", %.0f%% of the roofline", 100 * json_num(e, "roofline"));
        printf("\n");
    }
    if (outcome)
        printf("  outcome:    %s (confirmed %+d: %s)\n", outcome, (int)json_num(e, "confirmed"),
               json_str(e, "confirmed_why") ? json_str(e, "confirmed_why") : "?");
    if (strcmp(evidence, "{}") != 0)
        printf("  evidence:   %s\n", evidence);
    cJSON_Delete(e);
}

static void print_lesson(const kiln_lesson *l)
{
    char tags[KILN_LESSON_TAGS * KILN_TAG_MAX];
    join_tags(l, tags, sizeof tags);
    printf("lesson #%lld (%s, %s%s%s)\n", l->id, l->kind, l->status,
           l->retired_reason[0] ? ": " : "", l->retired_reason);
    printf("  when:       %s\n  do:         %s\n  tags:       %s\n", l->situation, l->action, tags);
    printf("  source:     %s\n  confidence: %.2f (shown %d, helped %d, hurt %d)\n", l->source,
           l->confidence, l->shown, l->helped, l->hurt);
    if (l->change[0])
        printf("  hypothesis: %s\n", l->change);
    if (l->effect > 0)
        printf("  effect:     %.3fx against the parent\n", l->effect);
    if (l->run[0])
        printf("  from:       run %s, candidate %d\n", l->run, l->candidate);
    print_evidence(l->evidence);
}

static int cmd_show(sqlite3 *db, const opts *o)
{
    long long id;
    kiln_lesson l;
    kiln_error err = {0};
    if (parse_id(o->arg, &id) < 0)
        return KILN_EXIT_BAD_INPUT;
    int found = kiln_lesson_get(db, id, &l, &err);
    if (found < 0)
        return fail("show", &err, KILN_EXIT_INTERNAL);
    if (!found)
        return fprintf(stderr, "kiln lessons show: no lesson #%lld\n", id), KILN_EXIT_FAIL;
    if (o->json)
        print_json(kiln_lesson_json(&l));
    else
        print_lesson(&l);
    return KILN_EXIT_OK;
}

/* ---- add, edit, retire -------------------------------------------------------- */

static int cmd_add(sqlite3 *db, const opts *o)
{
    kiln_lesson l;
    long long id;
    kiln_error err = {0};
    kiln_lesson_init(&l);
    if (!o->situation || !o->action || o->ntags == 0)
        return fprintf(stderr, "kiln lessons add: need --situation, --action and at least one --tag\n"),
               KILN_EXIT_BAD_INPUT;
    if (strlen(o->situation) >= sizeof l.situation || strlen(o->action) >= sizeof l.action)
        return fprintf(stderr, "kiln lessons add: situation and action are at most %d bytes\n",
                       KILN_LESSON_TEXT - 1), KILN_EXIT_BAD_INPUT;
    if (o->confidence && parse_number(o->confidence, 0, 1, "--confidence", &l.confidence) < 0)
        return KILN_EXIT_BAD_INPUT;
    snprintf(l.situation, sizeof l.situation, "%s", o->situation);
    snprintf(l.action, sizeof l.action, "%s", o->action);
    for (int i = 0; i < o->ntags; i++)
        snprintf(l.tags[l.ntags++], KILN_TAG_MAX, "%s", o->tags[i]);
    if (kiln_lesson_add(db, &l, &id, &err) < 0)
        return fail("add", &err, KILN_EXIT_BAD_INPUT);
    if (o->json)
        printf("{\"id\": %lld}\n", id);
    else
        printf("added lesson #%lld\n", id);
    return KILN_EXIT_OK;
}

static int cmd_edit(sqlite3 *db, const opts *o)
{
    long long id;
    double conf = -1;
    kiln_error err = {0};
    if (parse_id(o->arg, &id) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (o->confidence && parse_number(o->confidence, 0, 1, "--confidence", &conf) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (!o->situation && !o->action && !o->ntags && conf < 0)
        return fprintf(stderr, "kiln lessons edit: nothing to change (--situation, --action, --tag,"
                               " --confidence)\n"), KILN_EXIT_BAD_INPUT;
    int rc = kiln_lesson_edit(db, id, o->situation, o->action, o->tags, o->ntags ? o->ntags : -1,
                              conf, &err);
    if (rc < 0)
        return fail("edit", &err, KILN_EXIT_BAD_INPUT);
    if (rc == 0)
        return fprintf(stderr, "kiln lessons edit: no lesson #%lld\n", id), KILN_EXIT_FAIL;
    printf("edited lesson #%lld\n", id);
    return KILN_EXIT_OK;
}

static int cmd_retire(sqlite3 *db, const opts *o)
{
    long long id;
    kiln_error err = {0};
    if (parse_id(o->arg, &id) < 0)
        return KILN_EXIT_BAD_INPUT;
    int rc = kiln_lesson_retire(db, id, o->reason, &err);
    if (rc < 0)
        return fail("retire", &err, KILN_EXIT_INTERNAL);
    if (rc == 0)
        return fprintf(stderr, "kiln lessons retire: no active lesson #%lld\n", id), KILN_EXIT_FAIL;
    printf("retired lesson #%lld\n", id);
    return KILN_EXIT_OK;
}

/* ---- export, import ------------------------------------------------------------ */

static int cmd_export(sqlite3 *db, const opts *o)
{
    kiln_lesson_filter f = {.tags = o->tags, .ntags = o->ntags, .status = o->status ? o->status : "all",
                            .kind = o->kind, .sort = "id"};
    kiln_lesson *ls = NULL;
    int n = 0;
    kiln_error err = {0};
    if (kiln_lessons_list(db, &f, &ls, &n, &err) < 0)
        return fail("export", &err, KILN_EXIT_INTERNAL);
    int md = o->format && strcmp(o->format, "md") == 0;
    char *s = md ? kiln_lessons_export_md(ls, n) : kiln_lessons_export_json(ls, n);
    free(ls);
    if (!s)
        return fprintf(stderr, "kiln lessons export: out of memory\n"), KILN_EXIT_INTERNAL;
    fputs(s, stdout);
    if (!md)
        putchar('\n');
    free(s);
    return KILN_EXIT_OK;
}

static char *read_all(FILE *f)
{
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap), *p;
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            if (!(p = realloc(buf, cap))) {
                free(buf);
                return NULL;
            }
            buf = p;
        }
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static int cmd_import(sqlite3 *db, const opts *o)
{
    kiln_error err = {0};
    int added = 0, skipped = 0;
    if (!o->arg)
        return fprintf(stderr, "kiln lessons import: need FILE\n"), KILN_EXIT_BAD_INPUT;
    FILE *f = strcmp(o->arg, "-") == 0 ? stdin : fopen(o->arg, "r");
    if (!f)
        return fprintf(stderr, "kiln lessons import: %s: %s\n", o->arg, strerror(errno)),
               KILN_EXIT_BAD_INPUT;
    char *text = read_all(f);
    if (f != stdin)
        fclose(f);
    if (!text)
        return fprintf(stderr, "kiln lessons import: %s: cannot read\n", o->arg), KILN_EXIT_INTERNAL;
    int rc = kiln_lessons_import_json(db, text, &added, &skipped, &err);
    free(text);
    if (rc < 0)
        return fprintf(stderr, "kiln lessons import: %s: %s\n", o->arg, err.msg), KILN_EXIT_BAD_INPUT;
    printf("imported %d lesson%s, skipped %d already present\n", added, added == 1 ? "" : "s", skipped);
    return KILN_EXIT_OK;
}

/* ---- distill, stats -------------------------------------------------------------- */

static void print_changes_json(const kiln_distill_change *c, int n, int dry)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "id", (double)c[i].id);
        cJSON_AddStringToObject(x, "change", c[i].what);
        if (c[i].into)
            cJSON_AddNumberToObject(x, "into", (double)c[i].into);
        cJSON_AddNumberToObject(x, "confidence_before", c[i].before);
        cJSON_AddNumberToObject(x, "confidence_after", c[i].after);
        cJSON_AddStringToObject(x, "reason", c[i].reason);
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddBoolToObject(o, "dry_run", dry);
    cJSON_AddItemToObject(o, "changes", arr);
    print_json(o);
}

static void print_changes(const kiln_distill_change *c, int n, int dry)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(c[i].what, "decay") == 0)
            printf("decay   #%lld: confidence %.2f -> %.2f (%s)\n", c[i].id, c[i].before, c[i].after,
                   c[i].reason);
        else if (strcmp(c[i].what, "merge") == 0)
            printf("merge   #%lld into #%lld: %s\n", c[i].id, c[i].into, c[i].reason);
        else if (strcmp(c[i].what, "rewrite") == 0)
            printf("rewrite #%lld: %s\n", c[i].id, c[i].reason);
        else
            printf("retire  #%lld (confidence %.2f): %s\n", c[i].id, c[i].before, c[i].reason);
    }
    if (n == 0)
        printf("no changes\n");
    else
        printf("%d change%s%s\n", n, n == 1 ? "" : "s", dry ? " (dry run: nothing written)" : "");
}

/* With --model, a model rewrites merged lessons (lessons_rewrite.c); the
 * flags are those of kiln search. */
static int rewriter(const opts *o, kiln_rewrite_ctx *r, kiln_distill_opts *d)
{
    kiln_error err = {0};
    if (!o->model) {
        if (o->base_url || o->agent)
            return fprintf(stderr, "kiln lessons distill: --base-url and --agent need --model\n"), -1;
        return 0;
    }
    if (kiln_rewrite_setup(r, o->agent, o->model, o->base_url, &err) < 0)
        return fail("distill", &err, -1);
    d->rewrite = kiln_rewrite_lesson;
    d->rewrite_ctx = r;
    return 0;
}

static int cmd_distill(sqlite3 *db, const opts *o)
{
    kiln_distill_opts d = {.dry_run = o->dry_run};
    kiln_rewrite_ctx r = {0};
    kiln_distill_change *c = NULL;
    int n = 0;
    kiln_error err = {0};
    if (o->floor && parse_number(o->floor, 0.001, 1, "--floor", &d.floor) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (rewriter(o, &r, &d) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (kiln_lessons_distill(db, &d, &c, &n, &err) < 0)
        return fail("distill", &err, KILN_EXIT_INTERNAL);
    if (o->json)
        print_changes_json(c, n, o->dry_run);
    else
        print_changes(c, n, o->dry_run);
    if (r.failed && !o->json)
        printf("the model failed %d of %d rewrite%s: those merges keep the kept lesson's text\n",
               r.failed, r.calls, r.calls == 1 ? "" : "s");
    free(c);
    return KILN_EXIT_OK;
}

static void print_stats_json(const kiln_lesson_stats *s)
{
    cJSON *o = cJSON_CreateObject(), *tags = cJSON_CreateObject();
    const char *names[] = {"active", "retired", "notes", "measured", "model", "person"};
    const int ints[] = {s->active, s->retired, s->notes, s->measured, s->model, s->person};
    for (int i = 0; i < 6; i++)
        cJSON_AddNumberToObject(o, names[i], ints[i]);
    cJSON_AddNumberToObject(o, "prompts", (double)s->prompts);
    cJSON_AddNumberToObject(o, "lessons_shown", (double)s->shown);
    cJSON_AddNumberToObject(o, "lesson_chars", (double)s->lesson_chars);
    cJSON_AddNumberToObject(o, "prompt_chars", (double)s->prompt_chars);
    cJSON_AddNumberToObject(o, "kept", (double)s->kept);
    cJSON_AddNumberToObject(o, "regressed", (double)s->regressed);
    for (int i = 0; i < s->ntags; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "active", s->tags[i].active);
        cJSON_AddNumberToObject(t, "retired", s->tags[i].retired);
        cJSON_AddItemToObject(tags, s->tags[i].tag, t);
    }
    cJSON_AddItemToObject(o, "tags", tags);
    print_json(o);
}

static void print_stats(const kiln_lesson_stats *s)
{
    printf("lessons:    %d active (measured %d, model %d, person %d), %d retired; %d failure notes\n",
           s->active, s->measured, s->model, s->person, s->retired, s->notes);
    printf("prompts:    %lld reported; %lld lessons shown; kept %lld, regressed %lld\n", s->prompts,
           s->shown, s->kept, s->regressed);
    printf("characters: %lld on lessons of %lld in prompts (%.1f%%)\n", s->lesson_chars,
           s->prompt_chars, s->prompt_chars ? 100.0 * s->lesson_chars / s->prompt_chars : 0.0);
    if (s->ntags == 0)
        return;
    printf("\n%-40s %6s %7s\n", "TAG", "ACTIVE", "RETIRED");
    for (int i = 0; i < s->ntags; i++)
        printf("%-40s %6d %7d\n", s->tags[i].tag, s->tags[i].active, s->tags[i].retired);
}

static int cmd_stats(sqlite3 *db, const opts *o)
{
    kiln_lesson_stats s;
    kiln_error err = {0};
    if (kiln_lessons_stats(db, &s, &err) < 0)
        return fail("stats", &err, KILN_EXIT_INTERNAL);
    if (o->json)
        print_stats_json(&s);
    else
        print_stats(&s);
    kiln_lessons_stats_free(&s);
    return KILN_EXIT_OK;
}

/* ---- dispatch ---------------------------------------------------------------------- */

static int dispatch(sqlite3 *db, const opts *o)
{
    if (strcmp(o->sub, "list") == 0)
        return cmd_list(db, o, NULL);
    if (strcmp(o->sub, "search") == 0)
        return o->arg ? cmd_list(db, o, o->arg)
                      : (fprintf(stderr, "kiln lessons search: need QUERY\n"), KILN_EXIT_BAD_INPUT);
    if (strcmp(o->sub, "show") == 0)
        return cmd_show(db, o);
    if (strcmp(o->sub, "add") == 0)
        return cmd_add(db, o);
    if (strcmp(o->sub, "edit") == 0)
        return cmd_edit(db, o);
    if (strcmp(o->sub, "retire") == 0)
        return cmd_retire(db, o);
    if (strcmp(o->sub, "export") == 0)
        return cmd_export(db, o);
    if (strcmp(o->sub, "import") == 0)
        return cmd_import(db, o);
    if (strcmp(o->sub, "distill") == 0)
        return cmd_distill(db, o);
    return cmd_stats(db, o);
}

static int known(const char *sub)
{
    static const char *subs[] = {"list", "show", "search", "add", "edit", "retire", "export",
                                 "import", "distill", "stats"};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (strcmp(sub, subs[i]) == 0)
            return 1;
    return 0;
}

int kiln_cmd_lessons(int argc, char **argv)
{
    opts o = {0};
    sqlite3 *db = NULL;
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (!known(argv[1]))
        return fprintf(stderr, "kiln lessons: unknown subcommand '%s'\n\n%s", argv[1], usage),
               KILN_EXIT_BAD_INPUT;
    if (parse(argc, argv, &o) < 0 || check_opts(&o) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (open_db(&o, &db) < 0)
        return KILN_EXIT_BAD_INPUT;
    int rc = dispatch(db, &o);
    kiln_db_close(db);
    return rc;
}
