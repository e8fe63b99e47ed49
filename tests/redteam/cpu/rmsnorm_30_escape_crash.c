/* Raw text: on its first call the kernel writes, with no newline, escape
 * sequences that erase the line and draw a fake "pass ... 9.87x", a C1 CSI
 * and invalid UTF-8 to stderr, then exits: the worker's last log line (its
 * crash message) is what kiln quotes in the verdict's reason.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: crash
 * kiln-clean-output: yes
 * kiln-want: \x1b[2K
 */
#include <stdint.h>
#include <unistd.h>

static const char noise[] = "\n\x1b[2K\r\x1b[1A\x1b[2K\x1b[32mpass  rmsnorm  9.87x\x1b[0m"
                            "\xc2\x9b" "2J\xff\xfe\xc0\xaf\xe2\x80\xae";

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x, (void)w, (void)y, (void)rows, (void)cols, (void)eps;
    ssize_t n = write(2, noise, sizeof noise - 1);
    (void)n;
    _exit(3);
}
