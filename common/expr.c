/* expr.c - the one parser of kiln's expressions, and their evaluator (expr.h).
 *
 * Cost, launch and shape fields in task files and manifests are expressions
 * such as `(2*rows*cols + cols) * sizeof(T)`.  A recursive-descent parser
 * turns the source into a tree (kiln_expr, one array of nodes); evaluating
 * walks the tree, and so does listing the names an expression uses, so a
 * task can be checked for names that are not dims.  porting/expr_c.c prints
 * the same tree as C.
 *
 *   cond    := or ('?' cond ':' cond)?
 *   or      := and ('||' and)*
 *   and     := equal ('&&' equal)*
 *   equal   := rel (('==' | '!=') rel)*
 *   rel     := sum (('<' | '<=' | '>' | '>=') sum)*
 *   sum     := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := ('-' | '+' | '!') unary | primary
 *   primary := number | name | func '(' args ')' | '(' cond ')'
 *
 * which is C's precedence and associativity for these operators (C's middle
 * operand of ?: is an expression; without a comma operator that is cond).
 * && and || evaluate their right operand only when the left does not decide,
 * and ?: only the operand it picks, as C does: `cols > 0 ? rows / cols : 0`
 * is no division by zero, and the C printer (porting/expr_c.c) keeps C's
 * own ?:, && and || so the exported code behaves the same.
 *
 * Every error names the problem, the 1-based column and quotes the source. */
#include "expr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"

#define QUOTE_MAX 256 /* longest part of the source quoted in a message */
#define SHOW_MAX 64   /* longest part of a name quoted in a message */

typedef struct parser {
    const char *src;
    size_t len;
    size_t pos;
    int depth;
    kiln_error *err;
    kiln_expr *e;
    int cap;           /* nodes allocated */
} parser;

/* ---- values ---------------------------------------------------------- */

static kiln_value int_value(int64_t i)
{
    kiln_value v = {0, i, 0.0};
    return v;
}

static kiln_value float_value(double f)
{
    kiln_value v = {1, 0, f};
    return v;
}

double kiln_value_to_double(kiln_value v)
{
    return v.is_float ? v.f : (double)v.i;
}

/* ---- errors ---------------------------------------------------------- */

static int quote_fail(kiln_error *err, const char *src, size_t len,
                      const char *what)
{
    int shown = len > QUOTE_MAX ? QUOTE_MAX : (int)len;
    return kiln_fail(err, "%s in \"%.*s%s\"", what, shown, src,
                     len > QUOTE_MAX ? "..." : "");
}

static int vfail_at(kiln_error *err, const char *src, size_t len, size_t at,
                    const char *fmt, va_list ap)
{
    char what[512];
    int n = vsnprintf(what, sizeof what, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof what)
        snprintf(what + n, sizeof what - (size_t)n, " at column %zu", at + 1);
    return quote_fail(err, src, len, what);
}

int kiln_expr_fail_at(const kiln_expr *e, size_t at, kiln_error *err,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(err, e->src, e->len, at, fmt, ap);
    va_end(ap);
    return -1;
}

__attribute__((format(printf, 3, 4)))
static int fail_at(parser *p, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(p->err, p->src, p->len, at, fmt, ap);
    va_end(ap);
    return -1;
}

static int show_len(size_t len)
{
    return len > SHOW_MAX ? SHOW_MAX : (int)len;
}

/* ---- lexing helpers -------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Skip whitespace; return the next character, or 0 at the end. */
static char peek(parser *p)
{
    while (p->pos < p->len && is_space(p->src[p->pos]))
        p->pos++;
    return p->pos < p->len ? p->src[p->pos] : 0;
}

static int accept(parser *p, char c)
{
    if (peek(p) != c)
        return 0;
    p->pos++;
    return 1;
}

static size_t scan_ident(parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && kiln_is_ident_char(p->src[p->pos]))
        p->pos++;
    return p->pos - start;
}

static int unexpected(parser *p, const char *context)
{
    char c = peek(p);
    if (c == 0)
        return fail_at(p, p->pos, "unexpected end of expression, %s", context);
    if (c > ' ' && c < 127)
        return fail_at(p, p->pos, "unexpected character '%c', %s", c,
                       context);
    return fail_at(p, p->pos, "unexpected character '\\x%02x', %s",
                   (unsigned)(unsigned char)c, context);
}

