/* nvrtc_build.c - NVRTC compilation of a candidate (see nvrtc_build.h). */
#include "nvrtc_build.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *take_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
        return NULL;
    char *log = malloc(n + 1);
    if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
        log[0] = '\0';
    if (log)
        log[n] = '\0';
    return log;
}

static char *dup_text(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

int kiln_nvrtc_build(const kiln_nvrtc_in *in, unsigned char **cubin, size_t *cubin_len, char **log)
{
    *cubin = NULL;
    *cubin_len = 0;
    *log = NULL;
    const char *hdr_src[1] = {in->kiln_header};
    const char *hdr_name[1] = {"kiln_cuda.h"};
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, in->source, in->name, 1, hdr_src, hdr_name);
    if (r != NVRTC_SUCCESS) {
        *log = dup_text(nvrtcGetErrorString(r));
        return -1;
    }
    char arch[64], def[64], inc[4200], cccl[4200];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s", in->arch);
    snprintf(def, sizeof def, "-D%s=1", in->dtype_define);
    const char *opts[8] = {arch, def, "--no-cache", "--std=c++17", "-default-device", "-lineinfo"};
    int n = 6;
    if (in->cuda_include) {
        /* CUDA 13 keeps libcu++ and CUB (cuda/std/..., which cooperative
         * groups include) under include/cccl. */
        snprintf(inc, sizeof inc, "--include-path=%s", in->cuda_include);
        snprintf(cccl, sizeof cccl, "--include-path=%s/cccl", in->cuda_include);
        opts[n++] = inc;
        opts[n++] = cccl;
    }
    r = nvrtcCompileProgram(prog, n, opts);
    *log = take_log(prog);
    int rc = 0;
    if (r == NVRTC_ERROR_COMPILATION) {
        rc = 1;
    } else if (r != NVRTC_SUCCESS) {
        if (!*log || !**log) {
            free(*log);
            *log = dup_text(nvrtcGetErrorString(r));
        }
        rc = -1;
    } else if (nvrtcGetCUBINSize(prog, cubin_len) != NVRTC_SUCCESS || *cubin_len == 0 ||
               !(*cubin = malloc(*cubin_len)) || nvrtcGetCUBIN(prog, (char *)*cubin) != NVRTC_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        rc = -1;
    }
    nvrtcDestroyProgram(&prog);
    return rc;
}
