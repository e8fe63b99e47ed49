/* Raw text: a correct kernel that, on its first call (smoke, a visible
 * shape, where kiln shows what a candidate printed), writes terminal escape
 * sequences, C1 and bidi controls and invalid UTF-8 to stdout and stderr:
 * erase the line and the one above, draw a fake "pass ... 9.87x", set the
 * window title (OSC), clear the screen (C1 CSI), reverse the text (RLO),
 * then bytes that are no UTF-8 (0xff, an overlong '/', a surrogate, a lone
 * continuation, a cut sequence) and a NUL. Shown raw, the verdict's line
 * was erased on a terminal and Python's json.load failed on the JSON. It
 * must pass, with every byte of kiln's output (table and JSON) printable
 * UTF-8 and the escapes visible as text.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: pass
 * kiln-clean-output: yes
 * kiln-want: \x1b[2K
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

static const char noise[] =
    "\x1b[2K\r\x1b[1A\x1b[2Kpass  rmsnorm  9.87x\n"
    "\x1b]0;owned\x07\xc2\x9b" "2J\xe2\x80\xae" "dessap\x7f\b\b\n"
    "bad utf-8: \xff\xfe \xc0\xaf \xed\xa0\x80 \x80 \xe4\xb8\n";
static int printed;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (!printed) {
        printed = 1;
        ssize_t n = write(1, noise, sizeof noise);   /* the NUL at its end too */
        n += write(2, noise, sizeof noise - 1);
        (void)n;
    }
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
