/* import_include.h - the project headers a CUDA file includes ("name.h"),
 * for `kiln import`: found in the file's directory, then in each --include
 * DIR (the user's checkout), read, and carried into the candidate, which
 * is one file: inlined where they are first included, their host-only
 * parts cut (imp_cut_host, as from the file itself) and their own project
 * headers inlined in turn. A header found nowhere is a problem naming it
 * and the directories searched. The translation also reads them: their
 * one-return helpers and macros size launches (import_map.c), their
 * dispatch macros are recognised (import_host.c). */
#ifndef KILN_IMPORT_INCLUDE_H
#define KILN_IMPORT_INCLUDE_H

#include "import.h"
#include "import_lex.h"
#include "import_scan.h"

#define IMP_MAX_UNITS 32

typedef struct imp_unit {
    char name[128];          /* as included: "type_convert.cuh" */
    char path[1024];         /* where it was found */
    char *text;              /* malloc'd */
    size_t len;
    imp_src s;
    imp_file f;
    int inlined;             /* written into the candidate already */
} imp_unit;

typedef struct imp_incref {  /* an #include "..." and the unit it names */
    int parent;              /* -1: the source itself; else a unit */
    int pp;                  /* its index in the parent's preprocessor lines */
    int unit;
} imp_incref;

typedef struct imp_units {
    imp_unit u[IMP_MAX_UNITS];
    int n;
    imp_incref ref[4 * IMP_MAX_UNITS];
    int nref;
} imp_units;

/* Every project header s (file o->file) includes, and theirs, into us:
 * what cannot be found or read is a problem. -1 with err only when out of
 * memory. */
int imp_units_load(imp_units *us, const imp_src *s, const imp_file *f, const kiln_import_opts *o,
                   imp_lines *problems, kiln_error *err);
void imp_units_free(imp_units *us);

/* The unit that #include pp of parent (-1: the source) names, or -1. */
int imp_unit_of(const imp_units *us, int parent, int pp);

/* The text that replaces `#include "name"` in the candidate: the header
 * with its host parts cut and its own headers inlined (each header once;
 * a second include is a comment), malloc'd; NULL when out of memory. */
char *imp_unit_inline(imp_units *us, int k, imp_lines *notes);

#endif
