/* import_map.h - the translation state `kiln import` builds for one host
 * function: which task arg each parameter stands for, the lets its locals
 * become, each launch as manifest fields, the template instances to copy
 * out, and the report. import_map.c maps parameters and names,
 * import_launch.c translates launches; import.c drives them and writes the
 * candidate. */
#ifndef KILN_IMPORT_MAP_H
#define KILN_IMPORT_MAP_H

#include "import.h"
#include "import_expr.h"
#include "import_host.h"
#include "import_scan.h"
#include "manifest.h"

#define IMP_MAX_INSTANCES 8

typedef struct imp_let {
    char name[KILN_NAME_MAX];
    char expr[KILN_EXPR_MAX];
    int var, cst;                 /* the host variable or file constant it is, or -1 */
    unsigned long long uses;      /* the parameters its value draws on (imp_xval) */
} imp_let;

typedef enum imp_mkind {
    IMP_M_NONE,                   /* no counterpart (yet) */
    IMP_M_ARG,                    /* a task arg: a buffer, a dim or a scalar */
    IMP_M_INPLACE,                /* read as task input arg, written as output out:
                                     kiln copies arg into out and passes out */
    IMP_M_SCRATCH,                /* scratch buffer c->scratch[scratch] */
    IMP_M_CONST,                  /* the constant text (an integer, or a float literal) */
    IMP_M_KNOB,                   /* the knob or #define constant named text */
} imp_mkind;

typedef struct imp_pmap {
    imp_mkind kind;
    int arg;                      /* IMP_M_ARG, IMP_M_INPLACE: the task arg; else -1 */
    int out;                      /* IMP_M_INPLACE: the output written */
    int scratch;                  /* IMP_M_SCRATCH */
    char text[64];                /* IMP_M_CONST, IMP_M_KNOB */
    int is_float;                 /* IMP_M_CONST: a float literal */
    int role;                     /* a tensor: 1 the kernels read it (const), 2 write it */
    const char *how;              /* "name", "--map", "const-ness and position", ... */
} imp_pmap;

typedef struct imp_tlaunch {
    char kernel[KILN_KERNEL_NAME_MAX];
    char when[KILN_EXPR_MAX];     /* "" = always */
    int ngrid, nblock;
    char grid[3][KILN_EXPR_MAX], block[3][KILN_EXPR_MAX], smem[KILN_EXPR_MAX];
    int nargs;
    char args[IMP_MAX_ARGS][KILN_EXPR_MAX];   /* a task arg, scratch, or "i64(cols)" */
} imp_tlaunch;

typedef struct imp_inst {         /* kernel<args>: copied out as an extern "C" kernel, or
                                     named by an NVRTC name expression */
    int fn;                       /* the template's index in the file's functions */
    char name[KILN_KERNEL_NAME_MAX];
    char label[160];              /* "softmax_kernel<4>" */
    int nargs;
    char args[IMP_MAX_TPARAMS][64];
    int by_name;                  /* overloaded or SFINAE'd: named, not copied */
} imp_inst;

typedef struct imp_scratch {      /* --map P=scratch[:BYTES] */
    char name[KILN_NAME_MAX];
    char bytes[KILN_EXPR_MAX];
} imp_scratch;

typedef struct imp_knob {         /* --map P=NAME[:V1,V2,...]: a knob import writes */
    char name[KILN_NAME_MAX];
    int nvals;
    long long vals[KILN_KNOB_VALUES];   /* the first is its value */
} imp_knob;

#define IMP_MAX_KNOBS 4
#define IMP_MAX_COPIES 4

typedef struct imp_copy {         /* an in-place parameter: task input in into output out */
    int in, out;
} imp_copy;

struct imp_units;                 /* import_include.h: the project headers carried */