static int expect_close(parser *p, size_t open_at)
{
    if (accept(p, ')'))
        return 0;
    if (peek(p) == 0) {
        char what[128];
        snprintf(what, sizeof what,
                 "missing ')' at column %zu (to close '(' at column %zu)",
                 p->pos + 1, open_at + 1);
        return quote_fail(p->err, p->src, p->len, what);
    }
    return unexpected(p, "expected ')'");
}

/* ---- nodes ------------------------------------------------------------ */

/* A new node of kind for the token at src[at, at + len): its index, or -1
 * when the array is full (never: each node holds characters of its own, and
 * there are len + 1). */
static int add_node(parser *p, kiln_expr_kind kind, size_t at, size_t len)
{
    kiln_expr *e = p->e;
    if (e->n >= p->cap)
        return kiln_fail(p->err, "expression tree full");
    e->nodes[e->n] = (kiln_expr_node){.kind = kind, .a = -1, .b = -1, .c = -1,
                                      .next = -1, .at = at, .len = len};
    return e->n++;
}

/* A node over operands a and b (-1: none) for the operator at src[at, at + len). */
static int add_op(parser *p, kiln_expr_kind kind, kiln_expr_op op, size_t at,
                  size_t len, int a, int b)
{
    int k = add_node(p, kind, at, len);
    if (k >= 0) {
        p->e->nodes[k].op = op;
        p->e->nodes[k].a = a;
        p->e->nodes[k].b = b;
    }
    return k;
}

const char *kiln_expr_op_text(kiln_expr_op op)
{
    static const char *const text[] = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=",
                                       "==", "!=", "&&", "||"};
    return (unsigned)op < sizeof text / sizeof *text ? text[op] : "?";
}

/* ---- functions ------------------------------------------------------- */

/* 0 and *fn set for min, max, cdiv, gcd or lcm; 1 for sizeof; -1 for no
 * function. */
static int func_lookup(const char *name, size_t len, kiln_expr_fn *fn)
{
    static const struct { const char *name; kiln_expr_fn fn; } table[] = {
        {"min", KILN_EXPR_FN_MIN}, {"max", KILN_EXPR_FN_MAX},
        {"cdiv", KILN_EXPR_FN_CDIV}, {"gcd", KILN_EXPR_FN_GCD},
        {"lcm", KILN_EXPR_FN_LCM},
    };
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (strlen(table[k].name) == len && !memcmp(table[k].name, name, len)) {
            *fn = table[k].fn;
            return 0;
        }
    return len == 6 && !memcmp(name, "sizeof", 6) ? 1 : -1;
}

int kiln_expr_is_function(const char *name, size_t len)
{
    kiln_expr_fn fn;
    return func_lookup(name, len, &fn) >= 0;
}

/* min and max fold any number of arguments; the others take two. */
static int takes_two(kiln_expr_fn fn)
{
    return fn != KILN_EXPR_FN_MIN && fn != KILN_EXPR_FN_MAX;
}

static int parse_expr(parser *p);

static int parse_sizeof(parser *p)
{
    size_t open_at = p->pos - 1;
    if (!kiln_is_ident_start(peek(p)))
        return unexpected(p, "expected a type name in sizeof()");
    size_t type_at = p->pos, len = scan_ident(p);
    if (expect_close(p, open_at))
        return -1;
    return add_node(p, KILN_EXPR_SIZEOF, type_at, len);
}

/* The comma-separated arguments after '(', chained from the call's a. */
static int parse_args(parser *p, int call)
{
    size_t open_at = p->pos - 1;
    int last = -1;
    if (peek(p) == ')') {
        p->pos++;
        return 0;
    }
    do {
        int arg = parse_expr(p);
        if (arg < 0)
            return -1;
        if (last < 0)
            p->e->nodes[call].a = arg;
        else
            p->e->nodes[last].next = arg;
        last = arg;
        p->e->nodes[call].argc++;
    } while (accept(p, ','));
    return expect_close(p, open_at);
}

