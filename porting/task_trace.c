/* task_trace.c - `kiln task from-trace TRACE.json [-o DIR] [--prefix NAME]`:
 * which of a model's ops kiln has tasks for, ranked by GPU time, read from
 * a PyTorch profiler Chrome trace (record_shapes=True), and a copy of each
 * such task with a `model` group at the shapes the trace saw.
 *
 * Kernel time reaches an op through the kernel's correlation id: the
 * cuda_runtime launch with that id carries the "External id" of the CPU op
 * that launched it. It is then credited to the outermost aten:: op around
 * that one (aten::linear, not the aten::mm inside it), or to the decomposed
 * RMSNorm it lies in (a with_modules scope named *RMSNorm*, else the
 * pow -> mean -> add -> rsqrt -> mul -> mul sequence). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_exit.h"
#include "fileutil.h"
#include "task.h"
#include "task_new.h"
#include "task_trace.h"

#define TRACE_LIMIT (1ull << 30)
#define MAX_SHAPES 6   /* visible shapes of a written model group */

typedef struct op {
    const char *name;
    double ts, dur, gpu;   /* gpu: kernel time credited to it, us */
    long ext;
    int tid, parent, top, cls;   /* top: the index its time is credited to */
    long dims[4][KILN_MAX_DIMS];
    int rank[4], nin;
} op;

typedef struct row {   /* one (label, task, shape) line of the table */
    char label[64], task[32], shape[64];
    long dims[3];
    int ndims, count;
    double time;
} row;

typedef struct trace {
    const char *file;
    op *ops;
    int nops;
    row *rows;
    int nrows;
    double total;
    int kernels;
} trace;

static int bad(const char *file, const char *what)
{
    fprintf(stderr, "kiln task from-trace: %s: %s\n", file, what);
    return KILN_EXIT_BAD_INPUT;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void read_dims(op *p, const cJSON *in)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, in) {
        if (p->nin == 4)
            break;
        int r = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, d) {
            if (r < KILN_MAX_DIMS && cJSON_IsNumber(x))
                p->dims[p->nin][r++] = (long)x->valuedouble;
        }
        p->rank[p->nin++] = cJSON_IsArray(d) ? r : -1;
    }
}

/* The CPU ops, sorted by start; -1 with the message printed. */
static int cmp_ts(const void *a, const void *b)
{
    const op *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : x->dur > y->dur ? -1 : x->dur < y->dur;
}

static int collect_ops(trace *t, const cJSON *events)
{
    int n = cJSON_GetArraySize(events), k = 0, aten = 0, shaped = 0;
    t->ops = calloc((size_t)n + 1, sizeof *t->ops);
    if (!t->ops)
        return bad(t->file, "out of memory"), -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsString(cat) || !cJSON_IsString(nm) || strcmp(cat->valuestring, "cpu_op") != 0)
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (!cJSON_IsObject(args)) {
            char msg[256];
            snprintf(msg, sizeof msg, "cpu_op event '%.80s' has no \"args\" (record the trace "
                     "with torch.profiler's record_shapes=True)", nm->valuestring);
            return bad(t->file, msg), -1;
        }
        op *p = &t->ops[k++];
        p->name = nm->valuestring;
        p->ts = num(e, "ts");
        p->dur = num(e, "dur");
        p->tid = (int)num(e, "tid");
        p->ext = (long)num(args, "External id");
        p->parent = p->top = p->cls = -1;
        const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
        read_dims(p, dims);
        aten += strncmp(p->name, "aten::", 6) == 0;
        shaped += strncmp(p->name, "aten::", 6) == 0 && cJSON_IsArray(dims);
    }
    if (aten == 0)
        return bad(t->file, "no aten:: CPU ops (\"cat\": \"cpu_op\"): not a PyTorch profiler "
                   "trace of a model"), -1;
    if (shaped == 0)
        return bad(t->file, "no aten:: op has \"Input Dims\" in its args (record the trace "
                   "with torch.profiler's record_shapes=True)"), -1;
    t->nops = k;
    qsort(t->ops, (size_t)k, sizeof *t->ops, cmp_ts);
    return 0;
}

