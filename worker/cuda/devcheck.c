/* devcheck.c - device-resident inputs, guards and checks (see devcheck.h). */
#include "devcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "devcheck_abi.h"
#include "devcheck_src.h"     /* kiln_devcheck_src: devcheck_abi.h + kiln_devcheck.cu, built in */
#include "nvrtc_build.h"

#define GUARD 512          /* guard bytes before and after every buffer */
#define SHIFT_STEPS 256    /* a buffer starts 0 .. 255 times 256 bytes into its allocation */

_Static_assert(KILN_DEVCHECK_ACC_STEP == KILN_WORKER_MAX_ARGS, "one accumulator per argument");
#define BLOCK 256

static const char *cu_str(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "CUDA error";
}

/* kiln's kernels by NVRTC from the built-in source: where the built-in
 * fatbin (nvcc's, made at build time) has nothing this device can run. */
static CUresult devcheck_compile(kiln_devcheck *j, const char *arch, const char *cuda_include, char *info,
                              size_t len)
{
    kiln_nvrtc_in in = {.source = kiln_devcheck_src, .name = "kiln_devcheck.cu", .arch = arch,
                        .dtype_define = "KILN_DTYPE_F32", .kiln_header = "",
                        .cuda_include = cuda_include};
    unsigned char *cubin = NULL;
    size_t n = 0;
    char *log = NULL;
    int rc = kiln_nvrtc_build(&in, &cubin, &n, &log);
    if (rc != 0)
        snprintf(info, len, "kiln's own device code does not compile: %.300s", log ? log : "");
    free(log);
    CUresult r = rc == 0 ? cuModuleLoadData(&j->mod, cubin) : CUDA_ERROR_INVALID_SOURCE;
    free(cubin);
    return r;
}

/* The worker's own random numbers: what slot holds which set, and where
 * its buffers start. Not the call's key, which the verifier chose and
 * which two workers share for the same inputs. */
static uint64_t next_random(kiln_devcheck *j)
{
    uint64_t x = j->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    j->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void seed_random(kiln_devcheck *j)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s)
        s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)clock();
    j->rng = s | 1;
    j->shift = (size_t)(next_random(j) % SHIFT_STEPS) * 256;
}

int kiln_devcheck_open(kiln_devcheck *j, CUdevice dev, const char *arch, const char *cuda_include,
                    char *info, size_t len)
{
    CUresult r = CUDA_ERROR_NO_BINARY_FOR_GPU;
    info[0] = '\0';
    seed_random(j);
    if (kiln_devcheck_fatbin_len > 0)
        r = cuModuleLoadData(&j->mod, kiln_devcheck_fatbin);
    if (r != CUDA_SUCCESS)
        r = devcheck_compile(j, arch, cuda_include, info, len);
    const char *names[] = {"kiln_gen", "kiln_guard", "kiln_absmax", "kiln_compare", "kiln_worst",
                           "kiln_worst_values", "kiln_acc_init"};
    CUfunction *fns[] = {&j->gen, &j->guard, &j->absmax, &j->compare, &j->worst, &j->worst_values,
                         &j->acc_init};
    for (int i = 0; i < 7 && r == CUDA_SUCCESS; i++)
        r = cuModuleGetFunction(fns[i], j->mod, names[i]);
    int sms = 0;
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    j->grid = (unsigned)(sms > 0 ? sms : 32) * 8;
    if (r != CUDA_SUCCESS && !info[0])
        snprintf(info, len, "cannot load kiln's own device code: %s", cu_str(r));
    return r == CUDA_SUCCESS ? 0 : -1;
}

int kiln_dbuf_ensure(kiln_dbuf *b, size_t bytes, char *info, size_t len)
{
    if (b->cap >= bytes)
        return 0;
    if (b->p)
        cuMemFree(b->p);
    b->p = 0;
    b->cap = 0;
    CUresult r = cuMemAlloc(&b->p, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS) {
        snprintf(info, len, "cannot allocate %zu bytes on the device: %s", bytes, cu_str(r));
        return -1;
    }
    b->cap = bytes;
    return 0;
}

static size_t elem_bytes(uint32_t dtype)
{
    return dtype == KILN_JDT_I8 ? 1 : dtype == KILN_JDT_F16 || dtype == KILN_JDT_BF16 ? 2
         : dtype == KILN_JDT_F64 ? 8 : 4;
}

