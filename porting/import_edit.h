/* import_edit.h - the edits `kiln import` makes to a source (the file and
 * each project header it carries): replacements of byte ranges applied in
 * order, and the host-only parts every carried text loses (imp_cut_host),
 * each with a note saying so. */
#ifndef KILN_IMPORT_EDIT_H
#define KILN_IMPORT_EDIT_H

#include <stddef.h>

#include "import_lex.h"
#include "import_scan.h"

typedef struct imp_edit {
    size_t at, end;        /* replace [at, end) (insert where at == end) */
    char *text;            /* malloc'd */
    int order;             /* ties at one offset keep the order added */
} imp_edit;

typedef struct imp_edits {
    imp_edit *v;
    int n, cap, oom;
} imp_edits;

/* Replace [at, end) by text (malloc'd, owned from here; NULL: out of memory). */
void imp_edit_add(imp_edits *e, size_t at, size_t end, char *text);
/* A malloc'd formatted string (NULL when out of memory). */
char *imp_dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* text (len bytes) with the edits applied, appended to b; an edit inside
 * one made before it is skipped. */
void imp_edits_apply(imp_edits *e, const char *text, size_t len, kiln_strbuf *b);
void imp_edits_free(imp_edits *e);

/* Is the system header h host-only (<cuda_runtime.h>, <vector>, torch/...)? */
int imp_host_header(const char *h);

/* Edits that cut the host parts of s: host functions and declarations,
 * host variables, host-only #includes, #pragma once (name is not NULL: a
 * header, inlined) and #defines whose body launches. fname names the file
 * in the notes ("dispatch_utils.h:3: ..."), NULL for the source itself
 * ("line 3: ..."). Quoted includes are the caller's. */
void imp_cut_host(const imp_src *s, const imp_file *f, const char *fname, imp_edits *e,
                  imp_lines *notes);

#endif
