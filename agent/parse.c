/* parse.c - reading a model's answer (see parse.h).
 *
 * One pass over the lines finds every fenced block (``` or ~~~, CommonMark
 * style: the closing fence uses the same character and is at least as long)
 * and the first hypothesis line outside the blocks.  The block to use is the
 * one that defines the entry function (for CUDA: that holds the launch
 * manifest): models like to add a usage example or a snippet of the old
 * code, and the entry's definition is what tells the complete file apart
 * from those. */
#include "parse.h"
#include "manifest.h"
#include "patch.h"
#include "safe_text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HYP_MAX 500

typedef struct block {
    size_t start, end;   /* content: [start, end) of the normalised text */
    size_t indent;       /* the fence's indentation, removed from content lines */
    char lang[32];       /* lower-cased first word of the info string */
    int closed;
} block;

typedef struct scan {
    block *blocks;
    int n, cap;
    char hyp[HYP_MAX + 1];
    int have_hyp;
    int hyp_pending;     /* a bare "Hypothesis:" label: the next line holds it */
} scan;

static int reject(kiln_proposal *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int reject(kiln_proposal *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->error, sizeof out->error, fmt, ap);
    va_end(ap);
    out->ok = 0;
    free(out->source);
    out->source = NULL;
    return -1;
}

/* A copy with CRLF (and a CR at the very end) turned into LF, so every later
 * step sees one kind of line end and the source we keep is plain LF. */
static char *normalise(const char *text)
{
    size_t len = strlen(text);
    char *s = malloc(len + 1), *w = s;
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\r' && (text[i + 1] == '\n' || text[i + 1] == '\0'))
            continue;
        *w++ = text[i];
    }
    *w = '\0';
    return s;
}

