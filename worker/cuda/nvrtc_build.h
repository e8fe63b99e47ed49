/* nvrtc_build.h - compile one CUDA candidate to a cubin with NVRTC, for the
 * exact architecture of the device, with --no-cache, and with kiln's one
 * header (kiln_cuda.h) supplied from memory so no file of kiln's is read. */
#ifndef KILN_NVRTC_BUILD_H
#define KILN_NVRTC_BUILD_H

#include <stddef.h>

typedef struct kiln_nvrtc_in {
    const char *source, *name;      /* text and the name logs show */
    const char *arch;               /* "sm_90a" */
    const char *dtype_define;       /* "KILN_DTYPE_BF16" */
    const char *kiln_header;        /* text of kiln_cuda.h */
    const char *cuda_include;       /* CUDA's include directory, or NULL */
} kiln_nvrtc_in;

/* 0: *cubin (malloc'd, *cubin_len bytes); 1: the source did not compile;
 * -1: NVRTC itself failed. *log (malloc'd, may be NULL) has the compiler's
 * log either way. */
int kiln_nvrtc_build(const kiln_nvrtc_in *in, unsigned char **cubin, size_t *cubin_len, char **log);

#endif