static int parse_call(parser *p, kiln_expr_fn fn, size_t at, size_t len)
{
    int call = add_node(p, KILN_EXPR_CALL, at, len);
    if (call < 0)
        return -1;
    p->e->nodes[call].fn = fn;
    if (parse_args(p, call))
        return -1;
    int argc = p->e->nodes[call].argc;
    if (argc < 2 || (takes_two(fn) && argc != 2))
        return fail_at(p, at, "wrong number of arguments: %.*s() takes %s, "
                       "got %d", (int)len, p->src + at,
                       takes_two(fn) ? "exactly 2" : "2 or more", argc);
    return call;
}

/* A name, or a function call when followed by '('. */
static int parse_ident(parser *p)
{
    size_t at = p->pos, len = scan_ident(p);
    const char *name = p->src + at;
    kiln_expr_fn fn = KILN_EXPR_FN_MIN;
    int kind = func_lookup(name, len, &fn);
    int call = accept(p, '(');
    if (!call && kind < 0)
        return add_node(p, KILN_EXPR_NAME, at, len);
    if (!call)
        return fail_at(p, p->pos, "expected '(' after function '%.*s'",
                       (int)len, name);
    if (kind < 0)
        return fail_at(p, at, "unknown function '%.*s'", show_len(len), name);
    return kind == 1 ? parse_sizeof(p) : parse_call(p, fn, at, len);
}

/* ---- numbers --------------------------------------------------------- */

static size_t skip_digits(parser *p, size_t i)
{
    while (i < p->len && is_digit(p->src[i]))
        i++;
    return i;
}

static int int_literal(parser *p, size_t start, size_t end)
{
    int64_t v = 0;
    for (size_t i = start; i < end; i++) {
        if (__builtin_mul_overflow(v, (int64_t)10, &v) ||
            __builtin_add_overflow(v, (int64_t)(p->src[i] - '0'), &v))
            return fail_at(p, start, "integer literal '%.*s' out of range",
                           show_len(end - start), p->src + start);
    }
    int k = add_node(p, KILN_EXPR_INT, start, end - start);
    if (k >= 0)
        p->e->nodes[k].value = int_value(v);
    return k;
}

static int float_literal(parser *p, size_t start, size_t end)
{
    char buf[KILN_EXPR_MAX_LEN + 1];
    size_t n = end - start;
    memcpy(buf, p->src + start, n);
    buf[n] = '\0';
    double f = strtod(buf, NULL);
    if (!isfinite(f))
        return fail_at(p, start, "float literal '%.*s' out of range",
                       show_len(n), buf);
    int k = add_node(p, KILN_EXPR_FLOAT, start, n);
    if (k >= 0)
        p->e->nodes[k].value = float_value(f);
    return k;
}

static int parse_number(parser *p)
{
    size_t start = p->pos, i = skip_digits(p, start);
    int is_float = 0;
    if (i < p->len && p->src[i] == '.') {
        is_float = 1;
        i = skip_digits(p, i + 1);
    }
    if (i < p->len && (p->src[i] == 'e' || p->src[i] == 'E')) {
        is_float = 1;
        i++;
        if (i < p->len && (p->src[i] == '+' || p->src[i] == '-'))
            i++;
        if (i >= p->len || !is_digit(p->src[i]))
            return fail_at(p, i, "malformed exponent in number");
        i = skip_digits(p, i);
    }
    p->pos = i;
    return is_float ? float_literal(p, start, i) : int_literal(p, start, i);
}

/* ---- grammar --------------------------------------------------------- */

static int descend(parser *p, size_t at)
{
    if (p->depth >= KILN_EXPR_MAX_DEPTH)
        return fail_at(p, at, "expression nested deeper than %d levels",
                       KILN_EXPR_MAX_DEPTH);
    p->depth++;
    return 0;
}

static int parse_paren(parser *p)
{
    size_t open_at = p->pos++;
    if (descend(p, open_at))
        return -1;
    int k = parse_expr(p);
    if (k < 0 || expect_close(p, open_at))
        return -1;
    p->depth--;
    return k;
}

static int parse_primary(parser *p)
{
    char c = peek(p);
    char next = p->pos + 1 < p->len ? p->src[p->pos + 1] : 0;
    if (is_digit(c) || (c == '.' && is_digit(next)))
        return parse_number(p);
    if (kiln_is_ident_start(c)) {
        if (descend(p, p->pos))
            return -1;
        int k = parse_ident(p);
        p->depth--;
        return k;
    }
    if (c == '(')
        return parse_paren(p);
    return unexpected(p, "expected a number, name or '('");
}