static size_t data_bytes(const kiln_wire_data *d)
{
    return (size_t)d->elems * elem_bytes(d->dtype);
}

/* Guard, data rounded up to the guard size, guard. */
static size_t padded(size_t bytes)
{
    return GUARD + (bytes + GUARD - 1) / GUARD * GUARD + GUARD;
}

/* Bytes of doubles one set needs for the reference: exact inputs and gold. */
static size_t ref_bytes_per_set(const kiln_call_req *rq)
{
    size_t b = 0;
    for (uint32_t a = 0; a < rq->nargs; a++)
        if (rq->dev.data[a].role)
            b += (size_t)rq->dev.data[a].elems * sizeof(double);
    return b;
}

int kiln_devcheck_alloc(kiln_devcheck *j, const kiln_call_req *rq, int need_gold, char *info, size_t len)
{
    const kiln_wire_device *dv = &rq->dev;
    size_t per = ref_bytes_per_set(rq);
    size_t fit = per ? KILN_DEVCHECK_REF_BYTES / per : dv->sets;
    j->chunk = fit < 1 ? 1 : fit > dv->sets ? dv->sets : (uint32_t)fit;
    for (uint32_t a = 0; a < rq->nargs; a++) {
        const kiln_wire_data *d = &dv->data[a];
        if (!d->role)
            continue;
        j->stride[a] = padded(data_bytes(d));
        if (kiln_dbuf_ensure(&j->data[a], j->shift + j->stride[a] * dv->sets, info, len) < 0)
            return KILN_ST_RESOURCE;
        kiln_dbuf *ref = d->role == 1 ? &j->exact[a] : &j->gold[a];
        size_t bytes = (size_t)j->chunk * d->elems * sizeof(double);
        if (need_gold && kiln_dbuf_ensure(ref, bytes, info, len) < 0)
            return KILN_ST_RESOURCE;
    }
    size_t accs = (size_t)dv->sets * KILN_DEVCHECK_ACC_STEP * sizeof(kiln_devcheck_acc);
    if (kiln_dbuf_ensure(&j->acc, accs, info, len) < 0 ||
        kiln_dbuf_ensure(&j->flags, (size_t)dv->sets * 3 * sizeof(uint32_t), info, len) < 0 ||
        kiln_dbuf_ensure(&j->slots, sizeof j->slot, info, len) < 0)
        return KILN_ST_RESOURCE;
    return KILN_ST_OK;
}

/* Slot 0 of arg's buffer (its leading guard). */
static CUdeviceptr slot0(const kiln_devcheck *j, uint32_t arg)
{
    return j->data[arg].p + j->shift;
}

CUdeviceptr kiln_devcheck_data(const kiln_devcheck *j, uint32_t set, uint32_t arg)
{
    return slot0(j, arg) + (size_t)j->slot[arg][set] * j->stride[arg] + GUARD;
}

/* slot[a][set0 ..] on the device. */
static kiln_u64 slots_of(const kiln_devcheck *j, uint32_t a, uint32_t set0)
{
    return j->slots.p + ((size_t)a * KILN_MAX_SETS + set0) * sizeof(uint32_t);
}

/* A fresh permutation of the sets' slots for every argument (Fisher-Yates). */
static CUresult draw_slots(kiln_devcheck *j, const kiln_call_req *rq, CUstream st)
{
    uint32_t sets = rq->dev.sets;
    for (uint32_t a = 0; a < KILN_WORKER_MAX_ARGS; a++) {
        for (uint32_t s = 0; s < sets; s++)
            j->slot[a][s] = s;
        for (uint32_t s = sets; s > 1; s--) {
            uint32_t k = (uint32_t)(next_random(j) % s), t = j->slot[a][s - 1];
            j->slot[a][s - 1] = j->slot[a][k];
            j->slot[a][k] = t;
        }
    }
    /* On kiln's stream, before the kernels that read it: a plain
     * cuMemcpyHtoD from pageable memory may return before its DMA lands,
     * and kiln's stream does not wait for the legacy stream, so a draw
     * could read the last call's slots (seen on the H200: 5 of 200 soak
     * jobs judged input-modified, honest baselines included). */
    return cuMemcpyHtoDAsync(j->slots.p, j->slot, sizeof j->slot, st);
}

