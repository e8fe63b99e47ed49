/* import_expr.c - C host expressions into manifest expressions
 * (import_expr.h).
 *
 * A recursive descent over C's precedence levels, tightest last, that
 * prints as it goes: each level returns its text and precedence, and an
 * operand is parenthesized only where the manifest (which has C's
 * precedence) would read it otherwise. What the manifest has no form for
 * fails with a sentence naming the token: bitwise operators, floating
 * point, assignment, pointers, array elements, unknown calls. Shifts by a
 * constant become a product or quotient by the power of two (exact for the
 * non-negative sizes a launch computes; the account says so). */
#include "import_expr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 48
#define MAX_CALL_ARGS 8

typedef struct xp {
    const imp_src *s;
    int i, end;                /* the next token, and the end of the range */
    const imp_xenv *env;
    imp_why *why;
    int depth;
} xp;

static int cond(xp *p, imp_xval *out);
static int unary(xp *p, imp_xval *out);

static int fail(xp *p, int tok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(xp *p, int tok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why->msg, sizeof p->why->msg, fmt, ap);
    va_end(ap);
    p->why->tok = tok;
    return -1;
}

static int at(const xp *p, const char *w)
{
    return p->i < p->end && imp_is(p->s, p->i, w);
}

static int kind_at(const xp *p, int i, imp_tk k)
{
    return i < p->end && p->s->tok[i].kind == k;
}

