/* plant_check.c - runs one red-team or honest plant through the real `kiln
 * verify` and checks the verdict against the expectation in the plant's
 * header (kiln-task, kiln-expect, kiln-stages, kiln-codes).
 *
 *   plant_check KILN PLANT.c [extra kiln verify args...]
 *
 * A CUDA plant (PLANT.cu) also names its dtype (kiln-dtype) and is run with
 * --backend cuda --dtype DTYPE --group small: the CUDA group that keeps the
 * shapes the plants' expectations were set on (a plant may name another
 * with kiln-group); it is skipped (exit 77, ctest's SKIP_RETURN_CODE) where
 * there is no NVIDIA GPU or the kiln build has no CUDA worker
 * (kiln-worker-cuda next to kiln). A CPU plant runs on the task's default
 * group unless it names one. Optional: kiln-max-speedup (a pass claims no
 * more than this geomean), kiln-min-speedup (nor less), kiln-forbid (text that must appear nowhere in
 * kiln's output, such as what the plant printed on a hidden shape),
 * kiln-want (text that must appear in it, such as the escaped form of what
 * the plant printed, so that a check of its route cannot pass vacuously),
 * and kiln-clean-output: yes (a plant that prints raw bytes: every byte
 * kiln writes, on stdout and stderr, with --json and again without, must
 * be valid UTF-8 with no control but newline and tab, no DEL, no C1 and no
 * bidi control, and so must every string of the parsed JSON), and
 * kiln-baseline: self (timed against itself: the same code in the same
 * layout, which a plant that cheats only as the candidate needs, since
 * the same C in another object can run at another speed). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_SKIP 77

typedef struct expect {
    char task[64], status[16], stages[256], codes[256], dtype[16], group[64];
    char max_speedup[32];   /* a pass must not claim more than this geomean speedup */
    char min_speedup[32];   /* ... nor less than this (a plant that slows itself only
                               where kiln must never time it) */
    char forbid[64];        /* text that must appear nowhere in kiln's output */
    char want[64];          /* text that must appear in it */
    char clean[8];          /* "yes": every byte of kiln's output must be safe to show */
    char baseline[16];      /* "self": the plant is its own baseline */
} expect;

static void header_value(const char *line, const char *key, char *out, size_t len)
{
    const char *p = strstr(line, key);
    if (!p)
        return;
    p += strlen(key);
    while (*p == ' ')
        p++;
    snprintf(out, len, "%s", p);
    out[strcspn(out, "\r\n")] = '\0';
}

static int read_expect(const char *path, expect *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    for (int i = 0; i < 20 && fgets(line, sizeof line, f); i++) {
        header_value(line, "kiln-task:", e->task, sizeof e->task);
        header_value(line, "kiln-expect:", e->status, sizeof e->status);
        header_value(line, "kiln-stages:", e->stages, sizeof e->stages);
        header_value(line, "kiln-codes:", e->codes, sizeof e->codes);
        header_value(line, "kiln-dtype:", e->dtype, sizeof e->dtype);
        header_value(line, "kiln-group:", e->group, sizeof e->group);
        header_value(line, "kiln-max-speedup:", e->max_speedup, sizeof e->max_speedup);
        header_value(line, "kiln-min-speedup:", e->min_speedup, sizeof e->min_speedup);
        header_value(line, "kiln-forbid:", e->forbid, sizeof e->forbid);
        header_value(line, "kiln-want:", e->want, sizeof e->want);
        header_value(line, "kiln-clean-output:", e->clean, sizeof e->clean);
        header_value(line, "kiln-baseline:", e->baseline, sizeof e->baseline);
    }
    fclose(f);
    return e->task[0] && e->status[0] ? 0 : -1;
}

/* Is word one of the space-separated words of list? */
static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

static int is_cuda_plant(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".cu") == 0;
}