static int parse_unary(parser *p)
{
    char c = peek(p);
    if (c != '-' && c != '+' && c != '!')
        return parse_primary(p);
    size_t at = p->pos++;
    if (descend(p, at))
        return -1;
    int k = parse_unary(p);
    if (k < 0)
        return -1;
    p->depth--;
    if (c == '+')
        return k;
    return add_op(p, c == '-' ? KILN_EXPR_NEG : KILN_EXPR_NOT, KILN_EXPR_SUB, at, 1, k, -1);
}

/* One precedence level's operators; two-character ones come before their
 * one-character prefixes ("<=" before "<") so the longest one matches. */
typedef struct op_token {
    const char *text;
    kiln_expr_op op;
} op_token;

static const op_token OR_OPS[] = {{"||", KILN_EXPR_OR}, {NULL, 0}};
static const op_token AND_OPS[] = {{"&&", KILN_EXPR_AND}, {NULL, 0}};
static const op_token EQUAL_OPS[] = {{"==", KILN_EXPR_EQ}, {"!=", KILN_EXPR_NE}, {NULL, 0}};
static const op_token REL_OPS[] = {{"<=", KILN_EXPR_LE}, {">=", KILN_EXPR_GE},
                                   {"<", KILN_EXPR_LT}, {">", KILN_EXPR_GT}, {NULL, 0}};
static const op_token SUM_OPS[] = {{"+", KILN_EXPR_ADD}, {"-", KILN_EXPR_SUB}, {NULL, 0}};
static const op_token TERM_OPS[] = {{"*", KILN_EXPR_MUL}, {"/", KILN_EXPR_DIV},
                                    {"%", KILN_EXPR_MOD}, {NULL, 0}};

/* The operator of ops at the next token, or NULL. */
static const op_token *match_op(parser *p, const op_token *ops)
{
    if (!peek(p))
        return NULL;
    for (; ops->text; ops++) {
        size_t n = strlen(ops->text);
        if (p->pos + n <= p->len && !memcmp(p->src + p->pos, ops->text, n))
            return ops;
    }
    return NULL;
}

/* One level of left-associative binary operators (ops), over next. */
static int parse_binary(parser *p, const op_token *ops, int (*next)(parser *))
{
    int k = next(p);
    while (k >= 0) {
        const op_token *t = match_op(p, ops);
        if (!t)
            return k;
        size_t at = p->pos, n = strlen(t->text);
        p->pos += n;
        int rhs = next(p);
        k = rhs < 0 ? -1 : add_op(p, KILN_EXPR_BINARY, t->op, at, n, k, rhs);
    }
    return -1;
}

static int parse_term(parser *p)
{
    return parse_binary(p, TERM_OPS, parse_unary);
}

static int parse_sum(parser *p)
{
    return parse_binary(p, SUM_OPS, parse_term);
}

static int parse_rel(parser *p)
{
    return parse_binary(p, REL_OPS, parse_sum);
}

static int parse_equal(parser *p)
{
    return parse_binary(p, EQUAL_OPS, parse_rel);
}

static int parse_and(parser *p)
{
    return parse_binary(p, AND_OPS, parse_equal);
}

static int parse_or(parser *p)
{
    return parse_binary(p, OR_OPS, parse_and);
}

/* c ? a : b, right associative; a nested ?: counts toward the depth limit,
 * so a chain of them cannot exhaust the stack. */
static int parse_expr(parser *p)
{
    int k = parse_or(p);
    if (k < 0 || peek(p) != '?')
        return k;
    size_t at = p->pos++;
    if (descend(p, at))
        return -1;
    int then = parse_expr(p);
    if (then < 0)
        return -1;
    if (!accept(p, ':')) {
        char context[64];
        snprintf(context, sizeof context, "expected ':' for the '?' at column %zu", at + 1);
        return unexpected(p, context);
    }
    int other = parse_expr(p);
    if (other < 0)
        return -1;
    p->depth--;
    int c = add_op(p, KILN_EXPR_COND, KILN_EXPR_ADD, at, 1, k, then);
    if (c >= 0)
        p->e->nodes[c].c = other;
    return c;
}