CUdeviceptr kiln_devcheck_ref(const kiln_devcheck *j, const kiln_call_req *rq, uint32_t arg, uint32_t set)
{
    const kiln_dbuf *b = rq->dev.data[arg].role == 1 ? &j->exact[arg] : &j->gold[arg];
    return b->p + (size_t)(set % j->chunk) * rq->dev.data[arg].elems * sizeof(double);
}

/* Blocks per set for n elements of each of sets sets: the grid-stride
 * kernels fill the device with about j->grid blocks in all, however many
 * sets there are. Each block ends in reductions and atomics, so a block
 * per 256 elements of each of 64 small sets cost more than the elements
 * (on the H200, the comparison of 64 sets of 256 K elements took 0.66 ms,
 * of 16 sets of 1 M 0.34 ms). */
static unsigned blocks_for(const kiln_devcheck *j, uint64_t n, uint32_t sets)
{
    uint64_t b = (n + BLOCK - 1) / BLOCK, cap = j->grid / (sets ? sets : 1);
    cap = cap < 1 ? 1 : cap;
    return b < 1 ? 1 : b > cap ? (unsigned)cap : (unsigned)b;
}

/* One launch over n sets (blockIdx.y) and sides (blockIdx.z). */
static CUresult launch(const kiln_devcheck *j, CUfunction f, uint64_t elems, uint32_t sets,
                       uint32_t sides, CUstream st, void **args)
{
    return cuLaunchKernel(f, blocks_for(j, elems, sets * sides), sets, sides, BLOCK, 1, 1, 0, st, args, NULL);
}

/* Each buffer of each set draws from its own stream of the key. */
static uint32_t stream_of(uint32_t set, uint32_t arg)
{
    return set * KILN_WORKER_MAX_ARGS + arg;
}

static kiln_gen_spec gen_spec(const kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0,
                              uint32_t a)
{
    const kiln_wire_data *d = &rq->dev.data[a];
    kiln_gen_spec g = {.key0 = rq->dev.key[0], .key1 = rq->dev.key[1],
                       .stream = stream_of(set0, a), .stream_step = KILN_WORKER_MAX_ARGS,
                       .dtype = d->dtype, .dist = d->dist, .pattern = d->pattern, .a = d->a,
                       .b = d->b, .scale = d->scale, .offset = d->offset,
                       .share = d->share, .ignore = d->ignore,
                       .n = (kiln_i64)d->elems, .row_len = (kiln_i64)d->row_len,
                       .slots = slots_of(j, a, set0)};
    return g;
}

static CUdeviceptr flags_of(const kiln_devcheck *j, uint32_t set)
{
    return j->flags.p + (size_t)set * 3 * sizeof(uint32_t);
}

/* Lay (check 0) or check (check 1) both guards of arg's n sets from set0. */
static CUresult guards(kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0, uint32_t n,
                       uint32_t a, int check, CUstream st)
{
    CUdeviceptr base = slot0(j, a) + set0 * j->stride[a], f = flags_of(j, set0);
    kiln_u64 stride = j->stride[a];
    kiln_i64 guard = GUARD, bytes = (kiln_i64)data_bytes(&rq->dev.data[a]);
    kiln_u64 k0 = rq->dev.key[0], k1 = rq->dev.key[1];
    unsigned stream = stream_of(set0, a), step = KILN_WORKER_MAX_ARGS, bit = 1u << a;
    void *args[] = {&base, &stride, &guard, &bytes, &k0, &k1, &stream, &step, &f, &bit, &check};
    /* The longer side is at most GUARD + the rounding: GUARD * 2 bytes. */
    return launch(j, j->guard, 2 * GUARD / 16, n, 2, st, args);
}

/* dt's poison bits repeated over every set of an output (guards included;
 * they are laid afterwards): a NaN no arithmetic is likely to produce. */
static CUresult poison(CUdeviceptr p, size_t bytes, uint32_t dtype, CUstream st)
{
    switch (dtype) {
    case KILN_JDT_F16: return cuMemsetD16Async(p, 0x7D5A, bytes / 2, st);
    case KILN_JDT_BF16: return cuMemsetD16Async(p, 0x7FA5, bytes / 2, st);
    case KILN_JDT_F32: return cuMemsetD32Async(p, 0x7FA5A5A5u, bytes / 4, st);
    default: return cuMemsetD8Async(p, 0xA5, bytes, st);
    }
}