/* Each op's parent: the innermost op of its thread whose span holds it. */
static void nest(trace *t)
{
    int *stack = malloc(sizeof(int) * ((size_t)t->nops + 1)), sp = 0;
    if (!stack)
        return;
    for (int i = 0; i < t->nops; i++) {
        op *p = &t->ops[i];
        while (sp > 0) {
            op *q = &t->ops[stack[sp - 1]];
            if (q->tid == p->tid && p->ts >= q->ts && p->ts + p->dur <= q->ts + q->dur + 0.001)
                break;
            sp--;
        }
        p->parent = sp ? stack[sp - 1] : -1;
        stack[sp++] = i;
    }
    free(stack);
}

static int is_aten(const op *p, const char *name)
{
    return strncmp(p->name, "aten::", 6) == 0 && (!name || strcmp(p->name + 6, name) == 0);
}

/* Every op's `top`: its outermost aten:: ancestor (itself if none). */
static void tops(trace *t)
{
    for (int i = 0; i < t->nops; i++) {
        int top = is_aten(&t->ops[i], NULL) ? i : -1;
        for (int a = t->ops[i].parent; a >= 0; a = t->ops[a].parent)
            if (is_aten(&t->ops[a], NULL))
                top = a;
        t->ops[i].top = top;
    }
}

/* Kernel time, by correlation id -> launch's External id -> op. Real
 * traces hold ~1e5 events, so both steps are binary searches in sorted
 * (key, value) pairs. */
typedef struct pair {
    double key;
    long val;
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static long lookup(const pair *p, int n, double key)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (p[mid].key == key)
            return p[mid].val;
        if (p[mid].key < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int is_cat(const cJSON *e, const char *cat)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cat");
    return cJSON_IsString(c) && strcmp(c->valuestring, cat) == 0;
}

static void credit_kernels(trace *t, const cJSON *events)
{
    int n = cJSON_GetArraySize(events), nl = 0;
    pair *launch = malloc(sizeof(pair) * ((size_t)n + 1));   /* correlation -> External id */
    pair *opx = malloc(sizeof(pair) * ((size_t)t->nops + 1));   /* External id -> op index */
    const cJSON *e;
    if (launch && opx) {
        cJSON_ArrayForEach(e, events) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");
            if (is_cat(e, "cuda_runtime") && num(a, "correlation") >= 0)
                launch[nl++] = (pair){num(a, "correlation"), (long)num(a, "External id")};
        }
        for (int i = 0; i < t->nops; i++)
            opx[i] = (pair){(double)t->ops[i].ext, i};
        qsort(launch, (size_t)nl, sizeof *launch, cmp_pair);
        qsort(opx, (size_t)t->nops, sizeof *opx, cmp_pair);
        cJSON_ArrayForEach(e, events) {
            if (!is_cat(e, "kernel"))
                continue;
            t->kernels++;
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");
            long ext = (long)num(a, "External id");
            if (ext < 0)
                ext = lookup(launch, nl, num(a, "correlation"));
            long i = ext >= 0 ? lookup(opx, t->nops, (double)ext) : -1;
            if (i >= 0 && num(e, "dur") > 0)
                t->ops[i].gpu += num(e, "dur");
        }
    }
    free(launch);
    free(opx);
    if (t->kernels == 0)   /* no GPU: the CPU ops' own time ranks them */
        for (int i = 0; i < t->nops; i++)
            t->ops[i].gpu = t->ops[i].top == i ? t->ops[i].dur : 0;
}

/* The top-level aten op at or after index i (of the same thread as th), skipping
 * dtype casts; -1 past the end. */
static int next_top(const trace *t, int i, int th)
{
    for (; i < t->nops; i++) {
        const op *p = &t->ops[i];
        if (p->top == i && p->tid == th && !is_aten(p, "to") && !is_aten(p, "_to_copy") &&
            !is_aten(p, "copy_"))
            return i;
    }
    return -1;
}

