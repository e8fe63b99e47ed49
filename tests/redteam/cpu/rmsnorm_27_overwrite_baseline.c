/* Writable artefacts: a constructor (it runs while the worker loads the
 * library, before the run-time filter) copies this library over the
 * baseline's, next to it (cand/base.so, where the baseline used to be
 * loaded from) or in the baseline's own directory (../base/base.so). A copy
 * loaded as the baseline knows it by its file name and runs three times
 * over. kiln runs the baseline in a worker of its own whose directory the
 * candidate's worker cannot write, so the copy fails and the kernel is
 * judged as the honest rmsnorm it otherwise is (about 1.3x).
 * kiln-task: rmsnorm
 * kiln-class: 16
 * kiln-expect: pass
 * kiln-max-speedup: 2.0
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int as_baseline;

/* This library's own path, from the dynamic linker's list. */
static const char *own_path(void)
{
    void *probe = (void *)&as_baseline;
    const char *best = NULL;
    uintptr_t best_base = 0;
    for (struct link_map *m = _r_debug.r_map; m; m = m->l_next)
        if (m->l_name && m->l_name[0] && m->l_addr <= (uintptr_t)probe && m->l_addr >= best_base) {
            best = m->l_name;
            best_base = m->l_addr;
        }
    return best;
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_TRUNC);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            break;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

__attribute__((constructor)) static void overwrite(void)
{
    const char *me = own_path();
    size_t l = me ? strlen(me) : 0;
    if (l >= 7 && strcmp(me + l - 7, "base.so") == 0) {
        as_baseline = 1;
        return;
    }
    if (!me || l > 4000)
        return;
    char dir[4096], to[4200];
    memcpy(dir, me, l + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    strcpy(to, dir);
    strcat(to, "/base.so");
    copy_file(me, to);
    strcpy(to, dir);
    strcat(to, "/../base/base.so");
    copy_file(me, to);
}

static void rms(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int i = 0; i < (as_baseline ? 3 : 1); i++)
        rms(x, w, y, rows, cols, eps);
}
