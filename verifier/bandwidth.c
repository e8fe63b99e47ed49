/* bandwidth.c - measuring and caching copy bandwidth (see bandwidth.h).
 *
 * Small working sets stay in cache and copy much faster than DRAM, so the
 * floor for a shape uses the bandwidth measured at that shape's size; taking
 * the best pass keeps the floor conservative (a kernel slower than memcpy
 * is plausible, one faster than the best memcpy is not). */
#include "bandwidth.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "worker_client.h"
#include "fileutil.h"

#define MIN_BYTES ((size_t)16 << 10)
#define MAX_BYTES ((size_t)256 << 20)

void kiln_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    fclose(f);
}

static size_t bucket(size_t bytes)
{
    size_t b = MIN_BYTES;
    while (b * 2 <= bytes && b * 2 <= MAX_BYTES)
        b *= 2;
    return b;
}

static double measure(size_t bytes)
{
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 0;
    size_t reps = (64u << 20) / bytes + 1;   /* about 64 MiB copied per pass */
    for (int pass = 0; pass < 5; pass++) {
        uint64_t t0 = kiln_mono_ns();
        for (size_t r = 0; r < reps; r++) {
            memcpy(pass & 1 ? a : b, pass & 1 ? b : a, bytes);
            __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
        }
        double s = (double)(kiln_mono_ns() - t0) / 1e9;
        double bw = 2.0 * (double)bytes * (double)reps / s;
        best = bw > best ? bw : best;
    }
    free(a);
    free(b);
    return best;
}

static void cache_path(char *buf, size_t len)
{
    char dir[3900];
    kiln_error e;
    if (kiln_state_dir(dir, sizeof dir, &e) < 0) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "%s/bandwidth-cpu.json", dir);
}

/* The cache is keyed by machine: a copied state directory re-measures. */
static cJSON *load_cache(const char *path, const char *machine)
{
    char *text = NULL;
    kiln_error err;
    if (path[0] && kiln_read_file(path, 65535, &text, NULL, &err) < 0)
        text = NULL;
    cJSON *root = text && *text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *m = root ? cJSON_GetObjectItemCaseSensitive(root, "machine") : NULL;
    if (!cJSON_IsString(m) || strcmp(m->valuestring, machine) != 0 ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s"))) {
        cJSON_Delete(root);
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "machine", machine);
        cJSON_AddObjectToObject(root, "bytes_per_s");
    }
    return root;
}

static void save_cache(const char *path, const cJSON *root)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    char *text = cJSON_Print(root);
    FILE *f = text ? fopen(tmp, "w") : NULL;
    if (f) {
        int ok = fputs(text, f) >= 0;
        if (fclose(f) == 0 && ok)
            rename(tmp, path);   /* atomic: concurrent readers see old or new */
        else
            unlink(tmp);
    }
    free(text);
}

static int bandwidth(size_t bytes, int again, double *out, kiln_error *err)
{
    char path[4096], machine[256], host[64] = "";
    size_t b = bucket(bytes);
    char key[32];
    snprintf(key, sizeof key, "%zu", b);
    kiln_cpu_model(machine, sizeof machine - 70);
    gethostname(host, sizeof host - 1);
    strcat(machine, " @ ");
    strcat(machine, host);
    cache_path(path, sizeof path);
    cJSON *root = load_cache(path, machine);
    cJSON *tab = cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s");
    const cJSON *hit = cJSON_GetObjectItemCaseSensitive(tab, key);
    double cached = cJSON_IsNumber(hit) && hit->valuedouble > 0 ? hit->valuedouble : 0;
    if (cached > 0 && !again) {
        *out = cached;
        cJSON_Delete(root);
        return 0;
    }
    *out = measure(b);
    if (*out <= 0) {
        cJSON_Delete(root);
        return kiln_fail(err, "could not measure memory bandwidth (out of memory?)");
    }
    *out = *out > cached ? *out : cached;   /* the best seen: a busy moment only lowers it */
    cJSON_DeleteItemFromObjectCaseSensitive(tab, key);
    cJSON_AddNumberToObject(tab, key, *out);
    if (path[0])
        save_cache(path, root);
    cJSON_Delete(root);
    return 0;
}

int kiln_cpu_bandwidth(size_t bytes, double *out, kiln_error *err)
{
    return bandwidth(bytes, 0, out, err);
}

int kiln_cpu_bandwidth_again(size_t bytes, double *out, kiln_error *err)
{
    return bandwidth(bytes, 1, out, err);
}