/* The top-level aten::to / _to_copy just before op i, of its thread and
 * shape, not yet taken: -1 if none. */
static int cast_before(const trace *t, int i)
{
    for (int j = i - 1; j >= 0; j--) {
        const op *p = &t->ops[j];
        if (p->top != j || p->tid != t->ops[i].tid)
            continue;
        int same = p->cls == -1 && p->rank[0] == t->ops[i].rank[0] && p->rank[0] > 0 &&
                   !memcmp(p->dims[0], t->ops[i].dims[0], sizeof(long) * (size_t)p->rank[0]);
        return (is_aten(p, "to") || is_aten(p, "_to_copy")) && same ? j : -1;
    }
    return -1;
}

/* Mark the tops of a decomposed RMSNorm: those inside a python_function
 * scope named *RMSNorm*, else the op sequence. cls of the first = itself,
 * of the others = the first's index. */
static void rmsnorm_scopes(trace *t, const cJSON *events)
{
    const cJSON *e;
    int found = 0;
    cJSON_ArrayForEach(e, events) {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "python_function") != 0 ||
            !cJSON_IsString(nm) || !strstr(nm->valuestring, "RMSNorm"))
            continue;
        double ts = num(e, "ts"), end = ts + num(e, "dur");
        int first = -1;
        for (int pass = 0; pass < 2; pass++)   /* pow (or rms_norm) is the start: its shape */
            for (int i = 0; i < t->nops; i++) {
                op *p = &t->ops[i];
                if (p->top != i || p->ts < ts || p->ts + p->dur > end + 0.001 || p->cls >= 0)
                    continue;
                if (pass == 0 && first < 0 && (is_aten(p, "pow") || is_aten(p, "rms_norm")))
                    first = i;
                if (pass == 1 && first >= 0)
                    p->cls = first, found = 1;
            }
    }
    if (found)
        return;
    static const char *seq[] = {"pow", "mean", "add", "rsqrt", "mul", "mul"};
    for (int i = 0; i < t->nops; i++) {
        if (t->ops[i].top != i || !is_aten(&t->ops[i], "pow") || t->ops[i].cls >= 0)
            continue;
        int idx[6], j = i, k;
        for (k = 0; k < 6 && j >= 0; k++) {
            idx[k] = j;
            if (!is_aten(&t->ops[j], seq[k]))
                break;
            j = next_top(t, j + 1, t->ops[i].tid);
        }
        if (k < 6)
            continue;
        for (k = 0; k < 6; k++)
            t->ops[idx[k]].cls = i;
        for (int x = idx[0]; x <= idx[5]; x++)   /* the casts between them too */
            if (t->ops[x].top == x && t->ops[x].cls < 0 && t->ops[x].tid == t->ops[i].tid)
                t->ops[x].cls = i;
        int c = cast_before(t, i);   /* and the cast to f32 ahead, as a module scope has it */
        if (c >= 0)
            t->ops[c].cls = i;
    }
}

static long lead(const op *p, int in)
{
    long r = 1;
    for (int d = 0; d + 1 < p->rank[in]; d++)
        r *= p->dims[in][d];
    return r;
}

static long last(const op *p, int in)
{
    return p->rank[in] > 0 ? p->dims[in][p->rank[in] - 1] : 0;
}

static void set2(row *r, const char *task, long a, long b)
{
    snprintf(r->task, sizeof r->task, "%s", task);
    r->ndims = 2;
    r->dims[0] = a;
    r->dims[1] = b;
    snprintf(r->shape, sizeof r->shape, "%ldx%ld", a, b);
}

/* gemm's M N K from a linear (x, w[N][K]), mm (a[M][K], b[K][N]), addmm
 * (bias, a, b) or matmul with one 2-D operand; 0 when it is batched. */
