/* nvrtc_build.h - compile one CUDA candidate to a cubin with NVRTC, for the
 * exact architecture of the device, with --no-cache, and with kiln's one
 * header (kiln_cuda.h) supplied from memory so no file of kiln's is read. */
#ifndef KILN_NVRTC_BUILD_H
#define KILN_NVRTC_BUILD_H

#include <stddef.h>

#define KILN_NVRTC_NAME_MAX 64   /* a name expression's length, as the wire's kernel */

typedef struct kiln_nvrtc_in {
    const char *source, *name;      /* text and the name logs show */
    const char *arch;               /* "sm_90a" */
    const char *dtype_define;       /* "KILN_DTYPE_BF16" */
    const char *kiln_header;        /* text of kiln_cuda.h */
    const char *cuda_include;       /* CUDA's include directory, or NULL */
    const char *names;              /* name expressions ("k<float, 4>"), one per
                                       line, to look up after compiling, or NULL */
} kiln_nvrtc_in;

typedef struct kiln_nvrtc_out {
    unsigned char *cubin;           /* malloc'd, cubin_len bytes */
    size_t cubin_len;
    char *log;                      /* malloc'd, may be NULL */
    char *lowered;                  /* malloc'd: each name's symbol, NUL-terminated,
                                       in order; NULL when no names */
    size_t lowered_len;             /* bytes of lowered, NULs included */
} kiln_nvrtc_out;

/* 0: out->cubin (and out->lowered); 1: the source did not compile (a name
 * expression that names no kernel is a compile error too); -1: NVRTC
 * itself failed. out->log has the compiler's log either way. */
int kiln_nvrtc_compile(const kiln_nvrtc_in *in, kiln_nvrtc_out *out);

/* The same, for a source without names: *cubin, *cubin_len and *log. */
int kiln_nvrtc_build(const kiln_nvrtc_in *in, unsigned char **cubin, size_t *cubin_len, char **log);

#endif
