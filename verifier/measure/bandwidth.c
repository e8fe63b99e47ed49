/* bandwidth.c - measuring and caching the CPU roofline's bandwidth (see
 * bandwidth.h for what it must be).
 *
 * The working set is the shape's compulsory bytes in all: a copy moves
 * half of it into the other half. (The first method copied the whole size
 * into another buffer of the whole size, twice the working set: at 2 MiB
 * that left L2 on the development machine and read about 30 GB/s where an
 * honest AVX-512 kernel reached 40, so the kernel was judged impossible.)
 * No one pattern is the fastest everywhere (a wide read wins in L1 and L2,
 * memset's non-temporal stores in DRAM), so a reading is the fastest of
 * four, each run until a few MiB have moved. The vector loops are built
 * for AVX-512 and AVX2 too, chosen at run time, and are not instrumented in
 * the sanitizer build (hot.h): an instrumented loop reads slow, and a slow
 * reading makes the floor stricter. */
#include "bandwidth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileutil.h"
#include "hot.h"
#include "paths.h"
#include "worker_client.h"

#define MIN_BYTES ((size_t)16 << 10)
#define MAX_BYTES ((size_t)256 << 20)
#define METHOD 2                       /* the cache's; a cache of another method is dropped */
#define PASS_BYTES ((size_t)4 << 20)   /* moved per timed run of a pattern, at least */
#define FIRST_READINGS 7
#define AGAIN_READINGS 24
#define AGAIN_PAUSE_US 2000            /* spread over ~50 ms: a burst of load passes */

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

size_t kiln_bw_bucket(size_t bytes)
{
    size_t b = MIN_BYTES;
    while (b * 2 <= bytes && b * 2 <= MAX_BYTES)
        b *= 2;
    return b;
}

/* ---- the access patterns ------------------------------------------------ */

typedef uint64_t vec __attribute__((vector_size(64)));

#if defined(__x86_64__) && defined(__GNUC__)
#define WIDE __attribute__((noinline, target_clones("avx512f", "avx2", "default"))) \
    KILN_HOT_NO_SANITIZE
#else
#define WIDE __attribute__((noinline)) KILN_HOT_NO_SANITIZE
#endif

