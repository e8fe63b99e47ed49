/* rtc_check.c - compile a CUDA candidate as kiln-worker-cuda compiles it
 * (worker/cuda/nvrtc_child.c: NVRTC in a child, kiln's headers from memory,
 * CUDA's include directory, one KILN_DTYPE_* define, --no-cache) for sm_90a
 * and each of the task's CUDA dtypes, with its manifest's kernels that
 * NVRTC finds by name expression, and check every launch's kernel is in
 * the cubin. No GPU needed. Used by import_test.sh on what kiln import
 * writes.
 *   rtc_check KILN_CUDA_H CUDA_INCLUDE_DIR TASK_DIR CANDIDATE.cu [DTYPES]
 * DTYPES: a comma list (f32,bf16); default every CUDA dtype of the task.
 * Exit 0 compiled, 1 not (the log on stderr), 2 bad usage or input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "manifest.h"
#include "nvrtc_child.h"
#include "task.h"

static const char *define_of(kiln_dtype d)
{
    return d == KILN_DT_F16 ? "KILN_DTYPE_F16" : d == KILN_DT_BF16 ? "KILN_DTYPE_BF16"
                                                                   : "KILN_DTYPE_F32";
}

/* Every launch's kernel: its lowered name (a name expression) or itself. */
static int kernels_found(const kiln_manifest *m, const char *names, const kiln_nvrtc_child *c)
{
    for (int l = 0; l < m->nlaunches; l++) {
        const char *k = m->launches[l].kernel, *sym = k, *low = c->lowered;
        size_t kl = strlen(k);
        for (const char *p = names; *p && low; p += strcspn(p, "\n") + 1, low += strlen(low) + 1)
            if (strcspn(p, "\n") == kl && memcmp(p, k, kl) == 0) {
                sym = low;
                break;
            }
        if (!memmem(c->cubin, c->n, sym, strlen(sym) + 1)) {
            fprintf(stderr, "rtc_check: kernel %s (%s) is not in the cubin\n", k, sym);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    char *hdr = NULL, *src = NULL, names[1024];
    kiln_error e = {0};
    kiln_task *t = malloc(sizeof *t);
    kiln_manifest *m = malloc(sizeof *m);
    int rc = 0;
    if ((argc != 5 && argc != 6) || !t || !m) {
        fprintf(stderr, "usage: rtc_check KILN_CUDA_H CUDA_INCLUDE_DIR TASK_DIR CANDIDATE.cu "
                "[DTYPES]\n");
        return 2;
    }
    if (kiln_read_file(argv[1], 1 << 20, &hdr, NULL, &e) != 0 ||
        kiln_read_file(argv[4], 8 << 20, &src, NULL, &e) != 0 ||
        kiln_task_load(argv[3], t, &e) < 0 ||
        kiln_manifest_parse(src, strlen(src), t, m, &e) < 0) {
        fprintf(stderr, "rtc_check: %s\n", e.msg);
        return 2;
    }
    kiln_manifest_name_exprs(m, names, sizeof names);
    for (int d = 0; d < t->ncuda_dtypes && rc == 0; d++) {
        const char *dn = kiln_dtype_name(t->cuda_dtypes[d]), *p = argc == 6 ? strstr(argv[5], dn) : NULL;
        size_t dl = strlen(dn);
        if (argc == 6 && !(p && (p == argv[5] || p[-1] == ',') && (p[dl] == ',' || !p[dl])))
            continue;
        kiln_nvrtc_in in = {.source = src, .name = "candidate.cu", .arch = "sm_90a",
                            .dtype_define = define_of(t->cuda_dtypes[d]), .kiln_header = hdr,
                            .cuda_include = argv[2], .names = names[0] ? names : NULL};
        kiln_nvrtc_child c;
        kiln_nvrtc_start(&c, &in);
        kiln_nvrtc_wait(&c);
        if (c.rc != 0) {
            fprintf(stderr, "rtc_check: %s does not compile for %s (rc %d): %.3000s\n", argv[4],
                    kiln_dtype_name(t->cuda_dtypes[d]), c.rc, c.log ? c.log : c.limit);
            rc = 1;
        } else if (!kernels_found(m, names, &c)) {
            rc = 1;
        }
        free(c.cubin);
        free(c.log);
        free(c.lowered);
    }
    free(hdr);
    free(src);
    free(t);
    free(m);
    return rc;
}
