/* plant_check.c - runs one red-team or honest plant through the real `kiln
 * verify` and checks the verdict against the expectation in the plant's
 * header (kiln-task, kiln-expect, kiln-stages, kiln-codes).
 *
 *   plant_check KILN PLANT.c [extra kiln verify args...]
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

typedef struct expect {
    char task[64], status[16], stages[256], codes[256];
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

static char *run_kiln(int argc, char **argv, const expect *e, int *exit_code)
{
    char cmd[8192];
    size_t u = (size_t)snprintf(cmd, sizeof cmd, "'%s' verify '%s' --task %s --json --no-daemon --timing-ms 300",
                                argv[1], argv[2], e->task);
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
