/* kiln_worker_cuda.c - the process a CUDA candidate runs in.
 *
 * Started fresh for every job, with CUDA_CACHE_DISABLE=1. It reads the
 * sources it is given, confines itself (rlimits, Landlock, seccomp),
 * creates a context, compiles each source with NVRTC for the device's exact
 * architecture, loads the cubins and serves calls: copy the buffers (with
 * their guards) from the verifier's arena to the device, flush L2, launch
 * what the request lists on kiln's own stream between CUDA events, wait for
 * the whole device, copy everything back. No candidate host code exists, so
 * the only host code here is kiln's. Three timers per call: events, CUPTI's
 * kernel records, and the host clock around launch and synchronize.
 *
 *   kiln-worker-cuda --dir DIR --arena BYTES --dtype T --header kiln_cuda.h
 *                    --src A.cu [--src B.cu | --builtin cublas] [--scrub]
 *                    [--ref R.cu] [--cpu-seconds N] [--device N] [--parent PID]
 *
 * With --ref (the task's trusted CUDA reference, compiled over doubles),
 * the worker also serves device-resident calls (devcheck.h): inputs drawn on
 * the device from a per-call key, several input sets timed back to back,
 * and every set checked against the reference's gold on the device, the
 * gold made only after the candidate's launches and zeroed before the
 * answer. Only a summary crosses to the verifier.
 *
 * Libraries are numbered in order: the sources, then the built-in baseline
 * (cuBLAS, called in the timed region instead of launches). --scrub (the
 * reference worker) zeroes every device buffer after each call, so gold
 * never lingers in device memory.
 *   kiln-worker-cuda --probe [--device N]   (device facts, copy and read bandwidth)
 */
#include <cuda.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cublas_gemm.h"
#include "cupti_span.h"
#include "nvrtc_child.h"
#include "graph_cache.h"
#include "devcheck.h"
#include "devcheck_abi.h"
#include "nvrtc_build.h"
#include "sandbox.h"
#include "worker_io.h"
#include "worker_proto.h"

#define GUARD 512   /* KILN_GUARD_BYTES of call.h: guard bytes each side */
#define SCRATCH_GUARD 0xa7

typedef struct opts {
    const char *dir, *dtype, *header_path, *builtin, *ref;
    const char *srcs[KILN_WORKER_MAX_LIBS];
    const char *names[KILN_WORKER_MAX_LIBS];   /* --names after a --src: its name expressions */
    int nsrcs, device, probe, scrub;
    uint64_t arena_bytes;
    kiln_limits lim;
    double report_scale;
    uint64_t parent;   /* the verifier's pid (--parent), 0 when not given */
} opts;

/* The reference's launches over a chunk of sets run as this many
 * independent chains of one graph: at small shapes one set's reference is a
 * few dozen blocks in double precision, latency-bound, and 64 of them in one
 * chain cost about 11 us each (0.7 ms a call on the H200); side by side they
 * overlap. */
#define REF_LANES 16

typedef struct worker {
    CUdevice dev;
    CUcontext ctx;
    CUstream stream, side;      /* kiln's stream; the side stream opens the gate */
    CUstream lanes[REF_LANES];  /* the reference's sets, side by side (reference_chunk) */
    CUevent ev0, ev1;
    CUevent fork, join[REF_LANES];
    CUdeviceptr gate;           /* kiln's stream waits on it before the timed region */
    CUmodule mod[KILN_WORKER_MAX_LIBS];
    int nmods;
    /* Per lib, the manifest's kernels named by NVRTC name expressions (one
     * per line) and their symbols in the cubin, NUL-separated, in order. */
    const char *names[KILN_WORKER_MAX_LIBS];
    char *lowered[KILN_WORKER_MAX_LIBS];
    int builtin_lib;            /* the library number of the cuBLAS baseline, or -1 */
    CUdeviceptr cublas_ws;
    int64_t warm_shape[3];      /* the last shape cuBLAS ran, untimed */
    int scrub;
    kiln_dbuf buf[KILN_WORKER_MAX_ARGS], scratch[KILN_WORKER_MAX_SCRATCH];
    unsigned char sent_guard[KILN_WORKER_MAX_ARGS][2][GUARD];   /* as uploaded */
    CUdeviceptr flush;
    CUmodule refmod;            /* the task's reference over doubles (--ref), or NULL */
    kiln_devcheck devcheck;           /* device-resident calls */
    kiln_graph_cache ref_graphs;   /* the reference's launches over a chunk of sets */
    CUfunction poison;
    unsigned poison_grid, poison_smem;
    size_t flush_bytes;
    unsigned flush_value;
    unsigned char *arena;
    uint64_t arena_bytes;
    double report_scale;
} worker;

/* Read-only for the driver, NVRTC (CUDA's headers) and CUPTI. */
static const char *const ro_paths[] = {
    "/usr", "/lib", "/lib64", "/bin", "/etc", "/sys", "/run", "/opt", NULL,
};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kiln-worker-cuda: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    _exit(KILN_WORKER_EXIT_SETUP);
}

static const char *cu_str(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "CUDA error";
}

static uint64_t parse_u64(const char *s, const char *flag)
{
    int ok;
    uint64_t v = kiln_parse_u64(s, &ok);
    if (!ok)
        die("bad number for", flag);
    return v;
}

static void parse_args(int argc, char **argv, opts *o)
{
    o->lim = (kiln_limits){.cpu_seconds = 300, .file_bytes = 64u << 20, .open_files = 1024};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--probe") == 0 || strcmp(a, "--scrub") == 0) {   /* flags */
            if (strcmp(a, "--probe") == 0)
                o->probe = 1;
            else
                o->scrub = 1;
            continue;
        }
        if (strcmp(a, "--dir") == 0)
            o->dir = v;
        else if (strcmp(a, "--src") == 0 && o->nsrcs < KILN_WORKER_MAX_LIBS)
            o->srcs[o->nsrcs++] = v;
        else if (strcmp(a, "--names") == 0 && o->nsrcs > 0)
            o->names[o->nsrcs - 1] = v;
        else if (strcmp(a, "--builtin") == 0)
            o->builtin = v;
        else if (strcmp(a, "--ref") == 0)
            o->ref = v;
        else if (strcmp(a, "--dtype") == 0)
            o->dtype = v;
        else if (strcmp(a, "--header") == 0)
            o->header_path = v;
        else if (strcmp(a, "--arena") == 0)
            o->arena_bytes = parse_u64(v, a);
        else if (strcmp(a, "--device") == 0)
            o->device = (int)parse_u64(v, a);
        else if (strcmp(a, "--cpu-seconds") == 0)
            o->lim.cpu_seconds = parse_u64(v, a);
        else if (strcmp(a, "--report-scale") == 0)
            o->report_scale = strtod(v ? v : "1", NULL);
        else if (strcmp(a, "--parent") == 0)
            o->parent = parse_u64(v, a);
        else
            die("unknown argument", a);
        i++;
    }
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open", path);
    char *buf = malloc(512 * 1024 + 1);
    size_t n = buf ? fread(buf, 1, 512 * 1024, f) : 0;
    fclose(f);
    if (!buf || n == 0)
        die("cannot read", path);
    buf[n] = '\0';
    return buf;
}

/* ---- device ---------------------------------------------------------------- */

static int attr(CUdevice d, CUdevice_attribute a)
{
    int v = 0;
    cuDeviceGetAttribute(&v, a, d);
    return v;
}

/* The driver and the device, without a context yet (enough to know the
 * architecture and start compiling). */
static void find_device(worker *w, int ordinal)
{
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGet(&w->dev, ordinal);
    if (r != CUDA_SUCCESS)
        die("no CUDA device", cu_str(r));
}