static int gemm_dims(const op *p, row *r)
{
    long m, n, k;
    if (is_aten(p, "linear") && p->nin >= 2 && p->rank[1] == 2) {
        m = lead(p, 0), k = last(p, 0), n = p->dims[1][0];
    } else if ((is_aten(p, "mm") || is_aten(p, "matmul")) && p->nin >= 2 && p->rank[1] == 2 &&
               p->rank[0] >= 2) {
        m = lead(p, 0), k = last(p, 0), n = p->dims[1][1];
    } else if (is_aten(p, "addmm") && p->nin >= 3 && p->rank[2] == 2) {
        m = p->dims[1][0], k = p->dims[1][1], n = p->dims[2][1];
    } else {
        return 0;
    }
    snprintf(r->task, sizeof r->task, "gemm");
    r->ndims = 3;
    r->dims[0] = m, r->dims[1] = n, r->dims[2] = k;
    snprintf(r->shape, sizeof r->shape, "M=%ld N=%ld K=%ld", m, n, k);
    return 1;
}

/* What the top-level op i is: r's label, task ("" for none) and shape. */
static void classify(const trace *t, int i, row *r)
{
    const op *p = &t->ops[i];
    memset(r, 0, sizeof *r);
    snprintf(r->label, sizeof r->label, "%s", p->name);
    if (p->cls == i) {
        snprintf(r->label, sizeof r->label, is_aten(p, "rms_norm") ? "aten::rms_norm"
                 : "RMSNorm (pow..mul)");
        set2(r, "rmsnorm", lead(p, 0), last(p, 0));
    } else if (is_aten(p, "rms_norm")) {
        set2(r, "rmsnorm", lead(p, 0), last(p, 0));
    } else if (is_aten(p, "softmax") || is_aten(p, "_softmax")) {
        set2(r, "softmax", lead(p, 0), last(p, 0));
    } else if (is_aten(p, "layer_norm") || is_aten(p, "native_layer_norm")) {
        set2(r, "layernorm", lead(p, 0), last(p, 0));
    } else if (is_aten(p, "cross_entropy_loss") || is_aten(p, "log_softmax")) {
        set2(r, "cross_entropy", lead(p, 0), last(p, 0));
    } else if (!gemm_dims(p, r)) {
        if ((is_aten(p, "matmul") || is_aten(p, "bmm")) && p->nin >= 2 && p->rank[1] >= 3)
            snprintf(r->label, sizeof r->label, "%s (attention)", p->name);
        r->shape[0] = '\0';
        for (int d = 0; d < p->rank[0] && p->nin > 0; d++)
            snprintf(r->shape + strlen(r->shape), sizeof r->shape - strlen(r->shape), "%s%ld",
                     d ? "x" : "", p->dims[0][d]);
    }
}

/* The residual add just before RMSNorm start s (same shape): -1 if none. */
static int residual_add(const trace *t, int s)
{
    for (int i = s - 1; i >= 0; i--) {
        const op *p = &t->ops[i];
        if (p->top != i || p->tid != t->ops[s].tid || is_aten(p, "to") || is_aten(p, "_to_copy"))
            continue;
        if (!is_aten(p, "add") || p->cls >= 0 || p->nin < 2 || p->rank[0] != p->rank[1] ||
            p->rank[0] != t->ops[s].rank[0] || lead(p, 0) != lead(&t->ops[s], 0) ||
            last(p, 0) != last(&t->ops[s], 0) || last(p, 1) != last(p, 0))
            return -1;
        return i;
    }
    return -1;
}

static void add_row(trace *t, const row *r, double time)
{
    for (int i = 0; i < t->nrows; i++)
        if (strcmp(t->rows[i].label, r->label) == 0 && strcmp(t->rows[i].shape, r->shape) == 0 &&
            strcmp(t->rows[i].task, r->task) == 0) {
            t->rows[i].time += time;
            t->rows[i].count++;
            return;
        }
    t->rows[t->nrows] = *r;
    t->rows[t->nrows].time = time;
    t->rows[t->nrows++].count = 1;
}

