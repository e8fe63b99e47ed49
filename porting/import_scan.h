/* import_scan.h - the file-scope items of a CUDA source for `kiln import`:
 * kernels, device and host functions (templates too), preprocessor lines
 * and integer constants, found by walking tokens through namespaces and
 * extern "C" blocks. Also the type classes that parameters and locals
 * are matched by. */
#ifndef KILN_IMPORT_SCAN_H
#define KILN_IMPORT_SCAN_H

#include "import_lex.h"

typedef enum imp_fkind {
    IMP_F_KERNEL,    /* __global__ */
    IMP_F_DEVICE,    /* __device__, __host__ __device__ */
    IMP_F_HOST,      /* neither: removed from the candidate */
} imp_fkind;

#define IMP_MAX_TPARAMS 8

typedef struct imp_fn {
    imp_fkind kind;
    int first;               /* its first token: 'template' or the declaration */
    int decl;                /* the first token after template<...> */
    int tpl_open, tpl_close; /* '<' and '>' of template<...>, -1 when none */
    int ntparams;            /* template parameters: their name tokens */
    int tparam[IMP_MAX_TPARAMS];
    int tdefault[IMP_MAX_TPARAMS];   /* first token of the default, -1 */
    int tdefault_end[IMP_MAX_TPARAMS];
    int name;                /* the function's name */
    int params;              /* '(' of its parameter list */
    int body;                /* '{' of its body, -1 for a declaration */
    int last;                /* its last token: '}' or ';' */
    int extern_c;            /* written extern "C" ... (or inside extern "C" { }) */
    int extern_c_direct;     /* the declaration itself starts extern "C" */
} imp_fn;

typedef struct imp_pp {
    int tok;
    int include, system;     /* #include <...> (system) or "..." */
    char header[128];
    int define, undef, function_like, conditional;
    int pragma_once;
    int depth;               /* the #if blocks open around it (not counting its own) */
    char name[64];
    size_t params_at, params_len;    /* function-like: inside the parentheses */
    size_t body_at, body_len;        /* the replacement text */
} imp_pp;

typedef struct imp_const {   /* [static] const|constexpr INTEGER-TYPE NAME = LITERAL; */
    int name;
    long long value;
} imp_const;

typedef struct imp_gvar {   /* a host variable at file scope: no __device__, const */
    int first, last;         /* its declaration, through the ';' */
    int name;
} imp_gvar;

typedef struct imp_file {
    imp_fn *fn;
    int nfn, capfn;
    imp_gvar *gvar;
    int ngvar, capgvar;
    imp_pp *pp;
    int npp, cappp;
    imp_const *cst;
    int ncst, capcst;
    int guard;               /* an include guard: pp[0] #ifndef X, pp[1] #define X and the
                                last #endif hold everything; not counted as conditional */
} imp_file;

int imp_scan(const imp_src *s, imp_file *f, kiln_error *err);
void imp_file_free(imp_file *f);

/* The index in f->fn of the next function named name (from index from on)
 * of kind (or any kind when kind < 0), or -1. */
int imp_fn_find(const imp_file *f, const imp_src *s, const char *name, int kind, int from);
/* Does [from, to) hold a <<< launch? */
int imp_has_launch(const imp_src *s, int from, int to);
/* The #define of name that is in effect (the last), or NULL. */
const imp_pp *imp_define(const imp_file *f, const char *name);

/* What a parameter's or variable's type is, for matching task args. */
typedef enum imp_cls {
    IMP_C_OTHER,
    IMP_C_PTR,       /* T *: an output or input buffer */
    IMP_C_CPTR,      /* const T *: an input buffer */
    IMP_C_I32,       /* int, unsigned, int32_t */
    IMP_C_I64,       /* long, size_t, int64_t */
    IMP_C_F32,
    IMP_C_F64,
    IMP_C_STREAM,    /* cudaStream_t */
    IMP_C_DIM3,
    IMP_C_AUTO,
    IMP_C_TENSOR,    /* torch::Tensor, at::Tensor (by value or reference) */
} imp_cls;

/* The class of the type in [from, to); elem gets a pointer's element type
 * word ("float", "kiln_t"), else "". */
imp_cls imp_type_class(const imp_src *s, int from, int to, char *elem, size_t cap);
const char *imp_cls_name(imp_cls c);

#endif