static int is_ident(int c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static size_t skip_blanks(const char *s, size_t i, size_t len)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* An opening fence: indentation, >= 3 backticks or tildes, an info string
 * (which for backtick fences may not hold a backtick, so "```x```" is inline
 * code, not a fence).  Returns the fence length, 0 if the line is not one. */
static size_t fence_open(const char *line, size_t len, char *ch, size_t *indent, char *lang,
                         size_t langcap)
{
    size_t i = skip_blanks(line, 0, len), n = 0;
    if (i >= len || (line[i] != '`' && line[i] != '~'))
        return 0;
    *ch = line[i];
    *indent = i;
    while (i + n < len && line[i + n] == *ch)
        n++;
    if (n < 3)
        return 0;
    size_t j = skip_blanks(line, i + n, len);
    if (*ch == '`' && memchr(line + j, '`', len - j))
        return 0;
    while (j < len && (line[j] == '{' || line[j] == '.'))   /* ```{c} and ```.c */
        j++;
    size_t k = 0;
    while (j < len && !isspace((unsigned char)line[j]) && line[j] != '}' && k + 1 < langcap)
        lang[k++] = (char)tolower((unsigned char)line[j++]);
    lang[k] = '\0';
    return n;
}

static int fence_close(const char *line, size_t len, char ch, size_t flen)
{
    size_t i = skip_blanks(line, 0, len), n = 0;
    while (i + n < len && line[i + n] == ch)
        n++;
    return n >= flen && skip_blanks(line, i + n, len) == len;
}

/* Copy s[0, len) into out as one line, at most HYP_MAX bytes, never cutting
 * a UTF-8 sequence in half; tabs and other controls become spaces. */
static void copy_line(char *out, const char *s, size_t len)
{
    if (len > HYP_MAX) {
        len = HYP_MAX;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    for (size_t i = 0; i < len; i++)
        out[i] = iscntrl((unsigned char)s[i]) ? ' ' : s[i];
    out[len] = '\0';
}

/* Trim blanks and the markup a model wraps a line in ("**...**", "`...`"). */
static void trim_span(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && strchr(" \t*_`", s[*b]))
        (*b)++;
    while (*e > *b && strchr(" \t*`", s[*e - 1]))
        (*e)--;
}

/* A hypothesis label: "HYPOTHESIS:", "Hypothesis:", "**Hypothesis:**",
 * "- hypothesis - ...", "## Hypothesis: ...", with ':', '-', '=' or a dash
 * after the word.  Returns 1 and the text (maybe "") if the line is one. */
static int hyp_line(const char *line, size_t len, char *out)
{
    static const char word[] = "hypothesis";
    size_t i = 0, w = sizeof word - 1;
    while (i < len && strchr(" \t*_->#`", line[i]))
        i++;
    size_t d = i;   /* a numbered list item: "2. Hypothesis: ..." */
    while (d < len && isdigit((unsigned char)line[d]))
        d++;
    if (d > i && d < len && (line[d] == '.' || line[d] == ')'))
        i = skip_blanks(line, d + 1, len);
    if (len - i < w || strncasecmp(line + i, word, w) != 0 || (i + w < len && is_ident(line[i + w])))
        return 0;
    i += w;
    while (i < len && strchr(" \t*_`", line[i]))
        i++;
    if (i < len && strchr(":-=", line[i]))
        i++;
    else if (len - i >= 3 && memcmp(line + i, "\xE2\x80", 2) == 0 &&
             (line[i + 2] == '\x93' || line[i + 2] == '\x94'))   /* en or em dash */
        i += 3;
    else
        return 0;
    size_t e = len;
    trim_span(line, &i, &e);
    copy_line(out, line + i, e - i);
    return 1;
}

static void note_text_line(scan *sc, const char *line, size_t len)
{
    if (sc->have_hyp)
        return;
    if (sc->hyp_pending) {
        size_t b = 0, e = len;
        trim_span(line, &b, &e);
        if (b < e) {
            copy_line(sc->hyp, line + b, e - b);
            sc->have_hyp = 1;
        }
        return;
    }
    if (hyp_line(line, len, sc->hyp)) {
        sc->have_hyp = sc->hyp[0] != '\0';
        sc->hyp_pending = !sc->have_hyp;
    }
}

static int push_block(scan *sc, const block *b)
{
    if (sc->n == sc->cap) {
        int cap = sc->cap ? sc->cap * 2 : 8;
        block *nb = realloc(sc->blocks, (size_t)cap * sizeof *nb);
        if (!nb)
            return -1;
        sc->blocks = nb;
        sc->cap = cap;
    }
    sc->blocks[sc->n++] = *b;
    return 0;
}

/* Find the blocks and the hypothesis.  -1 only when out of memory. */
static int scan_text(const char *s, scan *sc)
{
    size_t pos = 0, total = strlen(s), flen = 0;
    char ch = 0;
    block cur = {0};
    int inside = 0;
    while (pos < total) {
        const char *nl = memchr(s + pos, '\n', total - pos);
        size_t len = nl ? (size_t)(nl - (s + pos)) : total - pos;
        size_t next = nl ? pos + len + 1 : total;
        if (inside && fence_close(s + pos, len, ch, flen)) {
            cur.end = pos;
            cur.closed = 1;
            if (push_block(sc, &cur) < 0)
                return -1;
            inside = 0;
        } else if (!inside && (flen = fence_open(s + pos, len, &ch, &cur.indent, cur.lang,
                                                   sizeof cur.lang)) > 0) {
            cur.start = next;
            inside = 1;
            sc->hyp_pending = 0;
        } else if (!inside) {
            note_text_line(sc, s + pos, len);
        }
        pos = next;
    }
    if (inside) {
        cur.end = total;
        cur.closed = 0;
        return push_block(sc, &cur);
    }
    return 0;
}

/* The block's content with the fence's indentation removed from each line. */
static char *block_text(const char *s, const block *b)
{
    char *out = malloc(b->end - b->start + 2), *w = out;
    if (!out)
        return NULL;
    size_t pos = b->start;
    while (pos < b->end) {
        for (size_t k = 0; k < b->indent && pos < b->end && s[pos] == ' '; k++)
            pos++;
        const char *nl = memchr(s + pos, '\n', b->end - pos);
        size_t len = nl ? (size_t)(nl - (s + pos)) + 1 : b->end - pos;
        memcpy(w, s + pos, len);
        w += len;
        pos += len;
    }
    if (w > out && w[-1] != '\n')   /* a last line without LF (cut-off blocks) */
        *w++ = '\n';
    *w = '\0';
    return out;
}

/* Blank out comments and string/char literals (keeping newlines), so a name
 * in a comment or a string does not count as a definition. */
static void strip_comments(char *c)
{
    for (char *p = c; *p;) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                *p++ = ' ';
        } else if (p[0] == '/' && p[1] == '*') {
            p[0] = p[1] = ' ';
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
                if (*p != '\n')
                    *p = ' ';
            if (*p)
                *p++ = ' ', *p++ = ' ';
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            for (*p++ = ' '; *p && *p != q && *p != '\n'; p++) {
                if (*p == '\\' && p[1] && p[1] != '\n')
                    *p++ = ' ';
                *p = ' ';
            }
            if (*p == q)
                *p++ = ' ';
        } else {
            p++;
        }
    }
}

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* p at '(': the character after the matching ')', NULL if unbalanced. */
static const char *skip_parens(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && --depth == 0)
            return p + 1;
    }
    return NULL;
}

