/* export.h - what cmd_export.c (the choice, the CPU files, decisions.json)
 * and export_cuda.c (the CUDA files) share. */
#ifndef KILN_EXPORT_H
#define KILN_EXPORT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "keep_rule.h"
#include "kiln_error.h"
#include "precond.h"
#include "task.h"
#include "verdict.h"

typedef struct export_opts {
    const char *task, *out, *backend, *dtype, *workspace;
    int force;
    int json;                   /* --json: the summary as one JSON object */
} export_opts;

/* One kept candidate's verdicts against the task's baseline: its record
 * and (since pooling) its re-record, each from a fresh worker. */
typedef struct ex_meas {
    char run[32], commit[41], job[32], rejob[32];
    int n, kernel;              /* kernel: index into ex.k */
    double date;
    char *hypothesis;
    kiln_verdict *verdict;      /* decoded once, when the record is loaded */
    kiln_verdict *reverdict;    /* the re-record, NULL: none (a run from before pooling) */
} ex_meas;

/* A distinct source (kept candidates of several runs can be the same). */
typedef struct ex_kernel {
    char sha[80], name[KILN_NAME_MAX + 32];   /* name "": not exported */
    char *source;
    int first;                  /* the measurement that brought it */
    double geomean;
    int nshapes;
    kiln_preconds pre;          /* what it requires (precond.h); n 0: every shape */
} ex_kernel;

/* A visible shape (dims shared by several groups are one entry). */
typedef struct ex_choice {
    kiln_shape shape;
    char groups[160], ids[64];
    int winner;                 /* measurement index; -1: never measured */
} ex_choice;

typedef struct ex {
    const export_opts *o;
    int cuda;                   /* --backend cuda */
    kiln_task *task;
    kiln_dtype dt;
    ex_meas *m;
    int nm;
    ex_kernel *k;
    int nk;
    ex_choice c[KILN_MAX_GROUPS * KILN_MAX_SHAPES];
    int nc;
    int fallback;               /* kernel index: the best geomean that requires nothing
                                   (the task's baseline when every kept kernel requires) */
    int best;                   /* kernel index: the best geomean; when it is not the
                                   fallback, other dims try it where its preconditions hold */
    char date[32];              /* the files' date: SOURCE_DATE_EPOCH's where that holds
                                   seconds since 1970 (the reproducible-builds convention:
                                   a workspace exports the same bytes), else now */
} ex;

/* cmd_export.c */
FILE *kiln_ex_open(const ex *x, const char *name, char *path, size_t len, kiln_error *err);
int kiln_ex_close(FILE *f, const char *path, kiln_error *err);

/* export_shapes.c: the verdict's timed visible shape with these dims (or
 * NULL), the speedup measured there, and "rows == 1 && cols == 1024" over
 * the dims passed as arguments (returns the number of terms). */
const kiln_shape_result *kiln_ex_measured_at(const ex *x, const kiln_verdict *v,
                                             const kiln_shape *sh);
/* The speedup of measurement mi's kernel at sh: the pool (verifier/measure/pooled.h)
 * of every record and re-record of that kernel measured there (0: none);
 * *n, when given, gets how many were pooled. Confirmed means at least two:
 * a single record is never a confirmed figure. */
double kiln_ex_pooled_at(const ex *x, int mi, const kiln_shape *sh, kiln_interval *iv, int *n);
double kiln_ex_speedup_at(const ex *x, int mi, const kiln_shape *sh);
int kiln_ex_confirmed_at(const ex *x, int mi, const kiln_shape *sh);
int kiln_ex_condition(const ex *x, const kiln_shape *sh, char *buf, size_t len);
/* A kept source's preconditions (a CUDA manifest's "require", a C require
 * block), and them as a C condition over the dispatch's dim arguments
 * ("cols % 8 == 0"); -1 when a precondition's dim is not an argument. */
int kiln_ex_preconds(const ex *x, const char *source, kiln_preconds *pre, kiln_error *err);
int kiln_ex_precond_c(const ex *x, const kiln_preconds *pre, char *buf, size_t len,
                      kiln_error *err);

/* export_cuda.c: "kiln_rmsnorm_bf16" (the dispatch; files start with it). */
void kiln_ex_cuda_base(const ex *x, char *buf, size_t len);
/* The dispatch's prototype, without the trailing ';'. */
void kiln_ex_cuda_signature(const ex *x, char *buf, size_t len);
/* Every file of a CUDA export but decisions.json, rendered in memory (so
 * that nothing in DIR changes when a manifest cannot be translated): each
 * exported variant's .cu, the .cuh and kiln_cuda.h. */
typedef struct ex_file {
    char name[KILN_NAME_MAX + 48];
    char *text;
    size_t len;
} ex_file;
int kiln_ex_cuda_render(const ex *x, ex_file **files, int *n, kiln_error *err);
void kiln_ex_files_free(ex_file *files, int n);
/* decisions.json's entry of an exported variant gets its file, namespace,
 * kernels (as in the manifest and as exported) and knobs. */
void kiln_ex_cuda_kernel_json(const ex *x, const ex_kernel *k, cJSON *o);

#endif
