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
} imp_let;

typedef struct imp_pmap {
    int arg;                      /* the task arg a parameter stands for, or -1 */
    const char *how;              /* "name", "--map", "const-ness and position", ... */
} imp_pmap;

typedef struct imp_tlaunch {
    char kernel[KILN_KERNEL_NAME_MAX];
    int ngrid, nblock;
    char grid[3][KILN_EXPR_MAX], block[3][KILN_EXPR_MAX], smem[KILN_EXPR_MAX];
    int nargs;
    char args[IMP_MAX_ARGS][KILN_NAME_MAX];
} imp_tlaunch;

typedef struct imp_inst {         /* kernel<args> copied out as an extern "C" kernel */
    int fn;                       /* the template's index in the file's functions */
    char name[KILN_KERNEL_NAME_MAX];
    char label[160];              /* "softmax_kernel<4>" */
    int nargs;
    char args[IMP_MAX_TPARAMS][64];
} imp_inst;

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

/* Map the host function's parameters to task args; -1 with err for a
 * --map that names no parameter or arg. */
int imp_map_params(imp_ctx *c, kiln_error *err);
/* import_launch.c: translate launch i of c->h into c->launch[c->nlaunch++]; what cannot be
 * is a problem (and, with force, a "TODO: ..." field). -1 when out of room
 * for launches or instances. */
int imp_map_launch(imp_ctx *c, int i);
/* Write instance k's extern "C" kernel text into a malloc'd string. */
char *imp_instance_text(const imp_ctx *c, int k);

#endif