/* ---- the tree ---------------------------------------------------------- */

/* Length of src, or KILN_EXPR_MAX_LEN + 1 when it is longer than allowed. */
static size_t bounded_len(const char *src)
{
    size_t n = 0;
    while (n <= KILN_EXPR_MAX_LEN && src[n])
        n++;
    return n;
}

/* What a stray '=', '&' or '|' was probably meant to be. */
static const char *operator_hint(char c)
{
    if (c == '=')
        return " (compare with '==')";
    if (c == '&' || c == '|')
        return " (there are no bitwise operators; '&&' and '||' are logical)";
    return "";
}

static int parse_all(parser *p)
{
    if (peek(p) == 0)
        return fail_at(p, 0, "empty expression");
    int root = parse_expr(p);
    if (root < 0)
        return -1;
    char c = peek(p);
    if (c == 0)
        return root;
    if (c > ' ' && c < 127)
        return fail_at(p, p->pos, "unexpected trailing input '%c'%s", c, operator_hint(c));
    return fail_at(p, p->pos, "unexpected trailing input '\\x%02x'",
                   (unsigned)(unsigned char)c);
}

int kiln_expr_parse(const char *src, kiln_expr *e, kiln_error *err)
{
    memset(e, 0, sizeof *e);
    e->root = -1;
    if (!src)
        return kiln_fail(err, "empty expression (NULL)");
    size_t len = bounded_len(src);
    if (len > KILN_EXPR_MAX_LEN)
        return quote_fail(err, src, len,
                          "expression longer than 1024 characters");
    char *copy = malloc(len + 1);
    e->nodes = malloc((len + 1) * sizeof *e->nodes);
    if (!copy || !e->nodes) {
        free(copy);
        return kiln_fail(err, "out of memory");
    }
    memcpy(copy, src, len + 1);
    e->src = copy;
    e->len = len;
    parser p = {copy, len, 0, 0, err, e, (int)len + 1};
    e->root = parse_all(&p);
    return e->root < 0 ? -1 : 0;
}

void kiln_expr_free(kiln_expr *e)
{
    if (!e)
        return;
    free((char *)e->src);
    free(e->nodes);
    memset(e, 0, sizeof *e);
    e->root = -1;
}

/* ---- evaluation -------------------------------------------------------- */

typedef struct evaluator {
    const kiln_expr *e;
    const kiln_expr_env *env;
    kiln_error *err;
} evaluator;

__attribute__((format(printf, 3, 4)))
static int eval_fail(evaluator *ev, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(ev->err, ev->e->src, ev->e->len, at, fmt, ap);
    va_end(ap);
    return -1;
}

static int int_div(evaluator *ev, kiln_expr_op op, size_t at, int64_t a,
                   int64_t b, int64_t *r)
{
    if (b == 0)
        return eval_fail(ev, at, "%s by zero",
                         op == KILN_EXPR_MOD ? "modulo" : "division");
    if (a == INT64_MIN && b == -1) {
        if (op == KILN_EXPR_MOD) {
            *r = 0;
            return 0;
        }
        return eval_fail(ev, at, "integer overflow in '/'");
    }
    *r = op == KILN_EXPR_MOD ? a % b : a / b;
    return 0;
}

/* A comparison's 0 or 1 (op is one of < <= > >= == !=). */
static int64_t compare(kiln_expr_op op, int64_t a, int64_t b)
{
    switch (op) {
    case KILN_EXPR_LT: return a < b;
    case KILN_EXPR_LE: return a <= b;
    case KILN_EXPR_GT: return a > b;
    case KILN_EXPR_GE: return a >= b;
    case KILN_EXPR_EQ: return a == b;
    default: return a != b;
    }
}

static int is_comparison(kiln_expr_op op)
{
    return op >= KILN_EXPR_LT && op <= KILN_EXPR_NE;
}

