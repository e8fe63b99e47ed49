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
 * more than this geomean), kiln-forbid (text that must appear nowhere in
 * kiln's output, such as what the plant printed on a hidden shape),
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
    char forbid[64];        /* text that must appear nowhere in kiln's output */
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
        header_value(line, "kiln-forbid:", e->forbid, sizeof e->forbid);
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

static char *run_kiln(int argc, char **argv, const expect *e, int *exit_code)
{
    /* A plant with a speedup ceiling is judged by its timing: a longer
     * budget spreads its pairs over more of the load beside it (an honest
     * 1.3x plant once measured 2.08x in 300 ms on a busy machine). */
    char cmd[8192];
    size_t u = (size_t)snprintf(cmd, sizeof cmd, "'%s' verify '%s' --task %s --json --no-daemon --timing-ms %d",
                                argv[1], argv[2], e->task, e->max_speedup[0] ? 1000 : 300);
    if (is_cuda_plant(argv[2]))
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --backend cuda --dtype %s --group %s",
                              e->dtype, e->group[0] ? e->group : "small");
    else if (e->group[0])
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --group %s", e->group);
    if (strcmp(e->baseline, "self") == 0)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " --baseline '%s'", argv[2]);
    for (int i = 3; i < argc && u < sizeof cmd; i++)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, " '%s'", argv[i]);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    size_t got;
    while (out && (got = fread(out + n, 1, cap - 1 - n, p)) > 0)
        n += got;
    int st = pclose(p);
    *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (out)
        out[n] = '\0';
    return out;
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
    char *out = run_kiln(argc, argv, &e, &code);
    cJSON *v = out ? cJSON_Parse(out) : NULL;
    if (!v) {
        fprintf(stderr, "FAIL %s: kiln exited %d without a JSON verdict:\n%s\n", argv[2], code,
                out ? out : "");
        free(out);
        return 1;
    }
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(v, "status"));
    const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(v, "stage"));
    const char *vcode = cJSON_GetStringValue(cJSON_GetObjectItem(v, "code"));
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(v, "reason"));
    int ok = status && strcmp(status, e.status) == 0;
    if (ok && strcmp(e.status, "pass") != 0) {
        ok = (!e.stages[0] || in_list(e.stages, stage)) && (!e.codes[0] || in_list(e.codes, vcode));
    }
    double geomean = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "summary"),
                                                              "geomean_speedup"));
    if (ok && e.max_speedup[0] && !(geomean <= atof(e.max_speedup))) {
        printf("geomean speedup %.2fx is above the plant's ceiling %s\n", geomean, e.max_speedup);
        ok = 0;
    }
    if (ok && e.forbid[0] && strstr(out, e.forbid)) {
        printf("kiln's output holds \"%s\", which the plant wrote\n", e.forbid);
        ok = 0;
    }
    int want_exit = strcmp(e.status, "pass") == 0 ? 0 : 1;
    if (code != want_exit)
        ok = 0;
    printf("%s %s: %s at %s (%s): %s [exit %d]\n", ok ? "ok" : "FAIL", argv[2], status, stage,
           vcode, reason, code);
    if (!ok)
        printf("expected %s at one of {%s} with one of {%s}\n", e.status, e.stages, e.codes);
    cJSON_Delete(v);
    free(out);
    return ok ? 0 : 1;
}
