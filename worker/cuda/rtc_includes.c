/* rtc_includes.c - the check of a CUDA candidate's #include names (see
 * rtc_includes.h). */
#include "rtc_includes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The source as the preprocessor sees it after translation phase 2
 * (backslash-newline pairs removed), with each byte's original line. */
typedef struct text {
    char *s;
    int *line;
    size_t n;
} text;

static int splice(const char *src, text *t)
{
    size_t len = strlen(src);
    t->s = malloc(len + 1);
    t->line = malloc((len + 1) * sizeof *t->line);
    if (!t->s || !t->line)
        return -1;
    int line = 1;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\\' && (src[i + 1] == '\n' || (src[i + 1] == '\r' && src[i + 2] == '\n'))) {
            i += src[i + 1] == '\n' ? 1 : 2;
            line++;
            continue;
        }
        t->s[n] = src[i];
        t->line[n++] = line;
        if (src[i] == '\n')
            line++;
    }
    t->s[n] = '\0';
    t->line[n] = line;
    t->n = n;
    return 0;
}

/* Past blanks and block comments (each one blank to the preprocessor). */
static size_t skip_blanks(const text *t, size_t i)
{
    for (;;) {
        char ch = t->s[i];
        if (ch == ' ' || ch == '\t' || ch == '\v' || ch == '\f' || ch == '\r') {
            i++;
        } else if (ch == '/' && t->s[i + 1] == '*') {
            const char *end = strstr(t->s + i + 2, "*/");
            i = end ? (size_t)(end - t->s) + 2 : t->n;
        } else {
            return i;
        }
    }
}

static int ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* Does the identifier at s[i] (whole) equal word? */
static int word_at(const text *t, size_t i, const char *word)
{
    size_t n = strlen(word);
    return strncmp(t->s + i, word, n) == 0 && !ident_char(t->s[i + n]);
}

/* A relative name of allowed characters with no empty, "." or ".."
 * component. */
static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 200 || s[0] == '/')
        return 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '/') {
            size_t len = i - start;
            if (len == 0 || (len == 1 && s[start] == '.') ||
                (len == 2 && s[start] == '.' && s[start + 1] == '.'))
                return 0;
            start = i + 1;
        } else if (!ident_char(s[i]) && !strchr("-+.", s[i])) {
            return 0;
        }
    }
    return 1;
}

/* The header name at s[i] after `what`: 0 if allowed, else -1 and msg. */
static int check_name(const text *t, size_t i, const char *what, const char *name, char *msg,
                      size_t len)
{
    i = skip_blanks(t, i);
    char open = t->s[i], close = open == '<' ? '>' : '"';
    size_t end = i + 1;
    if (open == '<' || open == '"')
        while (end < t->n && t->s[end] != close && t->s[end] != '\n')
            end++;
    if ((open == '<' || open == '"') && t->s[end] == close && name_ok(t->s + i + 1, end - i - 1))
        return 0;
    if (open != '<' && open != '"') {
        snprintf(msg, len, "%s(%d): error: %s of a macro or computed name is not allowed: a "
                 "candidate names each header as <name> or \"name\" (docs/cuda.md)\n",
                 name, t->line[i], what);
        return -1;
    }
    int shown = (int)(end - i + 1 < 120 ? end - i + 1 : 120);
    snprintf(msg, len, "%s(%d): error: %s %.*s is not allowed: a candidate may include only "
             "kiln_cuda.h, kiln's standard headers and CUDA's own, by a relative name with "
             "no \".\" or \"..\" part (docs/cuda.md)\n",
             name, t->line[i], what, shown, t->s + i);
    return -1;
}

/* What is at s[i] if it starts an include: the directive's or operator's
 * name and where its operand starts; NULL if nothing. */
static const char *include_at(const text *t, size_t i, size_t *operand)
{
    static const char *const directives[] = {"include_next", "include", "import"};
    static const char *const operators[] = {"__has_include_next", "__has_include"};
    if (t->s[i] == '#' || (t->s[i] == '%' && t->s[i + 1] == ':')) {
        size_t j = skip_blanks(t, i + (t->s[i] == '#' ? 1 : 2));
        for (int k = 0; k < 3; k++)
            if (word_at(t, j, directives[k]))
                return *operand = j + strlen(directives[k]), directives[k];
    } else if (t->s[i] == '_' && (i == 0 || !ident_char(t->s[i - 1]))) {
        for (int k = 0; k < 2; k++)
            if (word_at(t, i, operators[k])) {
                size_t j = skip_blanks(t, i + strlen(operators[k]));
                if (t->s[j] == '(')
                    return *operand = j + 1, operators[k];
            }
    }
    return NULL;
}

int kiln_rtc_check_includes(const char *src, const char *name, char *msg, size_t len)
{
    text t = {0};
    int rc = 0;
    if (splice(src, &t) < 0) {
        snprintf(msg, len, "%s: error: out of memory checking its #include names\n", name);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        size_t operand = 0;
        const char *what = include_at(&t, i, &operand);
        char shown[32];
        if (what) {
            snprintf(shown, sizeof shown, "%s%s", what[0] == '_' ? "" : "#", what);
            rc = check_name(&t, operand, shown, name, msg, len);
        }
    }
    free(t.s);
    free(t.line);
    return rc;
}
