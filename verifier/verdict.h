/* verdict.h - what a verification concludes, and its JSON form
 * (docs/verdict.md). Hidden shapes carry ids (h1, h2 ...) but never dims. */
#ifndef KILN_VERDICT_H
#define KILN_VERDICT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kiln_error.h"

#include "task.h"

#define KILN_VERIFIER_VERSION "0.1.0"
#define KILN_MAX_RESULTS 96
#define KILN_MAX_FLAGS 8
#define KILN_VERDICT_MAX_REQUIRE 8

typedef struct kiln_time_stats {
    double median_ns, p20_ns, p80_ns;
    int count;
} kiln_time_stats;

/* One launch's kernel as the driver sees it at a shape's launch
 * configuration (CUDA): a profiler's static view. */
#define KILN_MAX_PROFILE 4
typedef struct kiln_kernel_profile {
    char kernel[64];
    int regs, local_bytes, static_smem, dynamic_smem, threads, blocks_per_sm, cluster;
    double occupancy;           /* resident threads per SM over the SM's limit */
} kiln_kernel_profile;

typedef struct kiln_shape_result {
    char id[16];                /* v1.. visible, h1.. hidden */
    int visible;
    kiln_shape shape;           /* reported only when visible */
    double max_err_ulps, budget_ulps, rel_l2;
    int checked;                /* correctness measured */
    char code[32];              /* the failure code at this shape, "" if it passed */
    int timed;
    kiln_time_stats cand, base; /* the time that counts, per call (docs/verdict.md):
                                   CPU, the CPU time the kernel charged less the
                                   overhead; CUDA, what kiln's worker measured */
    double cand_reported_ns, base_reported_ns;   /* CPU: median the worker reported */
    double overhead_ns;              /* CPU: taken off each call's charged CPU */
    double cand_rt_ns, base_rt_ns;   /* median round trip seen by the verifier */
    double cand_cpu_ns, base_cpu_ns; /* median CPU time the kernel charged per call */
    double cand_between_ns;          /* CPU: charged to the candidate's worker between
                                        its calls, per pair (-1: unknown) */
    /* CUDA: reported = CUDA events; also the CUPTI kernel span and the wall
     * clock with a device synchronize (medians per call) */
    double cand_cupti_ns, base_cupti_ns, cand_wall_ns, base_wall_ns;
    /* CUDA device-resident: cand/base are CUPTI's summed kernel durations
     * per run of the launches, the figure; events and wall cross-check it.
     * Each timed call ran the launches over `sets` input sets. */
    double cand_events_ns, base_events_ns;
    double cand_check_ns, base_check_ns;   /* kiln's checks of a whole timed call */
    double cand_draw_ns, cand_setup_ns;    /* the candidate's calls: drawing; graph, flush */
    int sets, pairs;
    double speedup;             /* base median / cand median (device-resident:
                                   the geometric mean of the paired ratios) */
    double speedup_lo, speedup_hi;   /* its 95% interval (0 when not measured) */
    double bytes, flops;
    double floor_ns, roofline_fraction;
    int nprofile;               /* CUDA: the candidate's launches at this shape */
    kiln_kernel_profile profile[KILN_MAX_PROFILE];
} kiln_shape_result;