/* Why a CUDA plant cannot run here, or NULL when it can. */
static const char *cuda_skip_reason(const char *kiln)
{
    if (access("/dev/nvidia0", F_OK) != 0 || system("nvidia-smi -L >/dev/null 2>&1") != 0)
        return "no NVIDIA GPU";
    char worker[4096];
    const char *slash = strrchr(kiln, '/');
    int dir = slash ? (int)(slash - kiln) : 1;
    snprintf(worker, sizeof worker, "%.*s/kiln-worker-cuda", dir, slash ? kiln : ".");
    if (access(worker, X_OK) != 0)
        return "kiln was built without the CUDA backend (no kiln-worker-cuda)";
    return NULL;
}

/* The whole of a stream, NUL-terminated (its length in *len); NULL if out
 * of memory. */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 1 << 20, n = 0, got;
    char *out = malloc(cap);
    while (out && (got = fread(out + n, 1, cap - 1 - n, f)) > 0)
        n += got;
    if (out)
        out[n] = '\0';
    *len = n;
    return out;
}

/* kiln verify on the plant: its stdout (NULL on failure; its length in
 * *len), with its stderr in *err_out (err_len) and its exit status. json:
 * with --json. */
static char *run_kiln(int argc, char **argv, const expect *e, int json, int *exit_code,
                      size_t *len, char **err_out, size_t *err_len)
{
    /* A plant with a speedup ceiling is judged by its timing: a longer
     * budget spreads its pairs over more of the load beside it (an honest
     * 1.3x plant once measured 2.08x in 300 ms on a busy machine). */
    char cmd[8192], errpath[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(errpath, sizeof errpath, "%s/plant-check-err-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int efd = mkstemp(errpath);
    if (efd < 0)
        return NULL;
    close(efd);
    size_t u = (size_t)snprintf(cmd, sizeof cmd, "'%s' verify '%s' --task %s%s --no-daemon --timing-ms %d",
                                argv[1], argv[2], e->task, json ? " --json" : "",
                                e->max_speedup[0] || e->min_speedup[0] ? 1000 : 300);
    if (is_cuda_plant(argv[2]))
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --backend cuda --dtype %s --group %s",
                              e->dtype, e->group[0] ? e->group : "small");
    else if (e->group[0])
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --group %s", e->group);
    if (strcmp(e->baseline, "self") == 0)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --baseline '%s'", argv[2]);
    for (int i = 3; i < argc && u < sizeof cmd; i++)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " '%s'", argv[i]);
    if (u < sizeof cmd)
        snprintf(cmd + u, sizeof cmd - u, " 2>'%s'", errpath);
    FILE *p = popen(cmd, "r");
    char *out = p ? slurp(p, len) : NULL;
    int st = p ? pclose(p) : -1;
    *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    FILE *ef = fopen(errpath, "r");
    *err_out = ef ? slurp(ef, err_len) : NULL;
    if (ef)
        fclose(ef);
    unlink(errpath);
    if (*err_out && json)   /* kiln's complaints, where the plant's log shows them */
        fputs(*err_out, stderr);
    return out;
}

/* The offset of the first byte of s[0..n) that is not safe to show: not
 * valid UTF-8 (RFC 3629: no overlong form, surrogate or value past
 * U+10FFFF), a C0 control but \n and \t, DEL, a C1 control, or a bidi
 * control (U+061C, U+200E/F, U+202A-E, U+2066-9); -1 if there is none.
 * Written here, not taken from kiln, so that it checks kiln's cleaner. */
static long first_unsafe(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned b = s[i];
        if (b < 0x80) {
            if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f)
                return (long)i;
            i++;
            continue;
        }
        size_t len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
        if (b < 0xc2 || b > 0xf4 || i + len > n)
            return (long)i;
        unsigned cp = b & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return (long)i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        unsigned min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f ||
            cp == 0x61c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
            (cp >= 0x2066 && cp <= 0x2069))
            return (long)i;
        i += len;
    }
    return -1;
}

/* 0 if the n bytes of what are safe to show; else says where they are not. */
static int check_clean(const char *what, const char *s, size_t n)
{
    long at = s ? first_unsafe((const unsigned char *)s, n) : -1;
    if (at < 0)
        return 0;
    long from = at > 40 ? at - 40 : 0;
    printf("%s: byte %ld (0x%02x) is not safe to show; the bytes around it:", what, at,
           (unsigned char)s[at]);
    for (long i = from; i < at + 16 && i < (long)n; i++)
        printf(" %02x", (unsigned char)s[i]);
    printf("\n");
    return -1;
}

