/* Disk fill: a constructor writes 1 MiB chunks into files next to the
 * library, in its working directory and in /tmp until something refuses
 * (one such constructor wrote 2 GiB in 3 s). The worker's Landlock rules
 * give it no writable directory at all, so nothing is written; the kernel
 * then answers honestly, but would give garbage had a single byte landed.
 * kiln-task: rmsnorm
 * kiln-class: 17
 * kiln-expect: pass
 * kiln-max-speedup: 2.0
 */
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static long long written;

/* The directory this library was loaded from (the job's worker directory). */
static void own_dir(char *buf, size_t len)
{
    uintptr_t me = (uintptr_t)&written, best = 0;
    buf[0] = '\0';
    for (struct link_map *m = _r_debug.r_map; m; m = m->l_next)
        if (m->l_name && m->l_name[0] && m->l_addr <= me && m->l_addr >= best) {
            best = m->l_addr;
            strncpy(buf, m->l_name, len - 1);
            buf[len - 1] = '\0';
        }
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
}

__attribute__((constructor)) static void fill(void)
{
    static char chunk[1 << 20];
    char dir[3000], here[3100], above[3100];
    own_dir(dir, sizeof dir);
    strcpy(here, dir);
    strcat(here, "/fill-0");
    strcpy(above, dir);
    strcat(above, "/../fill-0");
    const char *paths[] = {here, above, "/tmp/kiln-fill-0", "fill-0"};
    memset(chunk, 'x', sizeof chunk);
    for (unsigned p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        int fd = open(paths[p], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (int i = 0; fd >= 0 && i < 64; i++) {
            ssize_t n = write(fd, chunk, sizeof chunk);
            if (n <= 0)
                break;
            written += n;
        }
        if (fd >= 0) {
            close(fd);
            unlink(paths[p]);
        }
    }
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        double ss = 0;
        for (int32_t c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        float inv = (float)(1.0 / sqrt(ss / cols + eps));
        for (int32_t c = 0; c < cols; c++)
            yr[c] = written ? NAN : xr[c] * inv * w[c];
    }
}