static int apply_int(evaluator *ev, kiln_expr_op op, size_t at, int64_t a,
                     int64_t b, kiln_value *out)
{
    int64_t r = 0;
    int overflow = 0;
    switch (op) {
    case KILN_EXPR_ADD: overflow = __builtin_add_overflow(a, b, &r); break;
    case KILN_EXPR_SUB: overflow = __builtin_sub_overflow(a, b, &r); break;
    case KILN_EXPR_MUL: overflow = __builtin_mul_overflow(a, b, &r); break;
    case KILN_EXPR_DIV:
    case KILN_EXPR_MOD:
        if (int_div(ev, op, at, a, b, &r))
            return -1;
        break;
    default:
        r = compare(op, a, b);
    }
    if (overflow)
        return eval_fail(ev, at, "integer overflow in '%s'", kiln_expr_op_text(op));
    *out = int_value(r);
    return 0;
}

static int check_float(evaluator *ev, size_t at, double r, kiln_value *out)
{
    if (!isfinite(r))
        return eval_fail(ev, at, "floating-point overflow (result %g)", r);
    *out = float_value(r);
    return 0;
}

static int apply_float(evaluator *ev, kiln_expr_op op, size_t at, double a,
                       double b, kiln_value *out)
{
    switch (op) {
    case KILN_EXPR_ADD: return check_float(ev, at, a + b, out);
    case KILN_EXPR_SUB: return check_float(ev, at, a - b, out);
    case KILN_EXPR_MUL: return check_float(ev, at, a * b, out);
    default:
        if (b == 0.0)
            return eval_fail(ev, at, "division by zero");
        return check_float(ev, at, a / b, out);
    }
}

/* % and the comparisons take integers only: the manifest and the C
 * printer compute in int64, and a float comparison would bring rounding
 * questions no launch needs. */
static int apply_binary(evaluator *ev, kiln_expr_op op, size_t at, kiln_value a,
                        kiln_value b, kiln_value *out)
{
    if (!a.is_float && !b.is_float)
        return apply_int(ev, op, at, a.i, b.i, out);
    if (op == KILN_EXPR_MOD || is_comparison(op))
        return eval_fail(ev, at, "'%s' needs integer operands, got a float",
                         kiln_expr_op_text(op));
    return apply_float(ev, op, at, kiln_value_to_double(a),
                       kiln_value_to_double(b), out);
}

static int negate(evaluator *ev, size_t at, kiln_value v, kiln_value *out)
{
    if (v.is_float) {
        *out = float_value(-v.f);
        return 0;
    }
    int64_t r;
    if (__builtin_sub_overflow((int64_t)0, v.i, &r))
        return eval_fail(ev, at, "integer overflow in unary '-'");
    *out = int_value(r);
    return 0;
}

static void min_max(kiln_expr_fn fn, kiln_value a, kiln_value b,
                    kiln_value *out)
{
    if (!a.is_float && !b.is_float) {
        int take_b = fn == KILN_EXPR_FN_MIN ? b.i < a.i : b.i > a.i;
        *out = take_b ? b : a;
        return;
    }
    double x = kiln_value_to_double(a), y = kiln_value_to_double(b);
    *out = float_value(fn == KILN_EXPR_FN_MIN ? fmin(x, y) : fmax(x, y));
}

static int cdiv(evaluator *ev, size_t at, kiln_value a, kiln_value b,
                kiln_value *out)
{
    if (a.is_float || b.is_float) {
        double y = kiln_value_to_double(b);
        if (y == 0.0)
            return eval_fail(ev, at, "division by zero in cdiv()");
        return check_float(ev, at, ceil(kiln_value_to_double(a) / y), out);
    }
    if (b.i == 0)
        return eval_fail(ev, at, "division by zero in cdiv()");
    if (a.i == INT64_MIN && b.i == -1)
        return eval_fail(ev, at, "integer overflow in cdiv()");
    int64_t q = a.i / b.i, r = a.i % b.i;
    if (r != 0 && (r > 0) == (b.i > 0))
        q++; /* cannot overflow: |q| < |a| here */
    *out = int_value(q);
    return 0;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* Euclid's algorithm: at most about 92 steps for 64-bit operands. */
static uint64_t ugcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* gcd and lcm of the magnitudes, so the result is never negative; a zero
 * operand gives gcd = the other's magnitude and lcm = 0 (as C++17's
 * std::gcd and std::lcm). 2^63 (gcd(INT64_MIN, 0), lcm(INT64_MIN, 1)) and
 * any larger lcm do not fit: an overflow, as for '*'. */