/* Every string in the JSON tree, decoded, is safe to show (JSON may carry
 * an ESC as \u001b: valid JSON, raw again once a reader decodes it). */
static int check_json_strings(const cJSON *o)
{
    int bad = 0;
    for (const cJSON *c = o; c; c = c->next) {
        if (cJSON_IsString(c) && c->valuestring)
            bad |= check_clean("a string of the JSON verdict", c->valuestring,
                               strlen(c->valuestring));
        if (c->string)
            bad |= check_clean("a key of the JSON verdict", c->string, strlen(c->string));
        if (c->child)
            bad |= check_json_strings(c->child);
    }
    return bad;
}

/* Does any string of the JSON tree, decoded, hold text? */
static int json_holds(const cJSON *o, const char *text)
{
    for (const cJSON *c = o; c; c = c->next)
        if ((cJSON_IsString(c) && c->valuestring && strstr(c->valuestring, text)) ||
            (c->child && json_holds(c->child, text)))
            return 1;
    return 0;
}

/* kiln-clean-output: the JSON run's stdout and stderr and its strings, then
 * a run without --json (the table), all safe to show. */
static int clean_output(int argc, char **argv, const expect *e, const char *out, size_t n,
                        const char *err, size_t en, const cJSON *v)
{
    int bad = check_clean("kiln verify --json's stdout", out, n) |
              check_clean("kiln verify --json's stderr", err, en) | check_json_strings(v);
    int code = 0;
    size_t tn = 0, ten = 0;
    char *terr = NULL, *table = run_kiln(argc, argv, e, 0, &code, &tn, &terr, &ten);
    if (!table) {
        printf("kiln verify (the table) could not be run\n");
        bad = -1;
    } else {
        bad |= check_clean("kiln verify's stdout", table, tn) |
               check_clean("kiln verify's stderr", terr, ten);
    }
    free(table);
    free(terr);
    return bad ? -1 : 0;
}

/* Whether verdict v of a plant expected to pass is a suspect at the
 * plausibility stage: the one verdict the search judges twice. */
/* The geomean speedup of verdict v, or NaN. */
static double geomean_of(cJSON *v)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "summary"),
                                                    "geomean_speedup"));
}

/* 1 when an honest plant's verdict is one that load alone can give: suspect
 * at plausibility, or a pass whose speedup is outside the plant's bounds. */
static int retime_suspect(const expect *e, cJSON *v)
{
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(v, "status"));
    const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(v, "stage"));
    if (strcmp(e->status, "pass") != 0 || !status)
        return 0;
    if (strcmp(status, "suspect") == 0)
        return stage && strcmp(stage, "plausibility") == 0;
    double g = geomean_of(v);
    return strcmp(status, "pass") == 0 &&
           ((e->max_speedup[0] && !(g <= atof(e->max_speedup))) ||
            (e->min_speedup[0] && !(g >= atof(e->min_speedup))));
}