static int cmp_time(const void *a, const void *b)
{
    const row *x = a, *y = b;
    return x->time > y->time ? -1 : x->time < y->time;
}

/* Rows of the table, from each top-level op (or op group) and its time. */
static int build_rows(trace *t)
{
    t->rows = calloc((size_t)t->nops + 1, sizeof *t->rows);
    if (!t->rows)
        return -1;
    double *group = calloc((size_t)t->nops + 1, sizeof *group);
    if (!group)
        return -1;
    for (int i = 0; i < t->nops; i++) {   /* nll_loss after log_softmax: one cross entropy */
        int n = t->ops[i].top == i && is_aten(&t->ops[i], "log_softmax")
                ? next_top(t, i + 1, t->ops[i].tid) : -1;
        if (n >= 0 && t->ops[n].cls == -1 &&
            (is_aten(&t->ops[n], "nll_loss") || is_aten(&t->ops[n], "nll_loss_nd")))
            t->ops[n].cls = i;
    }
    for (int i = 0; i < t->nops; i++) {
        t->total += t->ops[i].gpu;
        int top = t->ops[i].top;
        if (top >= 0)
            group[t->ops[top].cls >= 0 ? t->ops[top].cls : top] += t->ops[i].gpu;
    }
    int *adds = malloc(sizeof(int) * ((size_t)t->nops + 1));
    if (!adds) {
        free(group);
        return -1;
    }
    for (int i = 0; i < t->nops; i++)   /* first, so the adds ahead are known */
        adds[i] = t->ops[i].cls == i || (t->ops[i].top == i && is_aten(&t->ops[i], "rms_norm"))
                  ? residual_add(t, i) : -1;
    for (int i = 0; i < t->nops; i++)
        if (adds[i] >= 0)
            t->ops[adds[i]].cls = -2;   /* taken into add_rmsnorm */
    for (int i = 0; i < t->nops; i++) {
        op *p = &t->ops[i];
        if (p->top != i || (p->cls >= 0 && p->cls != i) || (is_aten(p, "add") && p->cls == -2))
            continue;
        row r;
        classify(t, i, &r);
        double time = group[i];
        {
            int a = adds[i];
            if (a >= 0) {
                time += group[a];
                snprintf(r.task, sizeof r.task, "add_rmsnorm");
                snprintf(r.label, sizeof r.label, "aten::add + %s", is_aten(p, "rms_norm")
                         ? "aten::rms_norm" : "RMSNorm");
            }
        }
        if (time > 0)
            add_row(t, &r, time);
    }
    free(group);
    free(adds);
    qsort(t->rows, (size_t)t->nrows, sizeof *t->rows, cmp_time);
    return 0;
}

static void print_table(const trace *t)
{
    printf("%s: %d CPU ops, %d GPU kernels, %.1f us %s\n\n", t->file, t->nops, t->kernels,
           t->total, t->kernels ? "of GPU kernel time" : "of CPU op time (no GPU kernels in "
           "the trace: ranked by the CPU ops' own time)");
    printf("%-26s %-24s %6s %5s  %s\n", "op", "shape", "share", "calls", "kiln task");
    for (int i = 0; i < t->nrows; i++) {
        const row *r = &t->rows[i];
        printf("%-26s %-24s %5.1f%% %5d  %s\n", r->label, r->shape,
               t->total > 0 ? 100 * r->time / t->total : 0, r->count, r->task[0] ? r->task : "-");
    }
    printf("\nno kiln task yet:");
    row *none = calloc((size_t)t->nrows + 1, sizeof *none);
    int n = 0;
    for (int i = 0; i < t->nrows && none; i++) {   /* one entry an op, its rows summed */
        int j = 0;
        while (j < n && strcmp(none[j].label, t->rows[i].label) != 0)
            j++;
        if (t->rows[i].task[0])
            continue;
        if (j == n)
            none[n++] = t->rows[i];
        else
            none[j].time += t->rows[i].time;
    }
    if (none)
        qsort(none, (size_t)n, sizeof *none, cmp_time);
    for (int i = 0; i < n; i++)
        printf("%s %s (%.1f%%)", i ? "," : "", none[i].label,
               t->total > 0 ? 100 * none[i].time / t->total : 0);
    printf("%s\n", n ? "" : " nothing");
    free(none);
}