/* out = text at precedence prec; fails when it outgrows a manifest field. */
static int set(xp *p, imp_xval *out, int prec, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int set(xp *p, imp_xval *out, int prec, const char *fmt, ...)
{
    char buf[2 * KILN_EXPR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= KILN_EXPR_MAX)
        return fail(p, p->i < p->end ? p->i : p->end - 1, "the expression grows longer than %d "
                    "characters; split it into lets by hand", KILN_EXPR_MAX - 1);
    memcpy(out->s, buf, (size_t)n + 1);
    out->prec = prec;
    out->uses = 0;
    out->boolean = 0;
    out->addr = 0;
    return 0;
}

/* Is v an integer literal (with an optional '-')? Its value in *n. */
static int literal(const imp_xval *v, long long *n)
{
    const char *t = v->s + (v->s[0] == '-');
    char *end;
    if (!*t || strspn(t, "0123456789") != strlen(t))
        return 0;
    errno = 0;
    *n = strtoll(v->s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* A buffer's address anywhere but in addr % N: no value the manifest has. */
static int no_addr(xp *p, const imp_xval *v, int tok)
{
    if (!v->addr)
        return 0;
    return fail(p, tok, "%s is a buffer's address, known only at run time (kiln aligns every "
                "buffer to %d bytes, so only its alignment, address %% N, is known)", v->s,
                IMP_BUFFER_ALIGN);
}

/* l op r of literals, for the comparisons and logic a host's checks and
 * dispatch conditions are made of: 1 with *out set, 0 when not folded. */
static int fold(const char *op, long long a, long long b, long long *out)
{
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"};
    int k = 0;
    while (k < 8 && strcmp(op, ops[k]) != 0)
        k++;
    switch (k) {
    case 0: *out = a == b; break;
    case 1: *out = a != b; break;
    case 2: *out = a < b; break;
    case 3: *out = a <= b; break;
    case 4: *out = a > b; break;
    case 5: *out = a >= b; break;
    case 6: *out = a && b; break;
    case 7: *out = a || b; break;
    default: return 0;
    }
    return 1;
}

/* v's text, in parentheses when its precedence is below min. */
static void wrapped(const imp_xval *v, int min, char *buf, size_t cap)
{
    snprintf(buf, cap, v->prec < min ? "(%s)" : "%s", v->s);
}

/* addr % N: 0 where N divides the buffers' alignment. */
static int addr_mod(xp *p, const imp_xval *l, const char *op, const imp_xval *r, int tok,
                    imp_xval *out)
{
    long long n = 0;
    if (strcmp(op, "%") != 0 || r->addr || !p->env || !p->env->constant ||
        p->env->constant(p->env->ctx, r->s, &n) < 0)
        return no_addr(p, l->addr ? l : r, tok);
    if (n <= 0 || IMP_BUFFER_ALIGN % n != 0)
        return fail(p, tok, "%s %% %s: kiln aligns buffers to %d bytes, so their address "
                    "modulo %lld is not known", l->s, r->s, IMP_BUFFER_ALIGN, n);
    return set(p, out, IMP_P_PRIMARY, "0");
}

/* out = l op r at precedence prec (left associative); comparisons and
 * logic of constants folded, && and || with a constant simplified. */
static int binary(xp *p, const imp_xval *l, const char *op, const imp_xval *r, int prec,
                  int tok, imp_xval *out)
{
    char a[KILN_EXPR_MAX + 2], b[KILN_EXPR_MAX + 2];
    long long x, y, v;
    int logic = strcmp(op, "&&") == 0 || strcmp(op, "||") == 0;
    int isbool = prec == IMP_P_EQ || prec == IMP_P_REL || logic;
    unsigned long long uses = l->uses | r->uses;
    if (l->addr || r->addr)
        return addr_mod(p, l, op, r, tok, out);
    if (strcmp(op, "*") == 0 && p->env && p->env->product &&
        p->env->product(p->env->ctx, l, r, tok, p->why) < 0)
        return -1;
    int lk = literal(l, &x), rk = literal(r, &y);
    if (lk && rk && fold(op, x, y, &v))
        return set(p, out, IMP_P_PRIMARY, "%lld", v);
    if (logic && (lk || rk)) {   /* 1 && c is c, 0 && c is 0; || likewise */
        const imp_xval *other = lk ? r : l;
        long long k = lk ? x : y;
        int and_ = op[0] == '&';
        if ((and_ && k == 0) || (!and_ && k != 0))
            return set(p, out, IMP_P_PRIMARY, "%d", and_ ? 0 : 1);
        if (other->boolean) {
            *out = *other;
            return 0;
        }
    }
    wrapped(l, prec, a, sizeof a);
    wrapped(r, prec + 1, b, sizeof b);
    if (set(p, out, prec, "%s %s %s", a, op, b) < 0)
        return -1;
    out->uses = uses;
    out->boolean = isbool;
    return 0;
}

/* ---- literals and types ---------------------------------------------------- */

int imp_int_literal(const imp_src *s, int tok, long long *out)
{
    char buf[64], clean[64];
    size_t n = 0;
    if (tok < 0 || tok >= s->ntok || s->tok[tok].kind != IMP_NUMBER)
        return -1;
    imp_word(s, tok, buf, sizeof buf);
    for (const char *c = buf; *c; c++)
        if (*c != '\'')
            clean[n++] = *c;
    clean[n] = '\0';
    while (n > 0 && strchr("uUlL", clean[n - 1]))
        clean[--n] = '\0';
    int hex = clean[0] == '0' && (clean[1] == 'x' || clean[1] == 'X');
    int bin = clean[0] == '0' && (clean[1] == 'b' || clean[1] == 'B');
    if (n == 0 || strchr(clean, '.') || (!hex && strpbrk(clean, "eEfF")) || strpbrk(clean, "pP"))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = bin ? strtoull(clean + 2, &end, 2)
                               : strtoull(clean, &end, hex ? 16 : clean[0] == '0' ? 8 : 10);
    if (errno || *end || v > (unsigned long long)INT64_MAX)
        return -1;
    *out = (long long)v;
    return 0;
}

const char *imp_sizeof_type(const char *ctype, long long *bytes)
{
    static const struct { const char *c, *m; } named[] = {
        {"float", "f32"}, {"double", "f64"}, {"half", "f16"}, {"__half", "f16"},
        {"__nv_bfloat16", "bf16"}, {"nv_bfloat16", "bf16"}, {"int", "i32"},
        {"int32_t", "i32"}, {"uint32_t", "i32"}, {"unsigned", "i32"}, {"int64_t", "i64"},
        {"uint64_t", "i64"}, {"size_t", "i64"}, {"long", "i64"}, {"int8_t", "i8"},
        {"uint8_t", "i8"}, {"char", "i8"}, {"kiln_t", "T"},
    };
    static const struct { const char *c; long long n; } sized[] = {
        {"float2", 8}, {"float4", 16}, {"int2", 8}, {"int4", 16}, {"uint2", 8},
        {"uint4", 16}, {"half2", 4}, {"__half2", 4}, {"__nv_bfloat162", 4}, {"double2", 16},
        {"short", 2}, {"int16_t", 2}, {"uint16_t", 2},
    };
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (strcmp(ctype, named[k].c) == 0)
            return named[k].m;
    for (size_t k = 0; k < sizeof sized / sizeof sized[0]; k++)
        if (strcmp(ctype, sized[k].c) == 0) {
            *bytes = sized[k].n;
            return NULL;
        }
    *bytes = 0;
    return NULL;
}

int imp_int_type(const char *name)
{
    static const char *const ints[] = {
        "int", "unsigned", "signed", "long", "short", "size_t", "int32_t", "uint32_t",
        "int64_t", "uint64_t", "ptrdiff_t", "const", "std", "index_t", "uint", "uintptr_t",
        "intptr_t",
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (strcmp(name, ints[k]) == 0)
            return 1;
    return 0;
}

static int float_type(const char *name)
{
    return strcmp(name, "float") == 0 || strcmp(name, "double") == 0 ||
           strcmp(name, "half") == 0 || strcmp(name, "__half") == 0;
}

/* Is [from, to) a type as a cast names one: type words and "::" only?
 * *integer: every word is an integer type's; *pointer: it has a '*'. */
static int cast_type(const imp_src *s, int from, int to, int *integer, int *pointer)
{
    char w[64];
    *integer = 1;
    *pointer = 0;
    for (int i = from; i < to; i++) {
        imp_word(s, i, w, sizeof w);
        if (strcmp(w, "*") == 0 || strcmp(w, "__restrict__") == 0) {
            *pointer |= w[0] == '*';
            continue;
        }
        if (strcmp(w, "::") == 0)
            continue;
        if (s->tok[i].kind != IMP_IDENT)
            return 0;
        if (!imp_int_type(w)) {
            long long b;
            if (!float_type(w) && !imp_sizeof_type(w, &b) && b == 0)
                return 0;
            *integer = 0;
        }
    }
    return to > from;
}

/* ---- primaries ---------------------------------------------------------- */

static int number(xp *p, imp_xval *out)
{
    long long v;
    char w[64];
    imp_word(p->s, p->i, w, sizeof w);
    if (imp_int_literal(p->s, p->i, &v) < 0)
        return fail(p, p->i, "'%s' is not an integer literal (launch sizes are integers; "
                    "floating-point arithmetic has no manifest form)", w);
    p->i++;
    return set(p, out, IMP_P_PRIMARY, "%lld", v);
}

/* The result of a cast to [tf, tt) of the operand already in v. */
static int cast_to(xp *p, int tf, int tt, imp_xval *v)
{
    int integer, pointer;
    char t[96];
    (void)v;   /* an integer cast changes nothing the manifest computes */
    imp_text(p->s, tf, tt, t, sizeof t);
    if (!cast_type(p->s, tf, tt, &integer, &pointer) || pointer || !integer)
        return fail(p, tf, "a cast to '%s': only casts to integer types can be dropped "
                    "(launch sizes are integers)", t);
    return 0;
}

/* sizeof(TYPE) at p->i. */
static int size_of(xp *p, imp_xval *out)
{
    int open = p->i + 1, close;
    char w[64];
    long long bytes;
    if (!imp_is(p->s, open, "(") || (close = p->s->tok[open].match) >= p->end)
        return fail(p, p->i, "sizeof without parentheses");
    int last = close - 1, ptr = imp_is(p->s, last, "*");
    while (last > open && !kind_at(p, last, IMP_IDENT))
        last--;
    imp_word(p->s, last, w, sizeof w);
    p->i = close + 1;
    if (ptr)
        return set(p, out, IMP_P_PRIMARY, "8");
    if (p->env && p->env->dtype_name && strcmp(w, p->env->dtype_name) == 0)
        return set(p, out, IMP_P_PRIMARY, "sizeof(T)");
    const char *m = imp_sizeof_type(w, &bytes);
    if (m)
        return set(p, out, IMP_P_PRIMARY, "sizeof(%s)", m);
    if (bytes > 0)
        return set(p, out, IMP_P_PRIMARY, "%lld", bytes);
    return fail(p, last, "sizeof(%s): not a type import knows the size of (float, half, "
                "__nv_bfloat16, double, the integer types, float2/float4 and the like)", w);
}

/* Arguments of a call whose '(' is at p->i, each translated. */
static int call_args(xp *p, imp_xval *args, int *nargs)
{
    int open = p->i, close = p->s->tok[open].match;
    int af[MAX_CALL_ARGS], at_[MAX_CALL_ARGS];
    int n = imp_split(p->s, open + 1, close, 0, af, at_, MAX_CALL_ARGS);
    if (n < 0)
        return fail(p, open, "a call with more than %d arguments", MAX_CALL_ARGS);
    for (int k = 0; k < n; k++) {
        xp sub = {p->s, af[k], at_[k], p->env, p->why, p->depth};
        if (af[k] == at_[k])
            return fail(p, open, "an empty argument");
        if (cond(&sub, &args[k]) < 0)
            return -1;
        if (sub.i != at_[k])
            return fail(p, sub.i, "unexpected '%.*s'", (int)p->s->tok[sub.i].len,
                        p->s->text + p->s->tok[sub.i].at);
    }
    *nargs = n;
    p->i = close + 1;
    return 0;
}

/* min(a, b, ...) or max(...), written as the manifest writes them. */
static int min_max(xp *p, const char *fn, const imp_xval *args, int n, imp_xval *out)
{
    char buf[2 * KILN_EXPR_MAX];
    size_t used = (size_t)snprintf(buf, sizeof buf, "%s(", fn);
    unsigned long long uses = 0;
    if (n < 2)
        return fail(p, p->i - 1, "%s() with fewer than 2 arguments", fn);
    for (int k = 0; k < n && used < sizeof buf; k++) {
        if (no_addr(p, &args[k], p->i - 1) < 0)
            return -1;
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", k ? ", " : "", args[k].s);
        uses |= args[k].uses;
    }
    if (set(p, out, IMP_P_PRIMARY, "%.*s)", (int)(sizeof buf - 2), buf) < 0)
        return -1;
    out->uses = uses;
    return 0;
}

/* A call of the function named at token fn; p->i is at its '('. */
static int call(xp *p, int fn, imp_xval *out)
{
    imp_xval args[MAX_CALL_ARGS];
    int n = 0;
    char w[64];
    imp_word(p->s, fn, w, sizeof w);
    if (imp_int_type(w)) {           /* int(x), size_t(x): a functional cast */
        if (call_args(p, args, &n) < 0)
            return -1;
        if (n != 1)
            return fail(p, fn, "%s() with %d arguments", w, n);
        *out = args[0];
        return 0;
    }
    if (call_args(p, args, &n) < 0)
        return -1;
    if (strcmp(w, "min") == 0 || strcmp(w, "max") == 0)
        return min_max(p, w, args, n, out);
    if (!p->env || !p->env->call)
        return fail(p, fn, "a call of '%s'", w);
    return p->env->call(p->env->ctx, p->s, fn, n, args, out, p->why);
}

/* Skip "<...>" template arguments at p->i (std::min<int>); their end. */
static int skip_angles(xp *p)
{
    int depth = 0;
    for (int i = p->i; i < p->end; i++) {
        depth += imp_is(p->s, i, "<") - imp_is(p->s, i, ">");
        if (depth == 0)
            return i + 1;
    }
    return -1;
}

/* static_cast<TYPE>(e) and the like, p->i at the keyword. */
static int named_cast(xp *p, imp_xval *out)
{
    int lt = p->i + 1, gt = lt + 1;
    while (gt < p->end && !imp_is(p->s, gt, ">"))
        gt++;
    if (!imp_is(p->s, lt, "<") || !imp_is(p->s, gt + 1, "("))
        return fail(p, p->i, "a cast import cannot read");
    int open = gt + 1, close = p->s->tok[open].match;
    xp sub = {p->s, open + 1, close, p->env, p->why, p->depth};
    if (cond(&sub, out) < 0)
        return -1;
    if (sub.i != close)
        return fail(p, sub.i, "unexpected token in the cast");
    p->i = close + 1;
    return cast_to(p, lt + 1, gt, out);
}

/* A name, qualified name, call, member or template call at p->i. */
static int identifier(xp *p, imp_xval *out)
{
    char w[64];
    *out = (imp_xval){.prec = IMP_P_PRIMARY};   /* what a callback leaves unset */
    imp_word(p->s, p->i, w, sizeof w);
    if (strcmp(w, "true") == 0 || strcmp(w, "false") == 0)
        return p->i++, set(p, out, IMP_P_PRIMARY, "%d", w[0] == 't');
    if (strcmp(w, "static_cast") == 0 || strcmp(w, "reinterpret_cast") == 0)
        return named_cast(p, out);
    if (strcmp(w, "sizeof") == 0)
        return size_of(p, out);
    while (imp_is(p->s, p->i + 1, "::") && kind_at(p, p->i + 2, IMP_IDENT))
        p->i += 2;                    /* std::min, Config::kBlock: the last name */
    int name = p->i++;
    if (at(p, "<") && (imp_is(p->s, name, "min") || imp_is(p->s, name, "max"))) {
        int after = skip_angles(p);
        if (after > 0 && imp_is(p->s, after, "("))
            p->i = after;
    }
    if (at(p, "("))
        return call(p, name, out);
    if ((at(p, ".") || at(p, "->")) && kind_at(p, p->i + 1, IMP_IDENT)) {
        if (at(p, "->"))
            return fail(p, name, "'%s->...' reads through a pointer at run time", w);
        int member = p->i + 1;
        p->i += 2;
        if (at(p, "<")) {             /* t.data_ptr<scalar_t>() */
            int after = skip_angles(p);
            if (after > 0 && imp_is(p->s, after, "("))
                p->i = after;
        }
        if (at(p, "(")) {
            imp_xval args[MAX_CALL_ARGS];
            int n = 0;
            char m[64];
            imp_word(p->s, member, m, sizeof m);
            if (call_args(p, args, &n) < 0)
                return -1;
            if (!p->env || !p->env->method)
                return fail(p, name, "'%s.%s()': a method call", w, m);
            return p->env->method(p->env->ctx, p->s, name, member, n, args, out, p->why);
        }
        if (!p->env || !p->env->member)
            return fail(p, name, "'%s.': a member", w);
        return p->env->member(p->env->ctx, p->s, name, member, out, p->why);
    }
    if (at(p, "["))
        return fail(p, name, "'%s[...]': an array element, known only at run time", w);
    if (!p->env || !p->env->name)
        return fail(p, name, "unknown name '%s'", w);
    return p->env->name(p->env->ctx, p->s, name, out, p->why);
}

/* '(' at p->i: a cast to an integer type, or a parenthesized expression. */
static int paren(xp *p, imp_xval *out)
{
    int open = p->i, close = p->s->tok[open].match, integer, pointer;
    int next = close + 1;
    int operand = kind_at(p, next, IMP_IDENT) || kind_at(p, next, IMP_NUMBER) ||
                  imp_is(p->s, next, "(");
    if (operand && next < p->end && cast_type(p->s, open + 1, close, &integer, &pointer)) {
        p->i = next;
        if (unary(p, out) < 0)
            return -1;
        return cast_to(p, open + 1, close, out);
    }
    xp sub = {p->s, open + 1, close, p->env, p->why, p->depth};
    if (open + 1 == close)
        return fail(p, open, "empty parentheses");
    if (cond(&sub, out) < 0)
        return -1;
    if (sub.i != close)
        return fail(p, sub.i, "unexpected '%.*s'", (int)p->s->tok[sub.i].len,
                    p->s->text + p->s->tok[sub.i].at);
    p->i = close + 1;
    return 0;
}

static int primary(xp *p, imp_xval *out)
{
    if (p->i >= p->end)
        return fail(p, p->end - 1, "an operand is missing");
    const imp_tok *k = &p->s->tok[p->i];
    if (k->kind == IMP_NUMBER)
        return number(p, out);
    if (k->kind == IMP_IDENT)
        return identifier(p, out);
    if (at(p, "("))
        return paren(p, out);
    if (k->kind == IMP_STRING)
        return fail(p, p->i, "a string or character literal");
    return fail(p, p->i, "unexpected '%.*s'", (int)k->len, p->s->text + k->at);
}

/* ---- operators ---------------------------------------------------------- */

static int unary(xp *p, imp_xval *out)
{
    static const char *const refused[][2] = {
        {"~", "the bitwise operator '~' has no manifest form"},
        {"&", "'&' takes an address, known only at run time"},
        {"*", "'*' reads through a pointer at run time"},
        {"++", "'++' assigns; the manifest computes, it does not assign"},
        {"--", "'--' assigns; the manifest computes, it does not assign"},
    };
    if (++p->depth > MAX_DEPTH)
        return fail(p, p->i, "the expression nests deeper than %d", MAX_DEPTH);
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
        if (at(p, refused[k][0]))
            return fail(p, p->i, "%s", refused[k][1]);
    int rc;
    if (at(p, "-") || at(p, "+") || at(p, "!")) {
        int optok = p->i;
        char op = p->s->text[p->s->tok[p->i++].at], b[KILN_EXPR_MAX + 2];
        imp_xval v;
        long long n;
        if (unary(p, &v) < 0 || no_addr(p, &v, optok) < 0)
            return -1;
        wrapped(&v, IMP_P_UNARY, b, sizeof b);
        if (op == '!' && literal(&v, &n))
            rc = set(p, out, IMP_P_PRIMARY, "%d", !n);
        else
            rc = op == '+' ? (*out = v, 0) : set(p, out, IMP_P_UNARY, "%c%s", op, b);
        if (rc == 0 && op != '+') {
            out->uses = v.uses;
            out->boolean = op == '!';
        }
    } else {
        rc = primary(p, out);
    }
    p->depth--;
    return rc;
}

/* One left-associative level: operands from next, operators ops[]. */
static int level(xp *p, imp_xval *out, int (*next)(xp *, imp_xval *), const char *const *ops,
                 int nops, int prec)
{
    if (next(p, out) < 0)
        return -1;
    for (;;) {
        int k = 0;
        while (k < nops && !at(p, ops[k]))
            k++;
        if (k == nops)
            return 0;
        int optok = p->i++;
        imp_xval r, l = *out;
        if (next(p, &r) < 0 || binary(p, &l, ops[k], &r, prec, optok, out) < 0)
            return -1;
    }
}

static int term(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"*", "/", "%"};
    return level(p, out, unary, ops, 3, IMP_P_TERM);
}

static int sum(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"+", "-"};
    return level(p, out, term, ops, 2, IMP_P_SUM);
}

/* a << k and a >> k, k a constant: a * 2^k and a / 2^k. */
static int shift(xp *p, imp_xval *out)
{
    if (sum(p, out) < 0)
        return -1;
    while (at(p, "<<") || at(p, ">>")) {
        int op = p->i++, left = imp_is(p->s, op, "<<");
        imp_xval r, l = *out, two;
        long long k;
        if (sum(p, &r) < 0)
            return -1;
        if (sscanf(r.s, "%lld", &k) != 1 || strspn(r.s, "0123456789") != strlen(r.s) || k > 62)
            return fail(p, op, "a shift by '%s': only shifts by a constant (0 to 62) have a "
                        "manifest form", r.s);
        two = (imp_xval){.prec = IMP_P_PRIMARY};
        snprintf(two.s, sizeof two.s, "%lld", 1LL << k);
        if (binary(p, &l, left ? "*" : "/", &two, IMP_P_TERM, op, out) < 0)
            return -1;
    }
    return 0;
}

static int rel(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"<=", ">=", "<", ">"};
    return level(p, out, shift, ops, 4, IMP_P_REL);
}

static int eq(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"==", "!="};
    if (level(p, out, rel, ops, 2, IMP_P_EQ) < 0)
        return -1;
    if (at(p, "&") || at(p, "|") || at(p, "^"))
        return fail(p, p->i, "the bitwise operator '%c' has no manifest form",
                    p->s->text[p->s->tok[p->i].at]);
    return 0;
}

