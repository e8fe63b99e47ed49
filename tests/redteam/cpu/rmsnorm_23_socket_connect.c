/* Escape: opens an AF_INET socket and connects to 127.0.0.1:22 (a network channel out of the worker), then computes y correctly.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0) {
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons(22);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void)connect(s, (struct sockaddr *)&a, sizeof a);
        close(s);
    }
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