/* name( ... ) followed, after attributes such as __attribute__((hot)), by
 * '{': a definition, not a call or a prototype. */
static int is_definition_at(const char *p)
{
    p = skip_space(p);
    if (*p != '(' || !(p = skip_parens(p)))
        return 0;
    for (;;) {
        p = skip_space(p);
        if (*p == '{')
            return 1;
        if (!is_ident(*p))
            return 0;
        while (is_ident(*p))
            p++;
        p = skip_space(p);
        if (*p == '(' && !(p = skip_parens(p)))
            return 0;
    }
}

static int defines(const char *code, const char *entry)
{
    char *c = strdup(code);
    if (!c)
        return -1;
    strip_comments(c);
    size_t n = strlen(entry);
    int found = 0;
    for (const char *p = c; !found && (p = strstr(p, entry)) != NULL; p += n)
        found = (p == c || !is_ident(p[-1])) && !is_ident(p[n]) && is_definition_at(p + n);
    free(c);
    return found;
}

/* Is this block the complete file? For C it defines the entry function; for
 * CUDA it holds the launch manifest (kernels may be renamed: the manifest
 * names them, and the verifier checks each is defined). */
static int is_file(const char *code, const char *lang, const char *entry)
{
    kiln_manifest_span sp;
    if (strcmp(lang, "cuda") == 0)
        return kiln_manifest_locate(code, strlen(code), &sp);
    return defines(code, entry);
}

static int blank(const char *s, const block *b)
{
    for (size_t i = b->start; i < b->end; i++)
        if (!isspace((unsigned char)s[i]))
            return 0;
    return 1;
}

static int code_lang(const char *lang)
{
    static const char *const ok[] = {"", "c", "h", "cpp", "c++", "cc", "cxx", "hpp",
                                     "cuda", "cu", "cuh"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(lang, ok[i]) == 0)
            return 1;
    return 0;
}

/* A hypothesis written as a comment in the file ("// HYPOTHESIS: ..."), for
 * answers that put it there instead of on a line of their own. */
static void hyp_from_code(const char *src, char *out)
{
    const char *p = strstr(src, "HYPOTHESIS:");
    if (!p)
        return;
    p += strlen("HYPOTHESIS:");
    const char *nl = strchr(p, '\n');
    size_t b = 0, e = nl ? (size_t)(nl - p) : strlen(p);
    while (e > 0 && isspace((unsigned char)p[e - 1]))
        e--;
    if (e >= 2 && p[e - 2] == '*' && p[e - 1] == '/')   /* a one-line block comment */
        e -= 2;
    trim_span(p, &b, &e);
    copy_line(out, p + b, e - b);
}

typedef struct counts {
    int code, nonempty, def_closed, def_open, open;
    int chosen;          /* the one closed block defining the entry, or -1 */
} counts;

/* Which blocks are candidates: those tagged as C/C++/CUDA or untagged; a
 * ```json or ```bash block is an aside unless it is all there is. */
static int count_blocks(const char *s, const scan *sc, const char *lang, const char *entry,
                        counts *k)
{
    int any_code = 0;
    for (int i = 0; i < sc->n; i++)
        any_code |= code_lang(sc->blocks[i].lang);
    memset(k, 0, sizeof *k);
    k->chosen = -1;
    for (int i = 0; i < sc->n; i++) {
        const block *b = &sc->blocks[i];
        if (any_code && !code_lang(b->lang))
            continue;
        k->code++;
        k->open += !b->closed;
        if (blank(s, b))
            continue;
        k->nonempty += b->closed;
        char *t = block_text(s, b);
        int d = t ? is_file(t, lang, entry) : -1;
        free(t);
        if (d < 0)
            return -1;
        if (d && b->closed) {
            k->def_closed++;
            k->chosen = i;
        }
        k->def_open += d && !b->closed;
    }
    return 0;
}

