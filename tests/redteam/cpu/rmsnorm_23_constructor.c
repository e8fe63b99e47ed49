/* Escape at load time: a constructor creates a file in /tmp (then /home) and opens an AF_INET socket when the shared object is loaded, before any call; the kernel itself is correct.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: compile smoke
 * kiln-codes: sandbox-violation
 */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static int ctor_fd = -1, ctor_sock = -1;

__attribute__((constructor)) static void at_load(void)
{
    static const char *const paths[] = {"/tmp/kiln-redteam-ctor", "/home/kiln-redteam-ctor"};
    for (size_t i = 0; i < 2 && ctor_fd < 0; i++) {
        ctor_fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (ctor_fd >= 0) {
            (void)write(ctor_fd, "x", 1);
            close(ctor_fd);
            unlink(paths[i]);
        }
    }
    ctor_sock = socket(AF_INET, SOCK_STREAM, 0);
    if (ctor_sock >= 0)
        close(ctor_sock);
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
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