static int gcd_lcm(evaluator *ev, const kiln_expr_node *nd, kiln_value a,
                   kiln_value b, kiln_value *out)
{
    const char *name = nd->fn == KILN_EXPR_FN_GCD ? "gcd" : "lcm";
    if (a.is_float || b.is_float)
        return eval_fail(ev, nd->at, "%s() needs integer arguments, got a float", name);
    uint64_t x = magnitude(a.i), y = magnitude(b.i), r = ugcd(x, y);
    int overflow = 0;
    if (nd->fn == KILN_EXPR_FN_LCM)
        overflow = r != 0 && __builtin_mul_overflow(x / r, y, &r);
    if (overflow || r > (uint64_t)INT64_MAX)
        return eval_fail(ev, nd->at, "integer overflow in %s()", name);
    *out = int_value((int64_t)r);
    return 0;
}

static int eval_node(evaluator *ev, int k, kiln_value *out);

/* min/max fold their arguments left to right; the others take their two. */
static int eval_call(evaluator *ev, const kiln_expr_node *nd, kiln_value *out)
{
    kiln_value first, v;
    int arg = nd->a;
    if (eval_node(ev, arg, &first))
        return -1;
    *out = first;
    for (arg = ev->e->nodes[arg].next; arg >= 0; arg = ev->e->nodes[arg].next) {
        if (eval_node(ev, arg, &v))
            return -1;
        if (nd->fn == KILN_EXPR_FN_CDIV)
            return cdiv(ev, nd->at, first, v, out);
        if (takes_two(nd->fn))
            return gcd_lcm(ev, nd, first, v, out);
        min_max(nd->fn, *out, v, out);
    }
    return 0;
}

/* The integer value of node k, or -1 (what: the operator, for the message). */
static int eval_int(evaluator *ev, int k, const char *what, size_t at, int64_t *out)
{
    kiln_value v;
    if (eval_node(ev, k, &v))
        return -1;
    if (v.is_float)
        return eval_fail(ev, at, "%s needs an integer, got a float", what);
    *out = v.i;
    return 0;
}

/* && and ||: the right operand only when the left does not decide, as in
 * C, so `cols > 0 && rows / cols > 2` cannot divide by zero. */
static int eval_logic(evaluator *ev, const kiln_expr_node *nd, kiln_value *out)
{
    int64_t a = 0, b = 0;
    const char *what = nd->op == KILN_EXPR_AND ? "'&&'" : "'||'";
    if (eval_int(ev, nd->a, what, nd->at, &a))
        return -1;
    if ((a != 0) == (nd->op == KILN_EXPR_OR)) {
        *out = int_value(a != 0);
        return 0;
    }
    if (eval_int(ev, nd->b, what, nd->at, &b))
        return -1;
    *out = int_value(b != 0);
    return 0;
}

/* c ? a : b evaluates only the operand it picks. */
static int eval_cond(evaluator *ev, const kiln_expr_node *nd, kiln_value *out)
{
    int64_t c = 0;
    if (eval_int(ev, nd->a, "the condition of '?'", nd->at, &c))
        return -1;
    return eval_node(ev, c != 0 ? nd->b : nd->c, out);
}

static int eval_leaf(evaluator *ev, const kiln_expr_node *nd, kiln_value *out)
{
    const kiln_expr_env *env = ev->env;
    const char *text = ev->e->src + nd->at;
    int64_t bytes = 0;
    switch (nd->kind) {
    case KILN_EXPR_NAME:
        if (env && env->lookup && env->lookup(env->ctx, text, nd->len, out) == 0)
            return 0;
        return eval_fail(ev, nd->at, "unknown name '%.*s'", show_len(nd->len),
                         text);
    case KILN_EXPR_SIZEOF:
        if (!env || !env->size_of ||
            env->size_of(env->ctx, text, nd->len, &bytes) != 0)
            return eval_fail(ev, nd->at, "unknown type '%.*s' in sizeof()",
                             show_len(nd->len), text);
        *out = int_value(bytes);
        return 0;
    default:
        *out = nd->value;
        return 0;
    }
}