/* A group {"visible": [...]} and its hidden one {"shapes": [...]} for task
 * `task`'s rows; the shape's neighbours: one row more with a width one more
 * (or two, to be odd), one row fewer with an odd width a little less. */
static cJSON *shape(const char *const *names, int nd, const long *v)
{
    cJSON *s = cJSON_CreateObject();
    for (int d = 0; d < nd; d++)
        cJSON_AddNumberToObject(s, names[d], (double)v[d]);
    return s;
}

static void model_groups(const trace *t, const char *task, const char *const *names,
                         cJSON **vis, cJSON **hid)
{
    *vis = cJSON_CreateObject();
    *hid = cJSON_CreateObject();
    cJSON *va = cJSON_AddArrayToObject(*vis, "visible");
    cJSON *ha = cJSON_AddArrayToObject(*hid, "shapes");
    int n = 0, nd = strcmp(task, "gemm") == 0 ? 3 : 2;
    long one[3] = {1, 1, 1};
    cJSON_AddItemToArray(ha, shape(names, nd, one));
    for (int i = 0; i < t->nrows && n < MAX_SHAPES; i++) {
        const row *r = &t->rows[i];
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= strcmp(t->rows[j].task, task) == 0 && strcmp(t->rows[j].shape, r->shape) == 0;
        if (strcmp(r->task, task) != 0 || dup)
            continue;
        n++;
        cJSON_AddItemToArray(va, shape(names, nd, r->dims));
        long up[3], down[3];
        for (int d = 0; d < nd; d++) {
            long v = r->dims[d];
            up[d] = d == 0 ? v + 1 : v % 2 ? v + 2 : v + 1;
            down[d] = d == 0 ? (v > 1 ? v - 1 : 1) : v % 2 ? (v > 2 ? v - 2 : 1) : v - 1;
        }
        cJSON_AddItemToArray(ha, shape(names, nd, up));
        cJSON_AddItemToArray(ha, shape(names, nd, down));
    }
}

static int edit_json(const char *path, const char *section_a, const char *section_b,
                     cJSON *group_a, cJSON *group_b)
{
    kiln_error err = {0};
    char *text;
    if (kiln_read_file(path, 1 << 20, &text, NULL, &err) != 0)
        return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return -1;
    const char *sec[2] = {section_a, section_b};
    cJSON *grp[2] = {group_a, group_b};
    for (int s = 0; s < 2; s++) {
        cJSON *o = cJSON_GetObjectItemCaseSensitive(root, sec[s]);
        if (o)
            cJSON_AddItemToObject(o, "model", cJSON_Duplicate(grp[s], 1));
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    int rc = out ? kiln_write_text(path, out, &err) : -1;
    free(out);
    return rc;
}

/* Copy task `task` as PREFIX_task into dir and give it the model group. */
static int write_task(const trace *t, const char *task, const char *prefix, const char *dir)
{
    static const char *const gemm[] = {"M", "N", "K"}, *const ce[] = {"rows", "vocab", NULL},
                             *const rc2[] = {"rows", "cols", NULL};
    const char *const *names = strcmp(task, "gemm") == 0 ? gemm
                             : strcmp(task, "cross_entropy") == 0 ? ce : rc2;
    char name[KILN_NAME_MAX + 64], path[PATH_MAX];
    snprintf(name, sizeof name, "%s_%s", prefix, task);
    int rc = kiln_task_new(name, task, dir);
    if (rc != KILN_EXIT_OK)
        return rc;
    cJSON *vis, *hid;
    model_groups(t, task, names, &vis, &hid);
    int nvis = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(vis, "visible"));
    int nhid = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hid, "shapes"));
    snprintf(path, sizeof path, "%s/%s/task.json", dir, name);
    int e = edit_json(path, "groups", "cuda_groups", vis, vis);
    snprintf(path, sizeof path, "%s/%s/hidden.json", dir, name);
    e = e < 0 ? e : edit_json(path, "groups", "cuda_groups", hid, hid);
    cJSON_Delete(vis);
    cJSON_Delete(hid);
    kiln_task *back = malloc(sizeof *back);
    kiln_error err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (e < 0 || !back || kiln_task_load(path, back, &err) < 0) {
        fprintf(stderr, "kiln task from-trace: %s: the model group does not load: %s\n", path,
                e < 0 ? "task.json or hidden.json could not be edited" : err.msg);
        free(back);
        return KILN_EXIT_INTERNAL;
    }
    free(back);
    printf("  its group model: %d visible shapes, %d hidden\n", nvis, nhid);
    return KILN_EXIT_OK;
}