/* The context, kiln's streams, the gate and the events. */
static void open_context(worker *w)
{
    CUresult r = cuDevicePrimaryCtxRetain(&w->ctx, w->dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(w->ctx);
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&w->side, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&w->gate, 256);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&w->ev0, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&w->ev1, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&w->fork, CU_EVENT_DISABLE_TIMING);
    for (int i = 0; i < REF_LANES && r == CUDA_SUCCESS; i++) {
        r = cuStreamCreate(&w->lanes[i], CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS)
            r = cuEventCreate(&w->join[i], CU_EVENT_DISABLE_TIMING);
    }
    if (r != CUDA_SUCCESS)
        die("no CUDA device", cu_str(r));
}

/* "name=NVIDIA H200 cc=9.0 sms=132 l2=62914560 ..." for the verdict. */
static void describe_device(worker *w, char *buf, size_t len)
{
    char name[128] = "";
    int drv = 0;
    cuDeviceGetName(name, sizeof name, w->dev);
    cuDriverGetVersion(&drv);
    snprintf(buf, len,
             "name=%s|cc=%d.%d|sms=%d|l2=%d|driver=%d|pageable=%d|smem_optin=%d|"
             "clock_khz=%d|mem_clock_khz=%d|bus_bits=%d|smem_sm=%d|regs_sm=%d|threads_sm=%d",
             name, attr(w->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), drv,
             attr(w->dev, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
             attr(w->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
}

/* Device-to-device copy bandwidth over 2 x 1 GiB, read plus write counted,
 * best of several: the roofline floor must not be beaten by honest code. */
static double copy_bandwidth(worker *w)
{
    size_t bytes = (size_t)1 << 30;
    CUdeviceptr a, b;
    if (cuMemAlloc(&a, bytes) != CUDA_SUCCESS || cuMemAlloc(&b, bytes) != CUDA_SUCCESS)
        die("probe", "cannot allocate 2 GiB");
    cuMemsetD8(a, 1, bytes);
    double best = 0;
    for (int i = 0; i < 6; i++) {
        float ms = 0;
        cuEventRecord(w->ev0, w->stream);
        cuMemcpyDtoDAsync(b, a, bytes, w->stream);
        cuEventRecord(w->ev1, w->stream);
        cuEventSynchronize(w->ev1);
        cuEventElapsedTime(&ms, w->ev0, w->ev1);
        double bw = 2.0 * (double)bytes / (ms / 1e3);
        if (i > 0 && bw > best)   /* the first one warms up */
            best = bw;
    }
    cuMemFree(a);
    cuMemFree(b);
    return best;
}


/* ---- setup: compile and load ---------------------------------------------- */

static void arch_of(worker *w, char *buf, size_t len)
{
    int major = attr(w->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = attr(w->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    /* From sm_90 on, the "a" target unlocks the part's own instructions
     * (wgmma, setmaxnreg); it runs only on that exact part, which is this one. */
    snprintf(buf, len, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
}

static const char *dtype_define(const char *dt)
{
    if (dt && strcmp(dt, "f16") == 0)
        return "KILN_DTYPE_F16";
    if (dt && strcmp(dt, "bf16") == 0)
        return "KILN_DTYPE_BF16";
    if (dt && strcmp(dt, "f32") == 0)
        return "KILN_DTYPE_F32";
    if (dt && strcmp(dt, "f64") == 0)   /* the CUDA reference */
        return "KILN_DTYPE_F64";
    die("--dtype must be f32, f16, bf16 or f64", dt);
    return NULL;
}

static void write_log(const char *dir, int lib, const char *log)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/compile-%d.log", dir, lib);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(log ? log : "", f);
        fclose(f);
    }
}

/* One NVRTC compile, in a child process of its own under the compiler's
 * limits (nvrtc_child.h): the candidate's, the baseline's and the
 * reference's compiles overlap each other and the context's creation. */
typedef struct compile_job {
    kiln_nvrtc_in in;
    char arch[16];
    kiln_nvrtc_child child;
} compile_job;

static void compile_start(compile_job *c, worker *w, const char *src, const char *name,
                          const char *define, const char *header, const char *names)
{
    arch_of(w, c->arch, sizeof c->arch);
    c->in = (kiln_nvrtc_in){.source = src, .name = name, .arch = c->arch, .dtype_define = define,
                            .kiln_header = header, .cuda_include = KILN_CUDA_INCLUDE_DIR,
                            .names = names};
    kiln_nvrtc_start(&c->child, &c->in);
}

static void compile_wait(compile_job *c)
{
    kiln_nvrtc_wait(&c->child);
}

/* The sources' modules from their finished compiles. 0, or
 * KILN_ST_COMPILE / KILN_ST_SETUP with info filled. */
static int load_modules(worker *w, const opts *o, compile_job jobs[], char *info, size_t len)
{
    for (int i = 0; i < o->nsrcs; i++) {
        kiln_nvrtc_child *c = &jobs[i].child;
        write_log(o->dir, i, c->log);
        if (c->rc == KILN_NVRTC_LIMIT) {
            snprintf(info, len, "lib %d: the compiler %s", i, c->limit);
            return KILN_ST_RESOURCE;
        }
        if (c->rc != 0) {
            snprintf(info, len, "lib %d (%s): %s%.400s", i, jobs[i].arch,
                     c->rc > 0 ? "" : "NVRTC failed: ", c->log ? c->log : "");
            return c->rc > 0 ? KILN_ST_COMPILE : KILN_ST_SETUP;
        }
        CUresult r = cuModuleLoadData(&w->mod[i], c->cubin);
        if (r != CUDA_SUCCESS) {
            snprintf(info, len, "lib %d: cannot load the cubin: %s", i, cu_str(r));
            return KILN_ST_COMPILE;
        }
        w->nmods = i + 1;
        w->names[i] = o->names[i];
        w->lowered[i] = c->lowered;   /* the worker's now */
        c->lowered = NULL;
    }
    return 0;
}

/* The task's trusted reference over doubles, for device-resident calls;
 * it is kiln's code, so a failure is a setup failure. */
static int load_ref(worker *w, const compile_job *job, char *info, size_t len)
{
    const kiln_nvrtc_child *c = &job->child;
    if (c->rc != 0) {
        snprintf(info, len, "the task's CUDA reference does not compile: %.380s",
                 c->log ? c->log : "");
        return KILN_ST_SETUP;
    }
    CUresult r = cuModuleLoadData(&w->refmod, c->cubin);
    if (r == CUDA_SUCCESS)
        return KILN_ST_OK;
    snprintf(info, len, "cannot load the task's CUDA reference: %s", cu_str(r));
    w->refmod = NULL;
    return KILN_ST_SETUP;
}

/* An L2 flush buffer of twice the L2 size, written before every call. */
static void make_flush(worker *w)
{
    size_t l2 = (size_t)attr(w->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    w->flush_bytes = (2 * (l2 ? l2 : ((size_t)64 << 20)) + 255) & ~(size_t)255;
    if (cuMemAlloc(&w->flush, w->flush_bytes) != CUDA_SUCCESS)
        die("cannot allocate the L2 flush buffer", NULL);
}

/* kiln's own kernels (devcheck.h), loaded from the worker's built-in fatbin;
 * among them the shared-memory poison that runs before every call (see
 * kiln_devcheck.cu for why). */
static void open_own(worker *w)
{
    char arch[16], info[400];
    arch_of(w, arch, sizeof arch);
    if (kiln_devcheck_open(&w->devcheck, w->dev, arch, KILN_CUDA_INCLUDE_DIR, info, sizeof info) < 0)
        die("kiln's own kernels", info);
    CUresult r = cuModuleGetFunction(&w->poison, w->devcheck.mod, "kiln_poison_smem");
    w->poison_smem = (unsigned)attr(w->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (r == CUDA_SUCCESS)
        r = cuFuncSetAttribute(w->poison, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               (int)w->poison_smem);
    if (r != CUDA_SUCCESS)
        die("cannot set up kiln's shared memory poison kernel", cu_str(r));
    /* One block per SM takes all its shared memory; twice as many blocks
     * as SMs makes sure every SM runs one. */
    w->poison_grid = 2u * (unsigned)attr(w->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    CUfunction warm;   /* device printf set up now (kiln_devcheck.cu says why) */
    int say = 0;
    void *args[] = {&say};
    r = cuModuleGetFunction(&warm, w->devcheck.mod, "kiln_printf_warm");
    if (r == CUDA_SUCCESS)
        r = cuLaunchKernel(warm, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
        die("cannot set up device printf", cu_str(r));
}

/* Device read bandwidth over 1 GiB, best of several (kiln_read_probe in
 * kiln_devcheck.cu): the floor of a task that reads far more than it writes. */
static double read_bandwidth(worker *w)
{
    size_t bytes = (size_t)1 << 30;
    CUdeviceptr a, out;
    CUfunction f;
    int sms = attr(w->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    unsigned grid = (unsigned)(sms > 0 ? sms : 32) * 8;
    if (cuModuleGetFunction(&f, w->devcheck.mod, "kiln_read_probe") != CUDA_SUCCESS)
        die("probe", "kiln's read probe kernel is missing");
    if (cuMemAlloc(&a, bytes) != CUDA_SUCCESS || cuMemAlloc(&out, grid * sizeof(unsigned)) != CUDA_SUCCESS)
        die("probe", "cannot allocate 1 GiB");
    cuMemsetD8(a, 1, bytes);
    kiln_u64 n = bytes / 16;
    void *args[] = {&a, &n, &out};
    double best = 0;
    for (int i = 0; i < 6; i++) {
        float ms = 0;
        cuEventRecord(w->ev0, w->stream);
        CUresult r = cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, w->stream, args, NULL);
        cuEventRecord(w->ev1, w->stream);
        if (r != CUDA_SUCCESS || cuEventSynchronize(w->ev1) != CUDA_SUCCESS)
            die("probe", cu_str(r));
        cuEventElapsedTime(&ms, w->ev0, w->ev1);
        double bw = (double)bytes / (ms / 1e3);
        if (i > 0 && bw > best)   /* the first one warms up */
            best = bw;
    }
    cuMemFree(a);
    cuMemFree(out);
    return best;
}

static int run_probe(opts *o)
{
    worker w = {0};
    find_device(&w, o->device);
    open_context(&w);
    open_own(&w);
    char info[512];
    describe_device(&w, info, sizeof info);
    double copy = copy_bandwidth(&w), read = read_bandwidth(&w);
    printf("%s|copy_bw=%.6e|read_bw=%.6e\n", info, copy, read);
    return 0;
}

static void poison_smem(worker *w)
{
    unsigned words = w->poison_smem / 4;
    void *args[1] = {&words};
    cuLaunchKernel(w->poison, w->poison_grid, 1, 1, 1024, 1, 1, w->poison_smem, w->stream, args,
                   NULL);
}

/* Default-allow seccomp with the dangerous calls denied (the compile-phase
 * filter: no ptrace, no other processes' memory, no IP sockets, no
 * namespaces): the driver needs threads, ioctl and mmap, and no candidate
 * host code runs to abuse what is left. */
static void confine(opts *o, char *desc, size_t len)
{
    kiln_sandbox_report rep = {0};
    kiln_error err;
    const char *rw[] = {o->dir, "/dev", "/proc", NULL};
    if (kiln_sandbox_rlimits(&o->lim, &rep, &err) < 0 ||
        kiln_sandbox_landlock_multi(ro_paths, rw, &rep, &err) < 0 ||
        kiln_sandbox_seccomp_compile(&rep, &err) < 0)
        die("sandbox", err.msg);
    kiln_sandbox_describe(&rep, desc, len);
}

/* ---- one call --------------------------------------------------------------- */

/* A device-resident call: its sets, buffers and reference launches make sense. */
/* Inputs may be integers (i32, i8: drawn, never compared); outputs are
 * floats, which the comparison knows. */
static int valid_dtype(const kiln_wire_data *a)
{
    if (a->dtype >= KILN_JDT_F32 && a->dtype <= KILN_JDT_F64)
        return 1;
    return a->role == 1 && a->dist == KILN_JDIST_INTEGERS &&
           (a->dtype == KILN_JDT_I32 || a->dtype == KILN_JDT_I8) && a->a <= a->b &&
           a->b - a->a < 4294967296.0;
}

static int valid_device(const worker *w, const kiln_call_req *rq)
{
    const kiln_wire_device *d = &rq->dev;
    if (!w->refmod || d->sets < 1 || d->sets > KILN_MAX_SETS ||
        d->ref_nlaunches > KILN_WORKER_MAX_LAUNCHES || (d->check && !d->ref_nlaunches))
        return 0;
    for (uint32_t i = 0; i < rq->nargs; i++) {
        const kiln_wire_data *a = &d->data[i];
        int buffer = rq->args[i].kind == KILN_WIRE_BUFFER;
        if (buffer != (a->role == 1 || a->role == 2) || a->role > 2 ||
            (buffer && (!valid_dtype(a) || a->elems > ((uint64_t)1 << 36))) ||
            d->ref_args[i].kind > KILN_WIRE_F64 ||
            (d->ref_args[i].kind == KILN_WIRE_BUFFER) != buffer)
            return 0;
    }
    for (uint32_t l = 0; l < d->ref_nlaunches; l++) {
        const kiln_wire_launch *L = &d->ref_launches[l];
        if (L->nargs > KILN_WORKER_MAX_ARGS || !memchr(L->kernel, 0, sizeof L->kernel))
            return 0;
        for (uint32_t k = 0; k < L->nargs; k++)
            if (L->arg[k] < 0 || L->arg[k] >= (int32_t)rq->nargs)
                return 0;
    }
    return 1;
}

static int valid_request(const worker *w, const kiln_call_req *rq)
{
    int builtin = w->builtin_lib >= 0 && rq->lib == (uint32_t)w->builtin_lib;
    if (rq->magic != KILN_MSG_CALL || (rq->lib >= (uint32_t)w->nmods && !builtin) ||
        rq->nargs > KILN_WORKER_MAX_ARGS || (rq->nlaunches == 0) != builtin ||
        rq->nlaunches > KILN_WORKER_MAX_LAUNCHES || rq->nscratch > KILN_WORKER_MAX_SCRATCH)
        return 0;
    if (builtin && (rq->nargs != 6 || rq->nscratch != 0 || rq->args[0].kind != KILN_WIRE_BUFFER ||
                    rq->args[1].kind != KILN_WIRE_BUFFER || rq->args[2].kind != KILN_WIRE_BUFFER ||
                    rq->args[3].kind != KILN_WIRE_I32 || rq->args[4].kind != KILN_WIRE_I32 ||
                    rq->args[5].kind != KILN_WIRE_I32))
        return 0;
    if (rq->dev.on && !valid_device(w, rq))
        return 0;
    for (uint32_t i = 0; i < rq->nargs; i++) {
        const kiln_wire_arg *a = &rq->args[i];
        if (a->kind > KILN_WIRE_F64)
            return 0;
        if (!rq->dev.on && a->kind == KILN_WIRE_BUFFER &&
            (a->offset < GUARD || a->bytes > w->arena_bytes ||
             a->offset + a->bytes + GUARD > w->arena_bytes))
            return 0;
    }
    for (uint32_t l = 0; l < rq->nlaunches; l++) {
        const kiln_wire_launch *L = &rq->launches[l];
        if (L->nargs > KILN_WORKER_MAX_LAUNCH_ARGS || !memchr(L->kernel, 0, sizeof L->kernel))
            return 0;
        if (L->nimm > KILN_WORKER_MAX_IMMS)
            return 0;
        for (uint32_t j = 0; j < L->nimm; j++)
            if (L->imm[j].kind < KILN_WIRE_I32 || L->imm[j].kind > KILN_WIRE_F64)
                return 0;
        for (uint32_t k = 0; k < L->nargs; k++) {
            int32_t a = L->arg[k];
            if (a >= KILN_WIRE_ARG_IMM ? a - KILN_WIRE_ARG_IMM >= (int32_t)L->nimm
                                       : a >= (int32_t)rq->nargs || -a - 1 >= (int32_t)rq->nscratch)
                return 0;
        }
    }
    return 1;
}

/* Buffers with their guards to the device; scratch poisoned unless zeroed
 * later. KILN_ST_OK, KILN_ST_RESOURCE (the device is out of memory) or
 * KILN_ST_SETUP, with info filled. */
static int upload(worker *w, const kiln_call_req *rq, char *info, size_t len)
{
    for (uint32_t i = 0; i < rq->nargs && !rq->dev.on; i++) {
        const kiln_wire_arg *a = &rq->args[i];
        if (a->kind != KILN_WIRE_BUFFER)
            continue;
        size_t n = a->bytes + 2 * GUARD;
        if (kiln_dbuf_ensure(&w->buf[i], n, info, len) < 0)
            return KILN_ST_RESOURCE;
        memcpy(w->sent_guard[i][0], w->arena + a->offset - GUARD, GUARD);
        memcpy(w->sent_guard[i][1], w->arena + a->offset + a->bytes, GUARD);
        CUresult r = cuMemcpyHtoD(w->buf[i].p, w->arena + a->offset - GUARD, n);
        if (r != CUDA_SUCCESS) {
            snprintf(info, len, "copy to the device: %s", cu_str(r));
            return KILN_ST_SETUP;
        }
    }
    for (uint32_t s = 0; s < rq->nscratch; s++) {
        size_t n = rq->scratch[s].bytes;
        if (kiln_dbuf_ensure(&w->scratch[s], n + 2 * GUARD, info, len) < 0)
            return KILN_ST_RESOURCE;
        cuMemsetD8(w->scratch[s].p, SCRATCH_GUARD, GUARD);
        cuMemsetD8(w->scratch[s].p + GUARD + n, SCRATCH_GUARD, GUARD);
        if (!rq->scratch[s].zero)
            cuMemsetD8(w->scratch[s].p + GUARD, 0xff, n);   /* NaN in every float type */
    }
    return KILN_ST_OK;
}

/* Scratch has guards too; kiln checks them here (its own code, after the
 * candidate's kernels finished). 0 when intact. */
static int check_scratch_guards(worker *w, const kiln_call_req *rq, char *info, size_t len)
{
    unsigned char g[2][GUARD];
    for (uint32_t s = 0; s < rq->nscratch; s++) {
        size_t n = rq->scratch[s].bytes;
        if (cuMemcpyDtoH(g[0], w->scratch[s].p, GUARD) != CUDA_SUCCESS ||
            cuMemcpyDtoH(g[1], w->scratch[s].p + GUARD + n, GUARD) != CUDA_SUCCESS)
            return snprintf(info, len, "cannot read back scratch %u", s), -1;
        for (int side = 0; side < 2; side++)
            for (int i = 0; i < GUARD; i++)
                if (g[side][i] != SCRATCH_GUARD) {
                    snprintf(info, len, "wrote %s scratch buffer %u (byte %d %s it)",
                             side ? "past the end of" : "before the start of", s,
                             side ? i : GUARD - i, side ? "after" : "before");
                    return -1;
                }
    }
    return 0;
}

/* Outputs (and inputs, to show they are unchanged) back to the arena. In
 * the arena one buffer's trailing guard is the next one's leading guard, so
 * only guard bytes the device changed are written back: an intact copy
 * never overwrites a change another buffer's copy brought back. */
static int download(worker *w, const kiln_call_req *rq, char *info, size_t len)
{
    unsigned char g[GUARD];
    for (uint32_t i = 0; i < rq->nargs; i++) {
        const kiln_wire_arg *a = &rq->args[i];
        if (a->kind != KILN_WIRE_BUFFER)
            continue;
        unsigned char *base = w->arena + a->offset;
        CUresult r = cuMemcpyDtoH(base, w->buf[i].p + GUARD, a->bytes);
        for (int side = 0; r == CUDA_SUCCESS && side < 2; side++) {
            unsigned char *host = side ? base + a->bytes : base - GUARD;
            r = cuMemcpyDtoH(g, w->buf[i].p + (side ? GUARD + a->bytes : 0), GUARD);
            for (int k = 0; r == CUDA_SUCCESS && k < GUARD; k++)
                if (g[k] != w->sent_guard[i][side][k])
                    host[k] = g[k];
        }
        if (r != CUDA_SUCCESS) {
            snprintf(info, len, "copy from the device: %s", cu_str(r));
            return -1;
        }
    }
    return 0;
}

/* Whose launches: the candidate's or baseline's (over the call's args and
 * the set's buffers), or the reference's (over doubles). */
typedef struct side {
    const kiln_wire_arg *args;
    int ref;
    uint32_t set;
} side;

/* Kernel parameters: pointers to the values, as cuLaunchKernel wants them. */
typedef union param {
    CUdeviceptr p;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
} param;

static CUdeviceptr buffer_ptr(const worker *w, const kiln_call_req *rq, const side *sd, int32_t ix)
{
    if (ix < 0)
        return w->scratch[-ix - 1].p + GUARD;
    if (!rq->dev.on)
        return w->buf[ix].p + GUARD;
    return sd->ref ? kiln_devcheck_ref(&w->devcheck, rq, (uint32_t)ix, sd->set)
                   : kiln_devcheck_data(&w->devcheck, sd->set, (uint32_t)ix);
}

static void params_for(const worker *w, const kiln_call_req *rq, const side *sd,
                       const kiln_wire_launch *L, param vals[], void *ptrs[])
{
    for (uint32_t k = 0; k < L->nargs; k++) {
        int32_t ix = L->arg[k];
        const kiln_wire_imm *im = ix >= KILN_WIRE_ARG_IMM ? &L->imm[ix - KILN_WIRE_ARG_IMM] : NULL;
        const kiln_wire_arg *a = ix >= 0 && !im ? &sd->args[ix] : NULL;
        int64_t iv = im ? im->ival : a ? a->ival : 0;
        double fv = im ? im->fval : a ? a->fval : 0.0;
        switch (im ? im->kind : a ? a->kind : KILN_WIRE_BUFFER) {
        case KILN_WIRE_BUFFER: vals[k].p = buffer_ptr(w, rq, sd, ix); break;
        case KILN_WIRE_I32: vals[k].i32 = (int32_t)iv; break;
        case KILN_WIRE_I64: vals[k].i64 = iv; break;
        case KILN_WIRE_F32: vals[k].f32 = (float)fv; break;
        default: vals[k].f64 = fv; break;
        }
        ptrs[k] = &vals[k];
    }
}

/* The bytes launch argument k of L occupies as a kernel parameter. */
static size_t param_size(const kiln_wire_arg *args, const kiln_wire_launch *L, uint32_t k)
{
    int32_t ix = L->arg[k];
    if (ix < 0)
        return sizeof(CUdeviceptr);
    switch (ix >= KILN_WIRE_ARG_IMM ? L->imm[ix - KILN_WIRE_ARG_IMM].kind : args[ix].kind) {
    case KILN_WIRE_I32:
    case KILN_WIRE_F32:
        return 4;
    default:
        return 8;
    }
}

/* The manifest must pass exactly the kernel's parameters, each of the
 * size the kernel reads: a kernel that reads a parameter kiln never
 * supplied would read whatever lies there. */
static CUresult check_params(CUfunction f, const kiln_wire_arg *args, const kiln_wire_launch *L,
                             char *info, size_t len)
{
    size_t off, size, n = 0;
    while (cuFuncGetParamInfo(f, n, &off, &size) == CUDA_SUCCESS) {
        if (n < L->nargs && size != param_size(args, L, (uint32_t)n)) {
            snprintf(info, len, "kernel %s: parameter %zu is %zu bytes but the manifest passes "
                     "%zu bytes there", L->kernel, n + 1, size, param_size(args, L, (uint32_t)n));
            return CUDA_ERROR_INVALID_VALUE;
        }
        n++;
    }
    if (n != L->nargs) {
        snprintf(info, len, "kernel %s takes %zu parameters but the manifest passes %u", L->kernel,
                 n, L->nargs);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Look up every kernel of mod, check its parameters and raise its shared
 * memory limit where asked, before anything is timed. */
/* The symbol a launch's kernel has in lib's cubin: the lowered name NVRTC
 * gave its name expression, or the name itself. */
static const char *symbol_of(const worker *w, int lib, const char *kernel)
{
    const char *e = lib >= 0 ? w->names[lib] : NULL, *sym = lib >= 0 ? w->lowered[lib] : NULL;
    size_t kl = strlen(kernel);
    while (e && *e && sym) {
        size_t el = strcspn(e, "\n");
        if (el == kl && memcmp(e, kernel, kl) == 0)
            return sym;
        e += el + (e[el] == '\n');
        sym += strlen(sym) + 1;
    }
    return kernel;
}

/* The driver's view of each of the candidate's launches (lib 0) at this
 * call's configuration: registers, local memory (spills), shared memory,
 * and how many blocks fit on an SM (theoretical occupancy). */
static void profile_launches(const worker *w, const kiln_call_req *rq, const CUfunction fn[],
                             kiln_call_resp *rs)
{
    int sm_threads = 0;
    cuDeviceGetAttribute(&sm_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, w->dev);
    rs->nprofile = 0;
    for (uint32_t l = 0; rq->lib == 0 && l < rq->nlaunches && l < KILN_WORKER_MAX_LAUNCHES; l++) {
        const kiln_wire_launch *L = &rq->launches[l];
        kiln_wire_profile *p = &rs->profile[rs->nprofile++];
        int v = 0, blocks = 0;
        memset(p, 0, sizeof *p);
        p->regs = cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, fn[l]) == CUDA_SUCCESS ? (uint32_t)v : 0;
        p->local_bytes = cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn[l]) == CUDA_SUCCESS
                             ? (uint32_t)v : 0;
        p->static_smem = cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn[l]) == CUDA_SUCCESS
                             ? (uint32_t)v : 0;
        p->dynamic_smem = L->smem;
        p->threads = L->block[0] * (L->block[1] ? L->block[1] : 1) * (L->block[2] ? L->block[2] : 1);
        if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn[l], (int)p->threads, L->smem) ==
            CUDA_SUCCESS)
            p->blocks_per_sm = (uint32_t)blocks;
        p->max_threads_sm = (uint32_t)sm_threads;
        p->cluster = L->cluster[0] ? L->cluster[0] * (L->cluster[1] ? L->cluster[1] : 1) *
                                         (L->cluster[2] ? L->cluster[2] : 1)
                                   : 1;
    }
}

/* lib: the library the launches are in, or -1 for kiln's reference. */
static CUresult find_kernels(const worker *w, int lib, CUmodule mod, const kiln_wire_arg *args,
                             const kiln_wire_launch *Ls, uint32_t n, CUfunction fn[], char *info,
                             size_t len)
{
    for (uint32_t l = 0; l < n; l++) {
        const kiln_wire_launch *L = &Ls[l];
        CUresult r = cuModuleGetFunction(&fn[l], mod, symbol_of(w, lib, L->kernel));
        if (r != CUDA_SUCCESS) {
            snprintf(info, len, "kernel %s: %s", L->kernel, cu_str(r));
            return r;
        }
        if ((r = check_params(fn[l], args, L, info, len)) != CUDA_SUCCESS)
            return r;
        if (L->smem > 48 * 1024 &&
            (r = cuFuncSetAttribute(fn[l], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    (int)L->smem)) != CUDA_SUCCESS) {
            snprintf(info, len, "kernel %s: %u bytes of shared memory: %s", L->kernel, L->smem,
                     cu_str(r));
            return r;
        }
        /* More than 8 blocks a cluster (16 on sm_90) is a non-portable size
         * the kernel must opt into; only such a launch does, so a kernel's
         * attributes change only for the launches that need it. */
        const uint64_t cblocks = (uint64_t)L->cluster[0] * (L->cluster[1] ? L->cluster[1] : 1) *
                                 (L->cluster[2] ? L->cluster[2] : 1);
        if (L->cluster[0] && cblocks > 8 &&
            (r = cuFuncSetAttribute(fn[l], CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)) !=
                CUDA_SUCCESS) {
            snprintf(info, len, "kernel %s: a cluster of %llu blocks (non-portable): %s", L->kernel,
                     (unsigned long long)cblocks, cu_str(r));
            return r;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult launch_on(worker *w, CUstream st, const kiln_call_req *rq, const side *sd,
                          const kiln_wire_launch *L, CUfunction f, char *info, size_t len)
{
    CUresult r;
    param vals[KILN_WORKER_MAX_LAUNCH_ARGS];
    void *ptrs[KILN_WORKER_MAX_LAUNCH_ARGS];
    params_for(w, rq, sd, L, vals, ptrs);
    CUlaunchConfig cfg = {.gridDimX = L->grid[0], .gridDimY = L->grid[1], .gridDimZ = L->grid[2],
                          .blockDimX = L->block[0], .blockDimY = L->block[1], .blockDimZ = L->block[2],
                          .sharedMemBytes = L->smem, .hStream = st};
    CUlaunchAttribute at;
    if (L->cluster[0]) {
        at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at.value.clusterDim.x = L->cluster[0];
        at.value.clusterDim.y = L->cluster[1] ? L->cluster[1] : 1;
        at.value.clusterDim.z = L->cluster[2] ? L->cluster[2] : 1;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
    }
    r = cuLaunchKernelEx(&cfg, f, ptrs, NULL);
    if (r != CUDA_SUCCESS)
        snprintf(info, len, "launch of %s (grid %u,%u,%u block %u,%u,%u smem %u): %s", L->kernel,
                 L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1], L->block[2],
                 L->smem, cu_str(r));
    return r;
}

/* A launch on kiln's stream. */
static CUresult launch_one(worker *w, const kiln_call_req *rq, const side *sd,
                           const kiln_wire_launch *L, CUfunction f, char *info, size_t len)
{
    return launch_on(w, w->stream, rq, sd, L, f, info, len);
}

/* What a fault was, in words a kernel author reads first. */
static const char *fault_words(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ASSERT: return "a device assert failed";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access";
    case CUDA_ERROR_MISALIGNED_ADDRESS: return "a misaligned memory access";
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: return "an illegal instruction or a trap";
    case CUDA_ERROR_LAUNCH_FAILED: return "the kernel aborted (a trap, or an unspecified launch failure)";
    case CUDA_ERROR_HARDWARE_STACK_ERROR: return "a call stack overflow";
    case CUDA_ERROR_INVALID_ADDRESS_SPACE: return "an access to the wrong address space";
    case CUDA_ERROR_INVALID_PC: return "an invalid program counter";
    case CUDA_ERROR_LAUNCH_TIMEOUT: return "the kernel ran past the driver's watchdog";
    default: return "a device error";
    }
}

/* A fault poisons the context: nothing more can run in this process. */
static int is_fault(CUresult r)
{
    return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED ||
           r == CUDA_ERROR_ASSERT || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
           r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
           r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_HARDWARE_STACK_ERROR ||
           r == CUDA_ERROR_LAUNCH_TIMEOUT ||
           r == CUDA_ERROR_CONTEXT_IS_DESTROYED || r == CUDA_ERROR_UNKNOWN;
}

static int is_builtin(const worker *w, const kiln_call_req *rq)
{
    return w->builtin_lib >= 0 && rq->lib == (uint32_t)w->builtin_lib;
}

/* One set's work, enqueued on kiln's stream: the manifest's launches, or
 * the built-in cuBLAS gemm on args (a, b, c, M, N, K). */
static CUresult enqueue_work(worker *w, const kiln_call_req *rq, uint32_t set,
                             const CUfunction fn[], char *info, size_t len)
{
    side sd = {rq->args, 0, set};
    if (is_builtin(w, rq))
        return kiln_cublas_gemm_bf16(buffer_ptr(w, rq, &sd, 0), buffer_ptr(w, rq, &sd, 1),
                                     buffer_ptr(w, rq, &sd, 2), (int)rq->args[3].ival,
                                     (int)rq->args[4].ival, (int)rq->args[5].ival, info, len) == 0
                   ? CUDA_SUCCESS
                   : CUDA_ERROR_INVALID_VALUE;
    CUresult lr = CUDA_SUCCESS;
    for (uint32_t l = 0; l < rq->nlaunches && lr == CUDA_SUCCESS; l++)
        lr = launch_one(w, rq, &sd, &rq->launches[l], fn[l], info, len);
    return lr;
}

/* cuBLAS picks and loads its kernels on the first call of each shape; that
 * happens here, untimed and outside the gate (loading a module while the
 * stream waits on the gate could wait forever). */
static CUresult warm_builtin(worker *w, const kiln_call_req *rq, char *info, size_t len)
{
    int64_t shape[3] = {rq->args[3].ival, rq->args[4].ival, rq->args[5].ival};
    if (memcmp(shape, w->warm_shape, sizeof shape) == 0)
        return CUDA_SUCCESS;
    CUresult r = enqueue_work(w, rq, 0, NULL, info, len);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(w->stream);
    memcpy(w->warm_shape, shape, sizeof shape);
    return r;
}

/* Every set's scratch zeroing and launches, on kiln's stream. */
static CUresult enqueue_batch(worker *w, const kiln_call_req *rq, uint32_t sets,
                              const CUfunction fn[], char *info, size_t len)
{
    CUresult lr = CUDA_SUCCESS;
    for (uint32_t set = 0; set < sets && lr == CUDA_SUCCESS; set++) {
        for (uint32_t s = 0; s < rq->nscratch; s++)
            if (rq->scratch[s].zero)
                cuMemsetD8Async(w->scratch[s].p + GUARD, 0, rq->scratch[s].bytes, w->stream);
        lr = enqueue_work(w, rq, set, fn, info, len);
    }
    return lr;
}

/* Capturing from kiln's stream into a graph: begin, then end with what
 * enqueueing returned (a launch the driver refused stays the error) and
 * instantiate. */
static CUresult begin_capture(worker *w, const char *what, char *info, size_t len)
{
    CUresult r = cuStreamBeginCapture(w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS)
        snprintf(info, len, "cannot capture the %s: %s", what, cu_str(r));
    return r;
}

static CUresult end_capture(worker *w, CUresult lr, const char *what, CUgraphExec *exec,
                            char *info, size_t len)
{
    CUgraph g = NULL;
    CUresult r = cuStreamEndCapture(w->stream, &g);
    if (lr == CUDA_SUCCESS && r == CUDA_SUCCESS)
        r = cuGraphInstantiate(exec, g, 0);
    if (g)
        cuGraphDestroy(g);
    if (lr == CUDA_SUCCESS && r != CUDA_SUCCESS)
        snprintf(info, len, "cannot make the %s's graph: %s", what, cu_str(r));
    return lr != CUDA_SUCCESS ? lr : r;
}

/* The batch as one CUDA graph, captured from kiln's stream: back-to-back
 * kernels of a graph start sooner after each other than stream launches,
 * so the time between them (which no timer should charge to the kernel)
 * shrinks. A launch the driver refuses is refused here, as it would be
 * on the stream. The graph is made afresh for every call: one kept from
 * call to call measured a kernel against itself at 0.989-0.996x on the
 * H200 (4-5 us kernels, every run the same way), one made per call at
 * 0.997-1.004x (docs/decisions.md). */
static CUresult capture_batch(worker *w, const kiln_call_req *rq, uint32_t sets,
                              const CUfunction fn[], CUgraphExec *exec, char *info, size_t len)
{
    CUresult r = begin_capture(w, "batch", info, len);
    return r != CUDA_SUCCESS ? r
                             : end_capture(w, enqueue_batch(w, rq, sets, fn, info, len), "batch",
                                           exec, info, len);
}

/* The timed region: for each input set, scratch zeroing and the launches,
 * between two events on kiln's stream. The stream first waits on a gate
 * word, so everything is queued before the GPU starts on it and the events
 * time the GPU's work, not how fast this process submits it; the gate is
 * opened from a side stream, and the wall clock runs from then to a
 * context-wide synchronize. Several sets run back to back (each on its own
 * buffers, all cold in L2), so a short kernel is timed as a kernel and not
 * as a launch. */
static int timed_launches(worker *w, const kiln_call_req *rq, kiln_call_resp *rs)
{
    char *info = rs->info;
    size_t len = sizeof rs->info;
    uint32_t sets = rq->dev.on ? rq->dev.sets : 1;
    CUfunction fn[KILN_WORKER_MAX_LAUNCHES];
    CUresult lr = rq->nlaunches ? find_kernels(w, (int)rq->lib, w->mod[rq->lib], rq->args, rq->launches,
                                               rq->nlaunches, fn, info, len)
                                : CUDA_SUCCESS;
    if (lr == CUDA_SUCCESS && !rq->nlaunches)
        lr = warm_builtin(w, rq, info, len);
    if (lr != CUDA_SUCCESS)
        return KILN_ST_LAUNCH;
    if (rq->nlaunches)
        profile_launches(w, rq, fn, rs);
    uint64_t t_setup = kiln_mono_ns();
    CUgraphExec exec = NULL;
    if (sets > 1 && rq->dev.graph && (lr = capture_batch(w, rq, sets, fn, &exec, info, len)) != CUDA_SUCCESS)
        return is_fault(lr) ? KILN_ST_FAULT : KILN_ST_LAUNCH;
    cuMemsetD32Async(w->gate, 0, 1, w->stream);
    cuMemsetD32Async(w->flush, w->flush_value++, w->flush_bytes / 4, w->stream);
    poison_smem(w);
    cuStreamSynchronize(w->stream);
    rs->setup_ns = kiln_mono_ns() - t_setup;
    kiln_cupti_reset();
    cuStreamWaitValue32(w->stream, w->gate, 1, CU_STREAM_WAIT_VALUE_EQ);
    cuEventRecord(w->ev0, w->stream);
    if (exec)
        lr = cuGraphLaunch(exec, w->stream);
    else
        lr = enqueue_batch(w, rq, sets, fn, info, len);
    cuEventRecord(w->ev1, w->stream);
    uint64_t t0 = kiln_mono_ns();
    cuStreamWriteValue32(w->side, w->gate, 1, 0);
    CUresult sr = cuCtxSynchronize();
    rs->wall_ns = kiln_mono_ns() - t0;
    if (exec)
        cuGraphExecDestroy(exec);
    if (sr != CUDA_SUCCESS) {
        snprintf(info, len, "the kernel faulted: %s (%s)", fault_words(sr), cu_str(sr));
        return KILN_ST_FAULT;
    }
    if (lr != CUDA_SUCCESS)
        return is_fault(lr) ? KILN_ST_FAULT : KILN_ST_LAUNCH;
    float ms = 0;
    cuEventElapsedTime(&ms, w->ev0, w->ev1);
    rs->elapsed_ns = (uint64_t)((double)ms * 1e6);
    kiln_cupti_close();
    rs->sets = sets;
    return KILN_ST_OK;
}

/* The call's CUPTI span, from the window timed_launches closed. A forced
 * flush makes the next kernel launch slow (about 0.22 ms on the H200), so
 * a device-resident call flushes once its checks are queued, and pays
 * that while they run. */
static int cupti_figures(worker *w, const kiln_call_req *rq, kiln_call_resp *rs)
{
    kiln_cupti_span sp;
    if (kiln_cupti_collect(&sp, rs->info, sizeof rs->info) < 0)
        return KILN_ST_SETUP;
    rs->kernels = sp.kernels;
    rs->cupti_ns = sp.kernels ? sp.end_ns - sp.start_ns : 0;
    rs->kernel_sum_ns = sp.sum_ns;
    if (rq->lib == 0 && w->report_scale > 0)   /* fault injection (tests) */
        rs->elapsed_ns = (uint64_t)((double)rs->elapsed_ns * w->report_scale);
    return KILN_ST_OK;
}

/* The reference's buffers (inputs and gold) zeroed on the device. */
static void scrub(worker *w)
{
    for (int i = 0; i < KILN_WORKER_MAX_ARGS; i++)
        if (w->buf[i].p)
            cuMemsetD8(w->buf[i].p, 0, w->buf[i].cap);
    for (int s = 0; s < KILN_WORKER_MAX_SCRATCH; s++)
        if (w->scratch[s].p)
            cuMemsetD8(w->scratch[s].p, 0, w->scratch[s].cap);
    cuCtxSynchronize();
}

/* Everything the reference's graph over a chunk of n sets depends on. */
typedef struct ref_key {
    uint32_t n, nlaunches;
    kiln_wire_arg args[KILN_WORKER_MAX_ARGS];
    kiln_wire_launch launches[KILN_WORKER_MAX_LAUNCHES];
    CUdeviceptr exact[KILN_WORKER_MAX_ARGS], gold[KILN_WORKER_MAX_ARGS];
} ref_key;

/* Into the capture on kiln's stream: set k's launches, in order, on lane
 * k % REF_LANES, each lane forked from kiln's stream and joined back to it,
 * so the graph holds REF_LANES independent chains. Sets share nothing the
 * reference writes (each has its own gold; a reference has no scratch). */
static CUresult reference_lanes(worker *w, const kiln_call_req *rq, const CUfunction fn[],
                                uint32_t n, char *info, size_t len)
{
    const kiln_wire_device *d = &rq->dev;
    uint32_t lanes = n < REF_LANES ? n : REF_LANES;
    CUresult lr = cuEventRecord(w->fork, w->stream);
    for (uint32_t i = 0; i < lanes && lr == CUDA_SUCCESS; i++)
        lr = cuStreamWaitEvent(w->lanes[i], w->fork, 0);
    for (uint32_t k = 0; k < n && lr == CUDA_SUCCESS; k++) {
        side sd = {d->ref_args, 1, k};
        for (uint32_t l = 0; l < d->ref_nlaunches && lr == CUDA_SUCCESS; l++)
            lr = launch_on(w, w->lanes[k % lanes], rq, &sd, &d->ref_launches[l], fn[l], info, len);
    }
    /* Every forked lane is joined, even after a refused launch: a capture
     * ends only once every stream it drew in is back. */
    for (uint32_t i = 0; i < lanes; i++) {
        CUresult jr = cuEventRecord(w->join[i], w->lanes[i]);
        if (jr == CUDA_SUCCESS)
            jr = cuStreamWaitEvent(w->stream, w->join[i], 0);
        if (lr == CUDA_SUCCESS)
            lr = jr;
    }
    return lr;
}

/* The reference over the first n sets of a chunk (every chunk uses the
 * same buffers), as one graph made once and kept: one launch per set per
 * reference kernel would cost more than the kernels at small shapes. */
static CUresult reference_chunk(worker *w, const kiln_call_req *rq, const CUfunction fn[],
                                uint32_t n, char *info, size_t len)
{
    const kiln_wire_device *d = &rq->dev;
    ref_key key;
    memset(&key, 0, sizeof key);   /* padding too: compared as bytes */
    key.n = n;
    key.nlaunches = d->ref_nlaunches;
    memcpy(key.args, d->ref_args, sizeof key.args);
    memcpy(key.launches, d->ref_launches, d->ref_nlaunches * sizeof d->ref_launches[0]);
    for (int a = 0; a < KILN_WORKER_MAX_ARGS; a++) {
        key.exact[a] = w->devcheck.exact[a].p;
        key.gold[a] = w->devcheck.gold[a].p;
    }
    CUgraphExec exec = kiln_graph_cache_get(&w->ref_graphs, &key, sizeof key);
    if (exec)
        return cuGraphLaunch(exec, w->stream);
    CUresult r = begin_capture(w, "reference", info, len);
    if (r != CUDA_SUCCESS)
        return r;
    CUresult lr = reference_lanes(w, rq, fn, n, info, len);
    if ((r = end_capture(w, lr, "reference", &exec, info, len)) != CUDA_SUCCESS)
        return r;
    if (kiln_graph_cache_put(&w->ref_graphs, &key, sizeof key, exec) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return cuGraphLaunch(exec, w->stream);
}

/* After the candidate's launches, chunk by chunk of sets: inputs and
 * guards checked, the reference run over each set's exact inputs, outputs
 * compared; then the summaries read back and the gold zeroed. */
static int device_checks(worker *w, const kiln_call_req *rq, kiln_call_resp *rs, int *timed_st)
{
    const kiln_wire_device *d = &rq->dev;
    kiln_devcheck *j = &w->devcheck;
    CUfunction fn[KILN_WORKER_MAX_LAUNCHES];
    CUresult r = CUDA_SUCCESS;
    if (d->check)
        r = find_kernels(w, -1, w->refmod, d->ref_args, d->ref_launches, d->ref_nlaunches, fn, rs->info,
                         sizeof rs->info);
    if (r != CUDA_SUCCESS)
        return KILN_ST_SETUP;   /* kiln's own reference: not the candidate's fault */
    for (uint32_t s0 = 0; s0 < d->sets && r == CUDA_SUCCESS; s0 += j->chunk) {
        uint32_t n = d->sets - s0 < j->chunk ? d->sets - s0 : j->chunk;
        r = kiln_devcheck_inputs(j, rq, s0, n, w->stream);
        if (d->check && r == CUDA_SUCCESS)
            r = reference_chunk(w, rq, fn, n, rs->info, sizeof rs->info);
        if (d->check && r == CUDA_SUCCESS)
            r = kiln_devcheck_compare(j, rq, s0, n, w->stream);
    }
    int st = *timed_st == KILN_ST_OK ? cupti_figures(w, rq, rs) : *timed_st;
    *timed_st = st;
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(w->stream);
    st = KILN_ST_OK;
    if (r != CUDA_SUCCESS) {
        snprintf(rs->info, sizeof rs->info, "kiln's checks failed on the device: %s", cu_str(r));
        st = is_fault(r) ? KILN_ST_FAULT : KILN_ST_SETUP;
    } else if (kiln_devcheck_collect(j, rq, rs, rs->info, sizeof rs->info) < 0) {
        st = KILN_ST_SETUP;
    }
    if (st != KILN_ST_FAULT)
        kiln_devcheck_scrub(j, rq, w->stream);
    return st;
}

/* A device-resident call: draw every set, time the launches over all of
 * them, check every set. */
static int device_call(worker *w, const kiln_call_req *rq, kiln_call_resp *rs)
{
    uint64_t t0 = kiln_mono_ns();
    int st = kiln_devcheck_alloc(&w->devcheck, rq, rq->dev.check, rs->info, sizeof rs->info);
    CUresult r = st == KILN_ST_OK ? kiln_devcheck_stage(&w->devcheck, rq, w->stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(w->stream);
    rs->draw_ns = kiln_mono_ns() - t0;
    if (st == KILN_ST_OK && r != CUDA_SUCCESS) {
        snprintf(rs->info, sizeof rs->info, "drawing the inputs: %s", cu_str(r));
        st = KILN_ST_SETUP;
    }
    if (st == KILN_ST_OK)
        st = upload(w, rq, rs->info, sizeof rs->info);   /* scratch only */
    if (st == KILN_ST_OK)
        st = timed_launches(w, rq, rs);
    if (st == KILN_ST_OK && check_scratch_guards(w, rq, rs->info, sizeof rs->info) < 0)
        st = KILN_ST_GUARD;
    if (st == KILN_ST_OK || st == KILN_ST_GUARD) {
        uint64_t t1 = kiln_mono_ns();
        int timed_st = KILN_ST_OK;
        int cst = device_checks(w, rq, rs, &timed_st);
        rs->check_ns = kiln_mono_ns() - t1;
        st = cst != KILN_ST_OK ? cst : timed_st != KILN_ST_OK ? timed_st : st;
    }
    return st;
}

static void serve(worker *w)
{
    kiln_call_req rq;
    while (kiln_read_full(KILN_WORKER_REQ_FD, &rq, sizeof rq) == 0) {
        kiln_call_resp rs = {.magic = KILN_MSG_DONE, .nonce = rq.nonce};
        if (!valid_request(w, &rq)) {
            rs.status = KILN_ST_SETUP;
            snprintf(rs.info, sizeof rs.info, "malformed request");
        } else if (rq.dev.on) {
            rs.status = (uint32_t)device_call(w, &rq, &rs);
        } else if ((rs.status = (uint32_t)upload(w, &rq, rs.info, sizeof rs.info)) == KILN_ST_OK) {
            rs.status = (uint32_t)timed_launches(w, &rq, &rs);
            if (rs.status == KILN_ST_OK)
                rs.status = (uint32_t)cupti_figures(w, &rq, &rs);
            if (rs.status == KILN_ST_OK && download(w, &rq, rs.info, sizeof rs.info) < 0)
                rs.status = KILN_ST_FAULT;
            if (rs.status == KILN_ST_OK && check_scratch_guards(w, &rq, rs.info, sizeof rs.info) < 0)
                rs.status = KILN_ST_GUARD;
            if (w->scrub && rs.status != KILN_ST_FAULT)
                scrub(w);
        }
        fflush(stdout);   /* device printf, written at the call's synchronize, reaches the
                             log before the verifier looks */
        if (kiln_write_full(KILN_WORKER_RESP_FD, &rs, sizeof rs) < 0 || rs.status == KILN_ST_FAULT)
            break;
    }
}

/* The built-in baseline, numbered after the sources; its workspace is
 * kiln's, allocated here so that no timed call allocates. */
static int open_builtin(worker *w, const opts *o, char *info, size_t len)
{
    const size_t ws = (size_t)32 << 20;
    if (strcmp(o->builtin, "cublas") != 0)
        return snprintf(info, len, "unknown built-in baseline '%.60s'", o->builtin), KILN_ST_SETUP;
    if (cuMemAlloc(&w->cublas_ws, ws) != CUDA_SUCCESS)
        return snprintf(info, len, "cannot allocate the cuBLAS workspace"), KILN_ST_SETUP;
    if (kiln_cublas_open(w->stream, w->cublas_ws, ws, info, len) < 0)
        return KILN_ST_SETUP;
    w->builtin_lib = w->nmods;
    return KILN_ST_OK;
}

static int run_worker(opts *o)
{
    if (!o->dir || !o->nsrcs || !o->arena_bytes || !o->header_path)
        die("need --dir, --src, --arena and --header", NULL);
    char *srcs[KILN_WORKER_MAX_LIBS] = {0};
    for (int i = 0; i < o->nsrcs; i++)
        srcs[i] = read_text(o->srcs[i]);
    char *header = read_text(o->header_path);
    char *refsrc = o->ref ? read_text(o->ref) : NULL;
    worker w = {.arena_bytes = o->arena_bytes, .report_scale = o->report_scale,
                .builtin_lib = -1, .scrub = o->scrub};
    w.arena = mmap(NULL, o->arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, KILN_WORKER_ARENA_FD, 0);
    if (w.arena == MAP_FAILED)
        die("cannot map the arena", strerror(errno));
    char desc[200], msg[256];
    confine(o, desc, sizeof desc);
    kiln_call_resp ready = {.magic = KILN_MSG_READY};
    if (kiln_cupti_start(msg, sizeof msg) < 0)   /* before the context, so it sees everything */
        die("CUPTI", msg);
    find_device(&w, o->device);
    compile_job jobs[KILN_WORKER_MAX_LIBS + 1];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < o->nsrcs; i++)
        compile_start(&jobs[i], &w, srcs[i],
                      o->scrub ? "reference.cu" : i == 0 ? "candidate.cu" : "baseline.cu",
                      dtype_define(o->dtype), header, o->names[i]);
    if (refsrc)
        compile_start(&jobs[o->nsrcs], &w, refsrc, "reference.cu", "KILN_DTYPE_F64", header, NULL);
    open_context(&w);
    make_flush(&w);
    open_own(&w);
    for (int i = 0; i <= o->nsrcs; i++)
        compile_wait(&jobs[i]);
    ready.status = (uint32_t)load_modules(&w, o, jobs, ready.info, sizeof ready.info);
    if (ready.status == KILN_ST_OK && refsrc)
        ready.status = (uint32_t)load_ref(&w, &jobs[o->nsrcs], ready.info, sizeof ready.info);
    for (int i = 0; i <= o->nsrcs; i++) {
        free(jobs[i].child.cubin);
        free(jobs[i].child.log);
        free(jobs[i].child.lowered);
    }
    if (ready.status == KILN_ST_OK && o->builtin)
        ready.status = (uint32_t)open_builtin(&w, o, ready.info, sizeof ready.info);
    if (ready.status == KILN_ST_OK) {
        char dev[256];
        describe_device(&w, dev, sizeof dev);
        if (w.builtin_lib >= 0)
            snprintf(dev + strlen(dev), sizeof dev - strlen(dev), "|cublas=%d", kiln_cublas_version());
        snprintf(ready.info, sizeof ready.info, "%s\n%s", desc, dev);
    }
    if (kiln_write_full(KILN_WORKER_RESP_FD, &ready, sizeof ready) < 0 || ready.status != KILN_ST_OK)
        _exit(ready.status == KILN_ST_OK ? KILN_WORKER_EXIT_SETUP : 0);
    serve(&w);
    kiln_graph_cache_clear(&w.ref_graphs);
    _exit(0);
}

int main(int argc, char **argv)
{
    opts o = {0};
    parse_args(argc, argv, &o);
    if (o.parent)
        kiln_worker_bind_parent(SIGKILL, o.parent);
    return o.probe ? run_probe(&o) : run_worker(&o);
}
