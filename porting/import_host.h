/* import_host.h - one host function as `kiln import` reads it: its
 * parameters and locals (with their initializers and whether anything
 * changes them later), its `kernel<<<...>>>(...)` launches and the control
 * statements around them, and what its other statements are (error checks
 * and attributes kiln does itself, host work the manifest cannot express,
 * calls of other launching functions), and the framework's idioms around
 * them: a launch inside a type dispatch (AT_DISPATCH_*(..., [&] { ... }))
 * is read from its lambda, TORCH_CHECK and assert lines are kept as checks
 * for the caller to translate, the CUDA stream and device guard are noted. */
#ifndef KILN_IMPORT_HOST_H
#define KILN_IMPORT_HOST_H

#include "import_lex.h"
#include "import_scan.h"

#define IMP_MAX_ARGS 24

typedef struct imp_var {
    int name;                  /* its name token */
    int type_from, type_to;    /* its type's tokens */
    imp_cls cls;
    char elem[32];             /* a pointer's element type */
    int is_param;
    int visible_from;          /* tokens where the name means this variable */
    int scope_end;
    int stmt_from, stmt_to;    /* its declaration, for the account */
    int init_from, init_to;    /* a scalar's initializer, -1 when none */
    int ncomp;                 /* a dim3's constructor arguments (0: dim3 x;) */
    int comp_from[3], comp_to[3];
    int changed;               /* the first later token that assigns it, or takes
                                  its address; -1 when none */
} imp_var;

#define IMP_MAX_IFS 6

typedef struct imp_launch {
    int from, to;              /* the statement */
    int kernel;                /* the kernel's name token */
    int qual;                  /* its first token: a qualifier (vllm::) or the name */
    int targ_from, targ_to;    /* inside kernel<...>, -1 when none */
    int ncfg, cfg_from[4], cfg_to[4];
    int nargs, arg_from[IMP_MAX_ARGS], arg_to[IMP_MAX_ARGS];
    int ctl;                   /* the for/while/do/switch around it, -1 */
    int nifs;                  /* the ifs around it, outermost first: their 'if' */
    int ifs[IMP_MAX_IFS], if_else[IMP_MAX_IFS];   /* ... and whether in the else */
    int dispatch;              /* the AT_/VLLM_DISPATCH_ macro around it, -1 */
} imp_launch;

/* TORCH_CHECK(cond, ...), assert(cond) and the like: a host check. */
typedef struct imp_check {
    int tok;                   /* the macro's name */
    int from, to;              /* its condition */
} imp_check;

typedef struct imp_host {
    const imp_src *s;
    const imp_file *f;
    const imp_fn *fn;
    const char *file;
    imp_var *var;
    int nvar, capvar;
    imp_launch *launch;
    int nlaunch, caplaunch;
    imp_check *check;
    int ncheck, capcheck;
    const imp_lines *dispatch; /* macros that are type dispatches (set before reading;
                                  AT_DISPATCH_* and VLLM_DISPATCH_* always are) */
    imp_lines notes;           /* "line N: ..." for the account */
    imp_lines problems;        /* "FILE:LINE: cannot translate ...: reason" */
} imp_host;

/* Read host function fn of f; file names it in problems. -1 with err only
 * when out of memory. h->dispatch may be set first (imp_host_read keeps it). */
int imp_host_read(imp_host *h, const imp_src *s, const imp_file *f, const imp_fn *fn,
                  const char *file, kiln_error *err);
void imp_host_free(imp_host *h);

/* The variable named by token tok (of h->s) where it is used, or NULL. */
const imp_var *imp_host_var(const imp_host *h, int tok);

/* A function's parameters: for each, the type's tokens and its name token
 * (-1 when unnamed). Returns their number, or -1 when more than cap. */
int imp_params(const imp_src *s, int open, int *type_from, int *type_to, int *name, int cap);

#endif