CUresult kiln_devcheck_stage(kiln_devcheck *j, const kiln_call_req *rq, CUstream st)
{
    uint32_t sets = rq->dev.sets;
    CUresult r = draw_slots(j, rq, st);
    if (r == CUDA_SUCCESS)
        r = cuMemsetD32Async(j->flags.p, 0, (size_t)sets * 3, st);
    for (uint32_t a = 0; a < rq->nargs && r == CUDA_SUCCESS; a++) {
        const kiln_wire_data *d = &rq->dev.data[a];
        if (!d->role)
            continue;
        if (d->role == 1) {
            kiln_gen_spec g = gen_spec(j, rq, 0, a);
            CUdeviceptr data = slot0(j, a) + GUARD, none = 0;
            kiln_u64 stride = j->stride[a];
            unsigned bit = 0;
            int check = 0;
            void *args[] = {&g, &data, &stride, &none, &none, &bit, &check};
            r = launch(j, j->gen, d->elems, sets, 1, st, args);
        } else {
            r = poison(slot0(j, a), j->stride[a] * sets, d->dtype, st);
        }
        if (r == CUDA_SUCCESS)
            r = guards(j, rq, 0, sets, a, 0, st);
    }
    return r;
}

CUresult kiln_devcheck_inputs(kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0, uint32_t n,
                           CUstream st)
{
    CUdeviceptr acc = j->acc.p + (size_t)set0 * KILN_DEVCHECK_ACC_STEP * sizeof(kiln_devcheck_acc);
    unsigned naccs = n * KILN_DEVCHECK_ACC_STEP;
    void *init[] = {&acc, &naccs};
    CUresult r = cuLaunchKernel(j->acc_init, 1, 1, 1, BLOCK, 1, 1, 0, st, init, NULL);
    CUdeviceptr flag = flags_of(j, set0);
    for (uint32_t a = 0; a < rq->nargs && r == CUDA_SUCCESS; a++) {
        const kiln_wire_data *d = &rq->dev.data[a];
        if (!d->role)
            continue;
        r = guards(j, rq, set0, n, a, 1, st);
        if (r != CUDA_SUCCESS)
            break;
        if (d->role == 1) {
            kiln_gen_spec g = gen_spec(j, rq, set0, a);
            CUdeviceptr data = slot0(j, a) + GUARD;
            CUdeviceptr exact = rq->dev.check ? j->exact[a].p : 0;
            kiln_u64 stride = j->stride[a];
            unsigned bit = 1u << a;
            int check = 1;
            void *args[] = {&g, &data, &stride, &exact, &flag, &bit, &check};
            r = launch(j, j->gen, d->elems, n, 1, st, args);
        } else if (rq->dev.check) {   /* gold the reference does not write stays a NaN pattern */
            r = cuMemsetD8Async(j->gold[a].p, 0xff, (size_t)n * d->elems * sizeof(double), st);
        }
    }
    return r;
}

static kiln_cmp_spec cmp_spec(const kiln_devcheck *j, const kiln_call_req *rq, uint32_t a,
                              uint32_t set0)
{
    kiln_cmp_spec c = {.dtype = rq->dev.data[a].dtype, .n = (kiln_i64)rq->dev.data[a].elems,
                       .budget_ulps = rq->dev.budget_ulps, .floor_rel = rq->dev.floor_rel,
                       .floor_abs = rq->dev.floor_abs,
                       .slots = slots_of(j, a, set0)};
    return c;
}