/* The prefix of the written tasks' names: the trace's file name, made a name. */
static void default_prefix(const char *file, char *out, size_t len)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t k = 0;
    if (*base >= '0' && *base <= '9')
        out[k++] = 't';
    for (; *base && *base != '.' && k + 1 < len && k < 16; base++)
        out[k++] = (*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
                   (*base >= '0' && *base <= '9') ? *base : '_';
    out[k] = '\0';
    if (!k)
        snprintf(out, len, "model");
}

static int load(trace *t, cJSON **root)
{
    char *text;
    size_t n;
    kiln_error err = {0};
    int r = kiln_read_file(t->file, TRACE_LIMIT, &text, &n, &err);
    if (r == 1)
        return bad(t->file, "larger than 1 GiB");
    if (r != 0) {   /* the message names the file */
        fprintf(stderr, "kiln task from-trace: %s\n", err.msg);
        return KILN_EXIT_BAD_INPUT;
    }
    *root = cJSON_ParseWithLength(text, n);
    free(text);
    if (!*root)
        return bad(t->file, "not JSON (a Chrome trace from torch.profiler's "
                   "export_chrome_trace is)");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(*root, "traceEvents");
    if (!cJSON_IsArray(ev))
        return bad(t->file, "no \"traceEvents\" array (not a Chrome trace)");
    if (collect_ops(t, ev) < 0)
        return KILN_EXIT_BAD_INPUT;
    nest(t);
    tops(t);
    credit_kernels(t, ev);
    rmsnorm_scopes(t, ev);
    return build_rows(t) < 0 ? bad(t->file, "out of memory") : KILN_EXIT_OK;
}

int kiln_task_from_trace(const char *file, const char *dir, const char *prefix)
{
    trace t = {.file = file};
    cJSON *root = NULL;
    char pre[32];
    if (prefix && !kiln_task_name_ok(prefix))
        return bad(prefix, "--prefix is not a task name (letters, digits and _)");
    if (!prefix)
        default_prefix(file, pre, sizeof pre);
    int rc = load(&t, &root);
    if (rc == KILN_EXIT_OK) {
        print_table(&t);
        putchar('\n');
        static const char *const tasks[] = {"rmsnorm", "add_rmsnorm", "layernorm", "softmax",
                                            "gemm", "cross_entropy"};
        for (int i = 0; i < t.nrows && rc == KILN_EXIT_OK; i++) {
            int first = 1;
            for (int j = 0; j < i; j++)
                first &= strcmp(t.rows[j].task, t.rows[i].task) != 0;
            for (size_t k = 0; k < sizeof tasks / sizeof *tasks && first; k++)
                if (strcmp(t.rows[i].task, tasks[k]) == 0)
                    rc = write_task(&t, tasks[k], prefix ? prefix : pre,
                                    dir ? dir : getenv("KILN_TASKS") && *getenv("KILN_TASKS")
                                          ? getenv("KILN_TASKS") : "tasks");
        }
    }
    cJSON_Delete(root);
    free(t.ops);
    free(t.rows);
    return rc;
}