/* Read only: n vectors (a multiple of 4) summed in four chains. */
WIDE static uint64_t read_sum(const vec *p, size_t n)
{
    vec a = {0}, b = {0}, c = {0}, d = {0};
    for (size_t i = 0; i < n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    a += b + c + d;
    uint64_t s = 0;
    for (int k = 0; k < 8; k++)
        s += a[k];
    return s;
}

/* Two reads to one write (STREAM's triad without the scalar). */
WIDE static void triad(vec *restrict out, const vec *restrict a, const vec *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

enum { COPY, READ, FILL, TRIAD, NPATTERNS };

static volatile uint64_t sink;

/* One timed run of pattern p over ws bytes of buf (64-byte aligned) in
 * all, repeated until PASS_BYTES have moved: bytes read plus bytes written
 * per second. */
static double run_pattern(int p, unsigned char *buf, size_t ws)
{
    size_t nv = ws / 64, half = nv / 2 * 64, third = nv / 3;
    vec *v = (vec *)(void *)buf;
    size_t moved = p == COPY ? 2 * half : p == READ ? (nv & ~(size_t)3) * 64
                 : p == FILL ? nv * 64 : 3 * third * 64;
    size_t reps = PASS_BYTES / moved + 1;
    kiln_hot_region(buf, nv * 64);
    uint64_t t0 = kiln_mono_ns();
    for (size_t r = 0; r < reps; r++) {
        if (p == COPY)
            memcpy(buf + half, buf, half);
        else if (p == READ)
            sink += read_sum(v, nv & ~(size_t)3);
        else if (p == FILL)
            memset(buf, (int)(r & 0xff), nv * 64);
        else
            triad(v + 2 * third, v, v + third, third);
        __asm__ volatile("" : : "r"(buf) : "memory");
    }
    uint64_t dt = kiln_mono_ns() - t0;
    return dt ? (double)moved * (double)reps * 1e9 / (double)dt : 0;
}

double kiln_bw_reading(size_t ws, void *ctx)
{
    double best = 0;
    for (int p = 0; p < NPATTERNS; p++) {
        double bw = run_pattern(p, ctx, ws);
        best = bw > best ? bw : best;
    }
    return best;
}

double kiln_bw_best_of(kiln_bw_reading_fn reading, void *ctx, size_t ws, int n, unsigned pause_us)
{
    double best = 0;
    for (int i = 0; i < n; i++) {
        if (i && pause_us) {
            struct timespec ts = {pause_us / 1000000u, (long)(pause_us % 1000000u) * 1000};
            nanosleep(&ts, NULL);
        }
        double bw = reading(ws, ctx);
        best = bw > best ? bw : best;
    }
    return best;
}

/* The best of n readings over a fresh working set of ws bytes. */
static double measure(size_t ws, int n, unsigned pause_us)
{
    unsigned char *buf = aligned_alloc(64, ws);
    if (!buf)
        return 0;
    memset(buf, 1, ws);   /* its pages are mapped before anything is timed */
    double bw = kiln_bw_best_of(kiln_bw_reading, buf, ws, n, pause_us);
    free(buf);
    return bw;
}

/* ---- the cache ----------------------------------------------------------- */

double kiln_bw_bound(const cJSON *table, size_t b)
{
    char key[32];
    snprintf(key, sizeof key, "%zu", b);
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(table, key), *it;
    if (!cJSON_IsNumber(own) || !(own->valuedouble > 0))
        return 0;
    double best = own->valuedouble;
    cJSON_ArrayForEach(it, table) {
        char *end;
        unsigned long long size = strtoull(it->string ? it->string : "", &end, 10);
        if (*end == '\0' && size >= b && cJSON_IsNumber(it) && it->valuedouble > best)
            best = it->valuedouble;
    }
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

/* The cache is keyed by machine and method: a copied state directory, or
 * figures of the first method, are measured again. */
static cJSON *load_cache(const char *path, const char *machine)
{
    char *text = NULL;
    kiln_error err;
    if (path[0] && kiln_read_file(path, 65535, &text, NULL, &err) < 0)
        text = NULL;
    cJSON *root = text && *text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *m = root ? cJSON_GetObjectItemCaseSensitive(root, "machine") : NULL;
    const cJSON *method = root ? cJSON_GetObjectItemCaseSensitive(root, "method") : NULL;
    if (!cJSON_IsString(m) || strcmp(m->valuestring, machine) != 0 ||
        !cJSON_IsNumber(method) || method->valueint != METHOD ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s"))) {
        cJSON_Delete(root);
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "machine", machine);
        cJSON_AddNumberToObject(root, "method", METHOD);
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

/* bytes/s for bucket key in the table, 0 if none. */
static double kept(const cJSON *tab, const char *key)
{
    const cJSON *hit = cJSON_GetObjectItemCaseSensitive(tab, key);
    return cJSON_IsNumber(hit) && hit->valuedouble > 0 ? hit->valuedouble : 0;
}

/* Keep bw for key if it beats what the cache (read again now: another job
 * may have written it meanwhile) holds; the table as saved, to delete. */
static cJSON *keep_best(const char *path, const char *machine, const char *key, double bw)
{
    cJSON *root = load_cache(path, machine);
    cJSON *tab = cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s");
    if (bw > kept(tab, key)) {
        cJSON_DeleteItemFromObjectCaseSensitive(tab, key);
        cJSON_AddNumberToObject(tab, key, bw);
        if (path[0])
            save_cache(path, root);
    }
    return root;
}

static void machine_name(char *machine, size_t len)
{
    char host[64] = "";
    kiln_cpu_model(machine, len - 70);
    gethostname(host, sizeof host - 1);
    strcat(machine, " @ ");
    strcat(machine, host);
}

static int bandwidth(size_t bytes, int again, double *out, kiln_error *err)
{
    char path[4096], machine[256], key[32];
    size_t b = kiln_bw_bucket(bytes);
    snprintf(key, sizeof key, "%zu", b);
    machine_name(machine, sizeof machine);
    cache_path(path, sizeof path);
    cJSON *root = load_cache(path, machine);
    *out = kiln_bw_bound(cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s"), b);
    cJSON_Delete(root);
    if (*out > 0 && !again)
        return 0;
    double bw = again ? measure(b, AGAIN_READINGS, AGAIN_PAUSE_US) : measure(b, FIRST_READINGS, 0);
    if (bw <= 0)
        return kiln_fail(err, "could not measure memory bandwidth (out of memory?)");
    root = keep_best(path, machine, key, bw);
    *out = kiln_bw_bound(cJSON_GetObjectItemCaseSensitive(root, "bytes_per_s"), b);
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
