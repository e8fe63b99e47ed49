/* Raw text: on its first call the kernel writes escape sequences and
 * invalid UTF-8 to stderr with no newline, then makes a forbidden system
 * call (socket): the sandbox names the call on the same line, and the
 * verdict's reason quotes that line ("forbidden system call (...)").
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 * kiln-clean-output: yes
 * kiln-want: name=socket
 */
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

static const char noise[] = "\x1b[2K\r\x1b[1A\x1b[2Kpass  rmsnorm  9.87x \xf5\xc3 \x9b\x1b[8m";

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x, (void)w, (void)y, (void)rows, (void)cols, (void)eps;
    ssize_t n = write(2, noise, sizeof noise - 1);
    (void)n;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0)
        close(s);
}