static int eval_node(evaluator *ev, int k, kiln_value *out)
{
    const kiln_expr_node *nd = &ev->e->nodes[k];
    kiln_value a, b;
    switch (nd->kind) {
    case KILN_EXPR_NEG:
        return eval_node(ev, nd->a, &a) || negate(ev, nd->at, a, out) ? -1 : 0;
    case KILN_EXPR_NOT:
        if (eval_int(ev, nd->a, "'!'", nd->at, &a.i))
            return -1;
        *out = int_value(a.i == 0);
        return 0;
    case KILN_EXPR_COND:
        return eval_cond(ev, nd, out);
    case KILN_EXPR_BINARY:
        if (nd->op == KILN_EXPR_AND || nd->op == KILN_EXPR_OR)
            return eval_logic(ev, nd, out);
        if (eval_node(ev, nd->a, &a) || eval_node(ev, nd->b, &b))
            return -1;
        return apply_binary(ev, nd->op, nd->at, a, b, out);
    case KILN_EXPR_CALL:
        return eval_call(ev, nd, out);
    default:
        return eval_leaf(ev, nd, out);
    }
}

/* ---- entry points ---------------------------------------------------- */

int kiln_expr_eval(const char *src, const kiln_expr_env *env, kiln_value *out,
                   kiln_error *err)
{
    kiln_expr e;
    kiln_value v;
    int rc = kiln_expr_parse(src, &e, err);
    if (rc == 0) {
        evaluator ev = {&e, env, err};
        rc = eval_node(&ev, e.root, &v);
    }
    kiln_expr_free(&e);
    if (rc == 0 && out)
        *out = v;
    return rc;
}

static int check_int(const char *src, kiln_value v, int64_t *out,
                     kiln_error *err)
{
    size_t len = bounded_len(src);
    char what[128];
    if (!v.is_float) {
        *out = v.i;
        if (v.i >= 0)
            return 0;
        snprintf(what, sizeof what, "value %lld is negative", (long long)v.i);
    } else if (!isfinite(v.f) || v.f != floor(v.f)) {
        snprintf(what, sizeof what, "value %.17g is not an integer", v.f);
    } else if (v.f < 0) {
        snprintf(what, sizeof what, "value %.17g is negative", v.f);
    } else if (v.f >= 9223372036854775808.0) {
        snprintf(what, sizeof what, "value %.17g does not fit in int64", v.f);
    } else {
        *out = (int64_t)v.f;
        return 0;
    }
    return quote_fail(err, src, len, what);
}

int kiln_expr_eval_int(const char *src, const kiln_expr_env *env, int64_t *out,
                       kiln_error *err)
{
    kiln_value v;
    int64_t r = 0;
    if (kiln_expr_eval(src, env, &v, err) || check_int(src, v, &r, err))
        return -1;
    if (out)
        *out = r;
    return 0;
}

/* Add the name of node nd to names[0..*count) unless it is there. */
static int record_name(const kiln_expr *e, const kiln_expr_node *nd,
                       char names[][64], int cap, int *count, kiln_error *err)
{
    const char *name = e->src + nd->at;
    size_t len = nd->len;
    if (len > KILN_EXPR_NAME_MAX)
        return kiln_expr_fail_at(e, nd->at, err,
                                 "name '%.*s...' longer than %d characters",
                                 show_len(len), name, KILN_EXPR_NAME_MAX);
    for (int k = 0; k < *count; k++)
        if (strlen(names[k]) == len && !memcmp(names[k], name, len))
            return 0;
    if (*count >= cap)
        return kiln_expr_fail_at(e, nd->at, err, "too many names (more than %d)",
                                 cap);
    memcpy(names[*count], name, len);
    names[*count][len] = '\0';
    ++*count;
    return 0;
}

int kiln_expr_names(const char *src, char names[][64], int cap,
                    kiln_error *err)
{
    kiln_expr e;
    int count = 0, rc = kiln_expr_parse(src, &e, err);
    for (int k = 0; rc == 0 && k < e.n; k++)   /* nodes are in source order */
        if (e.nodes[k].kind == KILN_EXPR_NAME)
            rc = record_name(&e, &e.nodes[k], names, cap < 0 ? 0 : cap,
                             &count, err);
    kiln_expr_free(&e);
    return rc < 0 ? -1 : count;
}