static int choose(const char *s, const scan *sc, const char *lang, const char *entry,
                  kiln_proposal *out)
{
    counts k;
    int cuda = strcmp(lang, "cuda") == 0;
    if (count_blocks(s, sc, lang, entry, &k) < 0)
        return reject(out, "out of memory while reading the answer");
    if (k.code == 0)
        return reject(out, "the answer has no fenced code block");
    if (k.def_open > 0 || (k.def_closed == 0 && k.open > 0))
        return reject(out, "truncated: the code block is not closed (the answer was cut off)");
    if (k.def_closed > 1)
        return reject(out, "the answer has %d code blocks that look like complete files; "
                           "send exactly one", k.def_closed);
    if (k.def_closed == 0 && k.nonempty == 0)
        return reject(out, "the code block is empty");
    if (k.def_closed == 0 && k.nonempty == 1)
        return cuda ? reject(out, "the code block has no launch manifest (/*@kiln launch ... @*/)")
                    : reject(out, "the code block does not define %.64s", entry);
    if (k.def_closed == 0)
        return cuda ? reject(out, "the answer has %d code blocks and none of them holds a launch "
                                  "manifest (/*@kiln launch ... @*/)", k.nonempty)
                    : reject(out, "the answer has %d code blocks and none of them defines %.64s",
                             k.nonempty, entry);
    out->source = block_text(s, &sc->blocks[k.chosen]);
    if (!out->source)
        return reject(out, "out of memory while reading the answer");
    size_t len = strlen(out->source);
    if (len > KILN_MAX_SOURCE_BYTES)
        return reject(out, "the code block is %zu bytes; the limit is %d (256 KiB)", len,
                      KILN_MAX_SOURCE_BYTES);
    return 0;
}

/* Phrases of a model that declines ("I can't help with that"); a typographic
 * apostrophe is spelled out too. */
static int declines(const char *s)
{
    static const char *const said[] = {
        "i can't", "i cannot", "i can not", "i won't", "i will not", "i'm unable", "i am unable",
        "i'm not able", "i am not able", "i'm sorry", "i apologize", "can't help", "cannot help",
        "can't assist", "cannot assist", "i can\xE2\x80\x99t", "i won\xE2\x80\x99t",
        "i\xE2\x80\x99m unable", "i\xE2\x80\x99m sorry", "can\xE2\x80\x99t help"};
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++)
        if (strcasestr(s, said[i]))
            return 1;
    return 0;
}

/* No code block: a refusal is told apart from an answer that forgot the
 * code, so the run says which (the first line is quoted, made safe). */
static int no_code(const char *s, kiln_proposal *out)
{
    if (!declines(s))
        return reject(out, "the answer has no fenced code block");
    const char *p = s;
    while (*p && isspace((unsigned char)*p))
        p++;
    const char *nl = strchr(p, '\n');
    char first[HYP_MAX + 1];
    copy_line(first, p, nl ? (size_t)(nl - p) : strlen(p));
    char shown[160];
    snprintf(shown, sizeof shown, "%.120s", first);
    kiln_safe_text_inplace(shown, sizeof shown);
    return reject(out, "refusal: the model declined and sent no code: \"%s\"", shown);
}

/* Host code in the chosen file: kiln's harness calls the entry (and for
 * CUDA launches the manifest's kernels) itself, so a main() or a <<<...>>>
 * launch is a program around the kernel, not the kernel file. */
static int host_code(const char *src, const char *lang, kiln_proposal *out)
{
    int d = defines(src, "main");
    if (d < 0)
        return reject(out, "out of memory while reading the answer");
    if (d)
        return reject(out, "host code: the file defines main(); send only the kernel file "
                           "(kiln's harness calls the kernel itself)");
    if (strcmp(lang, "cuda") != 0)
        return 0;
    char *c = strdup(src);
    if (!c)
        return reject(out, "out of memory while reading the answer");
    strip_comments(c);
    const char *l = strstr(c, "<<<");
    int launch = l && strstr(l, ">>>");
    free(c);
    if (launch)
        return reject(out, "host code: the file launches a kernel with <<<...>>>; send only the "
                           "kernels and the launch manifest (kiln launches them itself)");
    return 0;
}

static int truncated_finish(const char *finish)
{
    return finish && (strcmp(finish, "length") == 0 || strcmp(finish, "max_tokens") == 0);
}