CUresult kiln_devcheck_compare(kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0, uint32_t n,
                            CUstream st)
{
    CUresult r = CUDA_SUCCESS;
    for (uint32_t a = 0; a < rq->nargs && r == CUDA_SUCCESS; a++) {
        if (rq->dev.data[a].role != 2)
            continue;
        CUdeviceptr acc = j->acc.p + ((size_t)set0 * KILN_DEVCHECK_ACC_STEP + a) * sizeof(kiln_devcheck_acc);
        CUdeviceptr out = slot0(j, a) + GUARD, gold = j->gold[a].p;
        kiln_u64 stride = j->stride[a];
        kiln_cmp_spec c = cmp_spec(j, rq, a, set0);
        kiln_i64 elems = c.n;
        void *am[] = {&gold, &elems, &acc};
        void *cm[] = {&c, &out, &stride, &gold, &acc};
        r = launch(j, j->absmax, (uint64_t)elems, n, 1, st, am);
        if (r == CUDA_SUCCESS)
            r = launch(j, j->compare, (uint64_t)elems, n, 1, st, cm);
        if (r == CUDA_SUCCESS)
            r = launch(j, j->worst, (uint64_t)elems, n, 1, st, cm);
        if (r == CUDA_SUCCESS)
            r = cuLaunchKernel(j->worst_values, 1, n, 1, 1, 1, 1, 0, st, cm, NULL);
    }
    return r;
}

static double as_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Fold one set's accumulator into the call's check of that output. */
static void merge(kiln_wire_check *c, const kiln_devcheck_acc *a, uint32_t set)
{
    double maxe = as_double(a->max_err_bits);
    double rel = a->gold2 > 0 ? sqrt(a->diff2) / sqrt(a->gold2) : a->diff2 > 0 ? INFINITY : 0;
    if (a->nonfinite)
        rel = INFINITY;
    int hard = a->first_hard != ~(uint64_t)0, had_hard = c->unwritten || c->nonfinite;
    if ((hard && !had_hard) || (!had_hard && !hard && (set == 0 || maxe > c->max_err_ulps))) {
        c->worst_index = hard ? a->first_hard : a->worst_index;
        c->worst_set = set;
        c->worst_cand = a->worst_cand;
        c->worst_gold = a->worst_gold;
    }
    c->unwritten += a->unwritten;
    c->nonfinite += a->nonfinite;
    c->over_budget += a->over_budget;
    c->max_err_ulps = set == 0 || maxe > c->max_err_ulps ? maxe : c->max_err_ulps;
    c->rel_l2 = set == 0 || rel > c->rel_l2 ? rel : c->rel_l2;
    c->hash = c->hash * 0x100000001b3ull ^ a->hash;
}

int kiln_devcheck_collect(kiln_devcheck *j, const kiln_call_req *rq, kiln_call_resp *rs, char *info,
                       size_t len)
{
    uint32_t sets = rq->dev.sets;
    size_t nacc = (size_t)sets * KILN_DEVCHECK_ACC_STEP;
    kiln_devcheck_acc *acc = calloc(nacc, sizeof *acc);
    uint32_t flags[KILN_MAX_SETS * 3];
    CUresult r = acc ? cuMemcpyDtoH(flags, j->flags.p, (size_t)sets * 3 * sizeof(uint32_t))
                     : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && rq->dev.check)
        r = cuMemcpyDtoH(acc, j->acc.p, nacc * sizeof *acc);
    if (r != CUDA_SUCCESS) {
        free(acc);
        return snprintf(info, len, "cannot read the checks back: %s", cu_str(r)), -1;
    }
    memset(rs->check, 0, sizeof rs->check);
    for (uint32_t s = 0; s < sets; s++) {
        rs->input_changed |= flags[3 * s];
        rs->guard_before |= flags[3 * s + 1];
        rs->guard_after |= flags[3 * s + 2];
        for (uint32_t a = 0; rq->dev.check && a < rq->nargs; a++)
            if (rq->dev.data[a].role == 2)
                merge(&rs->check[a], &acc[(size_t)s * KILN_DEVCHECK_ACC_STEP + a], s);
    }
    free(acc);
    return 0;
}

void kiln_devcheck_scrub(kiln_devcheck *j, const kiln_call_req *rq, CUstream st)
{
    for (uint32_t a = 0; a < rq->nargs; a++) {
        const kiln_wire_data *d = &rq->dev.data[a];
        kiln_dbuf *b = d->role == 1 ? &j->exact[a] : d->role == 2 ? &j->gold[a] : NULL;
        size_t used = (size_t)j->chunk * d->elems * sizeof(double);
        if (b && b->p)
            cuMemsetD8Async(b->p, 0, used < b->cap ? used : b->cap, st);
    }
    if (j->acc.p)
        cuMemsetD8Async(j->acc.p, 0, j->acc.cap, st);
    cuStreamSynchronize(st);
}