typedef struct kiln_verdict {
    char status[12];            /* pass fail suspect error */
    char stage[16];
    char code[32];
    char reason[640];
    char feedback[1536];
    char task[KILN_NAME_MAX], backend[8], dtype[8], group[KILN_NAME_MAX];
    int ndims;                  /* the task's dims, so a verdict read back names them */
    char dims[KILN_MAX_DIMS][KILN_NAME_MAX];
    int nresults;
    kiln_shape_result results[KILN_MAX_RESULTS];   /* the visible shapes */
    /* The hidden stage, as one outcome: how many hidden shapes it had, whether
     * it ran, and its first failure's code ("" passed). Nothing per shape:
     * which one failed would tell a bit per shape (docs/sandbox.md). */
    int nhidden, hidden_ran;
    char hidden_code[32];
    double geomean_speedup, min_speedup, median_roofline;
    int nflags;
    char flags[KILN_MAX_FLAGS][160];
    char sandbox[256];
    char cpu_model[128], hostname[64], kernel[96];
    char cpu_isa[192], cpu_caches[96], compiler[160];   /* CPU: machine.h */
    double bandwidth_gbps;      /* at the largest timed shape's size */
    double peak_tflops;         /* CUDA: the device's dense peak for the dtype, 0 unknown */
    double worker_user_s, worker_sys_s, worker_wall_s, reported_s;
    long worker_maxrss_kb;
    char source_sha256[65];
    char verifier_version[16];  /* "" while verifying: this kiln's (KILN_VERIFIER_VERSION);
                                   a decoded verdict keeps the one that reached it */
    char baseline_sha256[65];   /* what the candidate was timed against */
    int baseline_is_task;       /* 1: the task's own baseline */
    double seconds;
    /* Where the time went: building (CUDA: worker start-up and NVRTC, which
     * happen together), the correctness stages, timing, plausibility. */
    double compile_s, correctness_s, timing_s, plausibility_s;
    int calls;
    int trust_level_cpu;        /* 1: candidate shares the worker's address space */
    char gpu[256];              /* CUDA: "name=...|cc=...|driver=...|pageable=0|..." */
    /* Who judged it (kilnd fills these; "" in process): the daemon's host,
     * its endpoint (tcp://HOST:PORT or its socket path) and the lane. */
    char verifier_host[64], verifier_endpoint[288], lane[32];
    /* The candidate's preconditions ("cols % 8 == 0", precond.h) and the
     * visible shapes they left out (id and dims); hidden shapes are never
     * named, since all of them were drawn to satisfy the preconditions. */
    int nrequire;
    char require[KILN_VERDICT_MAX_REQUIRE][64];
    int nleft_out;
    char left_out_id[KILN_MAX_SHAPES][16];
    kiln_shape left_out[KILN_MAX_SHAPES];
} kiln_verdict;

/* The one encoder: the verdict as JSON text (free with free()), or as a
 * cJSON tree (free with cJSON_Delete). t names the dims; NULL: the
 * verdict's own (v->dims). */
char *kiln_verdict_json(const kiln_verdict *v, const kiln_task *t, int pretty);
cJSON *kiln_verdict_to_cjson(const kiln_verdict *v, const kiln_task *t);
/* The one decoder (verdict_parse.c): the JSON that kiln_verdict_json
 * wrote, back into v. Hidden shapes come back as the JSON has them: id,
 * visibility and code. -1 with err naming what is malformed. */
int kiln_verdict_parse(const char *json, kiln_verdict *v, kiln_error *err);
int kiln_verdict_from_cjson(const cJSON *root, kiln_verdict *v, kiln_error *err);
/* Every text field of v made safe to show (safe_text.h) in place: kiln_verify
 * ends with it and the decoder applies it, and the encoder cleans what it
 * writes too, so no verdict carries a candidate's raw bytes (escape
 * sequences, invalid UTF-8) to a terminal, JSON, the database or a prompt. */
void kiln_verdict_clean(kiln_verdict *v);
/* The worker's "key=value|key=value" device description as a JSON object
 * (numbers as numbers, but cc as text). */
cJSON *kiln_verdict_gpu_json(const char *desc);
/* The value of key in the worker's "key=value|..." device description
 * (v->gpu), or "" when it has none. */
void kiln_verdict_gpu_field(const char *desc, const char *key, char *buf, size_t len);
/* Half the 20-80 spread of a timing relative to its median (0 without one). */
double kiln_time_half_spread(const kiln_time_stats *t);
/* "rows=32 cols=1024" for a visible shape, "hidden" for a hidden one. */
void kiln_verdict_dims(const kiln_verdict *v, const kiln_shape_result *r, char *buf, size_t len);
void kiln_verdict_flag(kiln_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