typedef struct imp_ctx {
    const imp_src *s;
    const imp_file *f;
    const kiln_task *t;
    const kiln_import_opts *o;
    const imp_fn *host;
    imp_host h;
    imp_pmap *pmap;               /* one per h.var */
    imp_let lets[KILN_MANIFEST_MAX_LETS];
    int nlets;
    imp_tlaunch launch[KILN_WORKER_MAX_LAUNCHES];
    int nlaunch;
    imp_inst inst[IMP_MAX_INSTANCES];
    int ninst;
    int *externc;                 /* per file function: add extern "C" */
    int depth;                    /* helpers being inlined */
    char stream[128];             /* the first launch's stream, as written */
    imp_scratch scratch[KILN_WORKER_MAX_SCRATCH];
    int nscratch;
    imp_knob knob[IMP_MAX_KNOBS];
    int nknob;
    imp_copy copy[IMP_MAX_COPIES];
    int ncopy;
    char require[KILN_PRECOND_MAX][KILN_EXPR_MAX];
    int nrequire;
    const char *dtype_name;       /* "scalar_t" while a dispatched launch is translated */
    int inline_locals;            /* translate locals as their values, not lets (checks) */
    int uses_kiln_t;              /* the candidate names kiln_t: it includes kiln_cuda.h */
    int notes_written;            /* the candidate's notes are in (written once more with
                                     TODOs, they are not added again) */
    const struct imp_units *units;   /* headers: their helpers and macros are seen */
    imp_lines problems, account, notes;
    char dtype_only[16];
} imp_ctx;

/* Shared by import_map.c and import_launch.c: the line of a token; a
 * problem line "FILE:LINE: cannot translate WHAT: WHY"; a why; the
 * translation of [from, to) (host: the tokens are the host function's, so
 * its locals and parameters are seen); -1 with why when v is changed
 * before token use; the value of a constant manifest expression (its lets
 * and #define constants evaluated), -1 when it is not constant. */
int imp_line(const imp_ctx *c, int tok);
void imp_problem(imp_ctx *c, int tok, const char *what, const char *why);
int imp_whyf(imp_why *why, int tok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int imp_xlate(imp_ctx *c, int from, int to, int host, imp_xval *out, imp_why *why);
int imp_changed(const imp_ctx *c, const imp_var *v, int use, imp_why *why);
int imp_const_value(const imp_ctx *c, const char *expr, long long *out);

/* A #define as found: in the file or one of its headers. */
typedef struct imp_def {
    const imp_pp *pp;
    const imp_src *s;
    const imp_file *f;
    const char *file;             /* its name, for messages */
} imp_def;

/* The #define of n in effect: the file's, else the first header's that
 * has one. 0 when none. */
int imp_find_define(const imp_ctx *c, const char *n, imp_def *out);

/* Map the host function's parameters to task args, scratch, constants and
 * knobs (--map first, import_maps.c); -1 with err for a --map that names
 * nothing or what its parameter cannot be. */
int imp_map_params(imp_ctx *c, kiln_error *err);
/* Its two halves around imp_apply_maps (import_maps.c): the maps' table
 * made and the tensors' roles found; then every parameter no --map named,
 * by name, by a similar name, then by position, and the account. */
int imp_map_begin(imp_ctx *c, kiln_error *err);
int imp_map_rest(imp_ctx *c, int *used);
/* Can a parameter of class cls stand for a task arg of kind? */
int imp_fits(imp_cls cls, kiln_arg_kind kind);
/* --map PARAM=TARGET into c->pmap (import_maps.c); -1 with err. */
int imp_apply_maps(imp_ctx *c, int *used, kiln_error *err);
/* The shape of task arg a, element k, as manifest text ("cols", "2 * half"). */
void imp_shape_dim(const imp_ctx *c, int a, int k, char *out, size_t cap);
/* The element count of task arg a as manifest text ("rows * cols"). */
void imp_elems(const imp_ctx *c, int a, char *out, size_t cap);
/* Strip casts and parentheses around [*from, *to). */
void imp_strip_casts(const imp_src *s, int *from, int *to);
/* The host variable a kernel argument's buffer comes from: a pointer or
 * tensor parameter, through casts, data_ptr<T>() and locals; NULL. */
const imp_var *imp_buffer_source(const imp_ctx *c, int from, int to);
/* import_launch.c: translate launch i of c->h into c->launch[c->nlaunch++]; what cannot be
 * is a problem (and, with force, a "TODO: ..." field). -1 when out of room
 * for launches or instances. */
int imp_map_launch(imp_ctx *c, int i);
/* Write instance k's extern "C" kernel text into a malloc'd string. */
char *imp_instance_text(const imp_ctx *c, int k);

#endif