/* A block that is a diff: tagged diff or patch, or untagged holding hunks. */
static int is_diff_block(const char *s, const block *b)
{
    if (!strcmp(b->lang, "diff") || !strcmp(b->lang, "patch"))
        return 1;
    if (b->lang[0])
        return 0;
    char *t = block_text(s, b);
    int d = t && kiln_patch_looks_like(t);
    free(t);
    return d;
}

/* The diff to apply, malloc'd, or NULL: a closed diff block when no block
 * is the complete file, or the whole answer when it has no block but hunks. */
static char *diff_of(const char *s, const scan *sc, const char *lang, const char *entry)
{
    if (sc->n == 0)
        return kiln_patch_looks_like(s) ? strdup(s) : NULL;
    int diff = -1;
    for (int i = 0; i < sc->n; i++) {
        const block *b = &sc->blocks[i];
        if (!b->closed)
            return NULL;   /* cut off: said so by choose */
        char *t = block_text(s, b);
        int file = t && is_file(t, lang, entry) > 0;
        free(t);
        if (file)
            return NULL;
        if (diff < 0 && is_diff_block(s, b))
            diff = i;
    }
    return diff < 0 ? NULL : block_text(s, &sc->blocks[diff]);
}

/* The parent with the diff applied is the candidate's file. */
static int apply_diff(const char *diff, const kiln_reply *r, kiln_proposal *out)
{
    if (!r->parent)
        return reject(out, "diff: the answer is a diff, and there is no parent to apply it to; "
                           "send the complete file");
    char why[200];
    char *src;
    if (kiln_patch_apply(r->parent, diff, &src, why, sizeof why) < 0)
        return reject(out, "diff: it does not apply to the parent: %s; send the complete file",
                      why);
    out->source = src;
    int d = is_file(src, r->lang, r->entry);
    if (d <= 0)
        return reject(out, "diff: the patched file does not define %.64s", r->entry);
    return 0;
}

static int parse_text(const char *s, const scan *sc, const kiln_reply *r, kiln_proposal *out)
{
    if (truncated_finish(r->finish))
        return reject(out, "truncated: the answer was cut off at the token limit (finish reason "
                           "\"%s\"); it is not verified", r->finish);
    char *diff = diff_of(s, sc, r->lang, r->entry);
    if (diff) {
        int rc = apply_diff(diff, r, out);
        free(diff);
        return rc;
    }
    if (sc->n == 0)
        return no_code(s, out);
    return choose(s, sc, r->lang, r->entry, out);
}

int kiln_parse_reply(const kiln_reply *r, kiln_proposal *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!r || !r->text || !r->entry || !*r->entry || !r->lang ||
        (strcmp(r->lang, "c") && strcmp(r->lang, "cuda")))
        return reject(out, "internal error: kiln_parse_answer needs text, lang c|cuda and an entry");
    char *s = normalise(r->text);
    scan sc = {0};
    int rc;
    if (!s || scan_text(s, &sc) < 0)
        rc = reject(out, "out of memory while reading the answer");
    else
        rc = parse_text(s, &sc, r, out);
    if (rc == 0)
        rc = host_code(out->source, r->lang, out);
    char where[128];
    /* Code that is not text would be refused at the static stage; refused
     * here, it never reaches the run database or a commit (sandbox.md). */
    if (rc == 0 && kiln_text_where_unsafe(out->source, strlen(out->source), "\r\f", where,
                                          sizeof where))
        rc = reject(out, "the code block holds %s: code must be UTF-8 text, with no control "
                    "but tab, newline, carriage return and form feed (write \\x1b in a "
                    "string literal instead)", where);
    if (rc == 0) {
        memcpy(out->hypothesis, sc.hyp, sizeof sc.hyp);
        if (!out->hypothesis[0])
            hyp_from_code(out->source, out->hypothesis);
        /* the model's words, shown in status, the report and later prompts */
        kiln_safe_text_inplace(out->hypothesis, sizeof out->hypothesis);
        out->ok = 1;
    }
    free(sc.blocks);
    free(s);
    return rc;
}

int kiln_parse_answer(const char *text, const char *lang, const char *entry, kiln_proposal *out)
{
    kiln_reply r = {.text = text, .lang = lang, .entry = entry};
    return kiln_parse_reply(&r, out);
}

void kiln_proposal_free(kiln_proposal *p)
{
    if (!p)
        return;
    free(p->source);
    p->source = NULL;
}