int main(int argc, char **argv)
{
    expect e = {0};
    if (argc < 3 || read_expect(argv[2], &e) < 0) {
        fprintf(stderr, "usage: plant_check KILN PLANT.c (plant needs kiln-task and kiln-expect)\n");
        return 2;
    }
    if (e.baseline[0] && strcmp(e.baseline, "self") != 0) {
        fprintf(stderr, "plant_check: %s: kiln-baseline takes only \"self\", not \"%s\"\n",
                argv[2], e.baseline);
        return 2;
    }
    if (is_cuda_plant(argv[2])) {
        if (!e.dtype[0]) {
            fprintf(stderr, "plant_check: %s: a CUDA plant needs a kiln-dtype line\n", argv[2]);
            return 2;
        }
        const char *why = cuda_skip_reason(argv[1]);
        if (why) {
            printf("skipped: %s: %s\n", why, argv[2]);
            return EXIT_SKIP;
        }
    }
    int code = 0;
    size_t n = 0, en = 0;
    char *err = NULL, *out = run_kiln(argc, argv, &e, 1, &code, &n, &err, &en);
    cJSON *v = out ? cJSON_Parse(out) : NULL;
    if (!v) {
        fprintf(stderr, "FAIL %s: kiln exited %d without a JSON verdict:\n%s\n%s\n", argv[2], code,
                out ? out : "", err ? err : "");
        free(out);
        free(err);
        return 1;
    }
    if (retime_suspect(&e, v)) {
        /* An honest plant found suspect at plausibility is judged once
         * more before the test fails. On a loaded machine the CPU timer
         * tripwire can fire on an honest 1x1024 call: its floor is 0.5 us
         * on a round trip of about 4.3 us, and an AVX-512 worker's round
         * trip once cost 0.8 us more than the trusted one's (CI, under the
         * sanitizer build). So is one whose speedup is outside its
         * bounds: the self-timed rmsnorm_30_inflate_overhead came out 1.09x
         * once (ceiling 1.08; 0.96-1.01x in 10 runs after) while a build ran
         * beside the suite. A cheat's lie holds in both runs, and a plant
         * expected to be caught is never judged twice. */
        printf("# %s at %s (%s, %.2fx): judged once more\n",
               cJSON_GetStringValue(cJSON_GetObjectItem(v, "status")),
               cJSON_GetStringValue(cJSON_GetObjectItem(v, "stage")),
               cJSON_GetStringValue(cJSON_GetObjectItem(v, "code")), geomean_of(v));
        cJSON_Delete(v);
        free(out);
        free(err);
        err = NULL;
        out = run_kiln(argc, argv, &e, 1, &code, &n, &err, &en);
        v = out ? cJSON_Parse(out) : NULL;
        if (!v) {
            fprintf(stderr, "FAIL %s: kiln exited %d without a JSON verdict the second time:\n%s\n%s\n",
                    argv[2], code, out ? out : "", err ? err : "");
            free(out);
            free(err);
            return 1;
        }
    }
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(v, "status"));
    const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(v, "stage"));
    const char *vcode = cJSON_GetStringValue(cJSON_GetObjectItem(v, "code"));
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(v, "reason"));
    int ok = status && strcmp(status, e.status) == 0;
    if (ok && strcmp(e.status, "pass") != 0) {
        ok = (!e.stages[0] || in_list(e.stages, stage)) && (!e.codes[0] || in_list(e.codes, vcode));
    }
    double geomean = geomean_of(v);
    if (ok && e.max_speedup[0] && !(geomean <= atof(e.max_speedup))) {
        printf("geomean speedup %.2fx is above the plant's ceiling %s\n", geomean, e.max_speedup);
        ok = 0;
    }
    if (ok && e.min_speedup[0] && !(geomean >= atof(e.min_speedup))) {
        printf("geomean speedup %.2fx is below the plant's floor %s\n", geomean, e.min_speedup);
        ok = 0;
    }
    if (ok && e.forbid[0] && (strstr(out, e.forbid) || (err && strstr(err, e.forbid)))) {
        printf("kiln's output holds \"%s\", which the plant wrote\n", e.forbid);
        ok = 0;
    }
    if (ok && e.want[0] && !json_holds(v, e.want)) {
        printf("kiln's JSON verdict lacks \"%s\"\n", e.want);
        ok = 0;
    }
    if (ok && strcmp(e.clean, "yes") == 0 && clean_output(argc, argv, &e, out, n, err, en, v) < 0)
        ok = 0;
    int want_exit = strcmp(e.status, "pass") == 0 ? 0 : 1;
    if (code != want_exit)
        ok = 0;
    printf("%s %s: %s at %s (%s): %s [exit %d]\n", ok ? "ok" : "FAIL", argv[2], status, stage,
           vcode, reason, code);
    if (!ok)
        printf("expected %s at one of {%s} with one of {%s}\n", e.status, e.stages, e.codes);
    cJSON_Delete(v);
    free(out);
    free(err);
    return ok ? 0 : 1;
}