static int land(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"&&"};
    return level(p, out, eq, ops, 1, IMP_P_AND);
}

static int lor(xp *p, imp_xval *out)
{
    static const char *const ops[] = {"||"};
    return level(p, out, land, ops, 1, IMP_P_OR);
}

/* The ':' of the '?' just passed: the first at depth 0 not taken by a
 * nested '?'; p->end when there is none. */
static int find_colon(const xp *p)
{
    int open = 0;
    for (int i = p->i; i < p->end; i++) {
        if (p->s->tok[i].match > i) {
            i = p->s->tok[i].match;
            continue;
        }
        open += imp_is(p->s, i, "?");
        if (imp_is(p->s, i, ":") && open-- == 0)
            return i;
    }
    return p->end;
}

static int cond(xp *p, imp_xval *out)
{
    imp_xval c, a, b;
    char cs[KILN_EXPR_MAX + 2], bs[KILN_EXPR_MAX + 2];
    if (lor(p, &c) < 0)
        return -1;
    if (!at(p, "?")) {
        *out = c;
        if (at(p, "=") || at(p, "+=") || at(p, "-=") || at(p, "*=") || at(p, "/="))
            return fail(p, p->i, "an assignment; the manifest computes, it does not assign");
        return 0;
    }
    int q = p->i++;
    int colon = find_colon(p);
    if (colon >= p->end)
        return fail(p, q, "'?' without ':'");
    xp mid = {p->s, p->i, colon, p->env, p->why, p->depth};
    if (cond(&mid, &a) < 0)
        return -1;
    if (mid.i != colon)
        return fail(p, mid.i, "unexpected token before ':'");
    p->i = colon + 1;
    if (cond(p, &b) < 0)
        return -1;
    if (no_addr(p, &c, q) < 0 || no_addr(p, &a, q) < 0 || no_addr(p, &b, q) < 0)
        return -1;
    wrapped(&c, IMP_P_OR, cs, sizeof cs);
    wrapped(&b, IMP_P_COND, bs, sizeof bs);
    if (set(p, out, IMP_P_COND, "%s ? %s : %s", cs, a.s, bs) < 0)
        return -1;
    out->uses = c.uses | a.uses | b.uses;
    out->boolean = a.boolean && b.boolean;
    return 0;
}

int imp_expr(const imp_src *s, int from, int to, const imp_xenv *env, imp_xval *out,
             imp_why *why)
{
    xp p = {s, from, to, env, why, 0};
    why->tok = from;
    why->msg[0] = '\0';
    if (from >= to)
        return fail(&p, from, "an empty expression");
    if (cond(&p, out) < 0)
        return -1;
    if (p.i != to)
        return fail(&p, p.i, "unexpected '%.*s'", (int)s->tok[p.i].len, s->text + s->tok[p.i].at);
    return 0;
}
