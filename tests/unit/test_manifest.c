/* test_manifest.c - cmocka tests for the CUDA launch manifest (verifier/manifest.c).
 *
 * Candidates are built from a known-good rmsnorm source (GOOD_HEAD plus a
 * manifest block) against the real tasks/rmsnorm task. Every parse error
 * case checks -1 and a message naming the field or line at fault; resolve
 * cases check the launches the worker would get at a shape, and that
 * limit errors name the launch and field without printing the shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

static kiln_task *TASK;   /* tasks/rmsnorm: dims rows, cols; args x w y rows cols eps */

static int setup(void **state)
{
    (void)state;
    kiln_error err;
    TASK = malloc(sizeof *TASK);
    if (!TASK || kiln_task_load(KILN_TASKS_DIR "/rmsnorm", TASK, &err) != 0) {
        fprintf(stderr, "cannot load rmsnorm: %s\n", TASK ? err.msg : "out of memory");
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(TASK);
    return 0;
}

/* Lines 1-2 include and a knob; kernels on lines 4-11; the block from 12. */
static const char GOOD_HEAD[] =
    "#include \"kiln_cuda.h\"\n"
    "#define BLOCK 256 //@kiln tune 128 256 512 1024\n"
    "\n"
    "extern \"C\" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y,\n"
    "                                       int cols, float eps) { }\n"
    "extern \"C\" __global__\n"
    "__launch_bounds__(256, 2)\n"
    "void\n"
    "  reduce_part (float *part, const kiln_t *x, int rows) { }\n"
    "// extern \"C\" __global__ void in_comment(int n) { }\n"
    "/* extern \"C\" __global__ void in_block(int n) { } */\n";

static const char GOOD_JSON[] =
    "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"rows\"], \"block\": [\"BLOCK\"],\n"
    "                \"smem\": \"0\", \"args\": [\"x\", \"w\", \"y\", \"cols\", \"eps\"]}],\n"
    " \"scratch\": []}\n";

static char SRC[16384];

/* GOOD_HEAD + extra + a block holding json. */
static const char *with_json(const char *extra, const char *json)
{
    snprintf(SRC, sizeof SRC, "%s%s/*@kiln launch\n%s@*/\n", GOOD_HEAD, extra, json);
    return SRC;
}

static void parse_ok(const char *src, kiln_manifest *m)
{
    kiln_error err = {0};
    if (kiln_manifest_parse(src, strlen(src), TASK, m, &err) != 0)
        fail_msg("unexpected failure: %s\n--- source ---\n%s", err.msg, src);
}

/* Parse must fail with a message containing every string given. */
static void parse_fails(const char *src, const char *want, const char *want2)
{
    kiln_manifest *m = malloc(sizeof *m);
    kiln_error err = {0};
    assert_non_null(m);
    int rc = kiln_manifest_parse(src, strlen(src), TASK, m, &err);
    if (rc != -1)
        fail_msg("expected a failure naming \"%s\"\n--- source ---\n%s", want, src);
    if (!strstr(err.msg, want) || (want2 && !strstr(err.msg, want2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", err.msg, want, want2 ? " / " : "",
                 want2 ? want2 : "");
    assert_int_equal(m->nlaunches, 0);
    free(m);
}

static void json_fails(const char *json, const char *want, const char *want2)
{
    parse_fails(with_json("", json), want, want2);
}

static kiln_shape shape(int64_t rows, int64_t cols)
{
    kiln_shape s = {{0}};
    s.d[kiln_task_dim(TASK, "rows")] = rows;
    s.d[kiln_task_dim(TASK, "cols")] = cols;
    return s;
}

/* ---- parsing: valid manifests ------------------------------------------ */

static void test_valid_rmsnorm(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok(with_json("", GOOD_JSON), &m);
    assert_int_equal(m.nlaunches, 1);
    assert_int_equal(m.nscratch, 0);
    const kiln_launch_spec *l = &m.launches[0];
    assert_string_equal(l->kernel, "rmsnorm_fwd");
    assert_int_equal(l->ngrid, 1);
    assert_string_equal(l->grid[0], "rows");
    assert_int_equal(l->nblock, 1);
    assert_string_equal(l->block[0], "BLOCK");
    assert_int_equal(l->ncluster, 0);
    assert_string_equal(l->smem, "0");
    assert_int_equal(l->nargs, 5);
    const char *names[] = {"x", "w", "y", "cols", "eps"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(TASK->args[l->arg[i]].name, names[i]);
    assert_int_equal(m.nknobs, 1);
    assert_string_equal(m.knobs[0].name, "BLOCK");
    assert_string_equal(m.knobs[0].value, "256");
}

static void test_valid_defaults_and_integers(void **state)
{
    (void)state;
    kiln_manifest m;
    /* smem and scratch absent, integer dims, no knobs at all */
    parse_ok("extern \"C\" __global__ void k(float *y) { }\n"
             "/*@kiln launch {\"launches\": [{\"kernel\": \"k\", \"grid\": [4, 2], "
             "\"block\": [128], \"args\": [\"y\"]}]} @*/",
             &m);
    assert_int_equal(m.nknobs, 0);
    assert_string_equal(m.launches[0].smem, "0");
    assert_int_equal(m.launches[0].ngrid, 2);
    assert_string_equal(m.launches[0].grid[0], "4");
    assert_string_equal(m.launches[0].grid[1], "2");
    assert_string_equal(m.launches[0].block[0], "128");
    assert_int_equal(m.launches[0].nargs, 1);
    assert_int_equal(m.launches[0].arg[0], 2);   /* y */
}

static const char KNOB_HEAD[] =
    "#define VEC 4 //@kiln tune 1 2 4\n"
    "#define ROWS_PER_CTA   2   //@kiln tune 1 2 4 8\n"
    "#define UNTUNED 7\n";

static const char KNOB_JSON[] =
    "{\"launches\": [\n"
    "  {\"kernel\": \"reduce_part\", \"grid\": [\"cdiv(cols, BLOCK*VEC)\", \"cdiv(rows, ROWS_PER_CTA)\"],\n"
    "   \"block\": [\"BLOCK\", 1, 1], \"cluster\": [\"min(2, cdiv(cols, BLOCK*VEC))\"],\n"
    "   \"smem\": \"BLOCK * sizeof(T) + 16\", \"args\": [\"part\", \"x\", \"rows\"]},\n"
    "  {\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"rows\"], \"block\": [\"max(32, BLOCK / 2)\"],\n"
    "   \"args\": [\"x\", \"w\", \"y\", \"cols\", \"eps\", \"part\", \"flag\"]}],\n"
    " \"scratch\": [{\"name\": \"part\", \"bytes\": \"rows * cdiv(cols, BLOCK*VEC) * sizeof(f32)\", "
    "\"init\": \"zero\"},\n"
    "             {\"name\": \"flag\", \"bytes\": 4, \"init\": \"none\"}]}\n";

static void test_knobs_in_expressions(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok(with_json(KNOB_HEAD, KNOB_JSON), &m);
    assert_int_equal(m.nknobs, 3);
    assert_string_equal(m.knobs[1].name, "VEC");
    assert_string_equal(m.knobs[1].value, "4");
    assert_string_equal(m.knobs[2].name, "ROWS_PER_CTA");
    assert_string_equal(m.knobs[2].value, "2");
    assert_int_equal(m.nlaunches, 2);
    assert_int_equal(m.launches[0].ncluster, 1);
    assert_int_equal(m.launches[0].nblock, 3);
    assert_int_equal(m.launches[0].arg[0], -1);   /* scratch 0 */
    assert_int_equal(m.launches[1].arg[5], -1);
    assert_int_equal(m.launches[1].arg[6], -2);   /* scratch 1 */
    assert_int_equal(m.nscratch, 2);
    assert_string_equal(m.scratch[0].name, "part");
    assert_int_equal(m.scratch[0].zero, 1);
    assert_string_equal(m.scratch[1].bytes, "4");
    assert_int_equal(m.scratch[1].zero, 0);
}

/* A kernel mentioned only in a comment or a string does not count; a knob
 * line inside a comment is no knob; comment markers inside strings are text. */
static void test_comments_and_strings(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok(with_json("// #define FAKE 1 //@kiln tune 1 2\n"
                       "/* #define FAKE2 x //@kiln tune x */\n"
                       "__device__ const char msg[] = \"/* not a comment\";\n",
                       GOOD_JSON),
             &m);
    assert_int_equal(m.nknobs, 1);
    json_fails("{\"launches\": [{\"kernel\": \"in_comment\", \"grid\": [1], \"block\": [1], "
               "\"args\": []}]}",
               "launches[0].kernel: 'in_comment' does not occur in the source's code", NULL);
    json_fails("{\"launches\": [{\"kernel\": \"in_block\", \"grid\": [1], \"block\": [1], "
               "\"args\": []}]}",
               "launches[0].kernel: 'in_block' does not occur in the source's code", NULL);
    /* __launch_bounds__ and whitespace anywhere between the tokens */
    parse_ok("extern\"C\" __launch_bounds__(128)\n__global__ void\n__launch_bounds__(((64)), 2) k2\n"
             "  (float *y) { }\n"
             "/*@kiln launch {\"launches\": [{\"kernel\": \"k2\", \"grid\": [1], \"block\": [1], "
             "\"args\": [\"y\"]}]} @*/",
             &m);
    assert_string_equal(m.launches[0].kernel, "k2");
    assert_int_equal(m.launches[0].by_name_expr, 0);
    /* Any other spelling (a C++ kernel, one in an extern "C" block or made
     * by a macro, a template instance) is found after compiling, through
     * an NVRTC name expression; one that is no kernel (a __device__
     * function) is then a compile error (test_nvrtc_names). */
    parse_ok("__global__ void k(float *y) { }\n"
             "/*@kiln launch {\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
             "\"args\": [\"y\"]}]} @*/",
             &m);
    assert_int_equal(m.launches[0].by_name_expr, 1);
    parse_ok("template <int V> __global__ void k(float *y) { }\n"
             "/*@kiln launch {\"launches\": [{\"kernel\": \"k<4>\", \"grid\": [1], \"block\": [1], "
             "\"args\": [\"y\"]}]} @*/",
             &m);
    assert_int_equal(m.launches[0].by_name_expr, 1);
    assert_string_equal(m.launches[0].kernel, "k<4>");
    /* a prefix of a defined kernel's name is not that kernel */
    json_fails("{\"launches\": [{\"kernel\": \"rmsnorm\", \"grid\": [1], \"block\": [1], "
               "\"args\": []}]}",
               "'rmsnorm' does not occur in the source's code", NULL);
}

/* ---- parsing: the block itself ------------------------------------------ */

static void test_block_errors(void **state)
{
    (void)state;
    parse_fails(GOOD_HEAD, "manifest: no /*@kiln launch", NULL);
    /* two blocks: the second one's line, and the first one's */
    char two[8192];
    snprintf(two, sizeof two, "%s/*@kiln launch\n%s@*/\n/*@kiln launch\n%s@*/\n", GOOD_HEAD,
             GOOD_JSON, GOOD_JSON);
    parse_fails(two, "manifest (line 17): a second /*@kiln launch block", "first is on line 12");
    snprintf(two, sizeof two, "%s/*@kiln launch\n%s", GOOD_HEAD, GOOD_JSON);
    parse_fails(two, "manifest (line 12): unterminated", NULL);
    snprintf(two, sizeof two, "%s/*@kiln launch\n%s*/\n", GOOD_HEAD, GOOD_JSON);
    parse_fails(two, "must end with @*/", NULL);
    snprintf(two, sizeof two, "%s/*@kiln launches\n%s@*/\n", GOOD_HEAD, GOOD_JSON);
    parse_fails(two, "manifest (line 12): unknown block '/*@kiln launches'", NULL);
    /* malformed JSON: the line inside the block */
    parse_fails(with_json("", "{\"launches\": [\n  {\"kernel\": \"rmsnorm_fwd\",,}]}\n"),
                "manifest (line 14): malformed JSON", NULL);
    parse_fails(with_json("", "{\"launches\": []} trailing\n"),
                "manifest (line 13): unexpected text after the JSON object", NULL);
    json_fails("[1, 2]", "must hold one JSON object", NULL);
}

/* ---- parsing: knobs ----------------------------------------------------- */

/* A knob line on line 12 and the message it must give there. */
static const struct { const char *line, *want; } KNOB_ERRORS[] = {
    {"#define VEC 4x //@kiln tune 1 2", "knob 'VEC': value '4x' is not an integer"},
    {"#define VEC 2.5 //@kiln tune 1 2", "knob 'VEC': value '2.5' is not an integer"},
    {"#define VEC 4 //@kiln tune 1 two", "knob 'VEC': tune value 'two' is not an integer"},
    {"#define VEC //@kiln tune 1 2", "a knob line must read"},
    {"int VEC = 4; //@kiln tune 1 2", "a knob line must read"},
    {"#define VEC 4 5 //@kiln tune 1 2", "a knob line must read"},
    {"#define BLOCK 128 //@kiln tune 1 2", "knob 'BLOCK' is declared twice"},
    {"#define rows 4 //@kiln tune 1 2", "knob 'rows' has the name of a task dim"},
    {"#define VEC 4 //@kiln tunes 1 2", "unknown directive '//@kiln tunes'"},
    /* the tuner's rules hold here too (common/knobs.c parses for both) */
    {"#define VEC 4 //@kiln tune 4", "knob 'VEC': lists 1 value; a knob needs at least 2"},
    {"#define VEC 4 //@kiln tune 1 4 1", "knob 'VEC': value 1 is listed twice"},
    {"#define VEC 010 //@kiln tune 1 2", "knob 'VEC': value '010' is not an integer"},
    {"#define VEC 4 // @kiln tune 1 2", "write '//@kiln tune' with no space"},
    {"#define A_KNOB_NAME_OF_THIRTY_THREE_CHARS 4 //@kiln tune 1 4",
     "knob name 'A_KNOB_NAME_OF_THIRTY_THREE_CHARS' is longer than 31 characters"},
};

static void test_knob_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof KNOB_ERRORS / sizeof *KNOB_ERRORS; i++) {
        char line[128], want[160];
        snprintf(line, sizeof line, "%s\n", KNOB_ERRORS[i].line);
        snprintf(want, sizeof want, "manifest (line 12): %s", KNOB_ERRORS[i].want);
        parse_fails(with_json(line, GOOD_JSON), want, NULL);
    }
    char many[8192] = "";
    for (int i = 0; i <= KILN_MAX_KNOBS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "#define K%d 1 //@kiln tune 1 2\n", i);
    parse_fails(with_json(many, GOOD_JSON), "more than 16 knobs", NULL);
    /* a #define without the marker is no knob, but a constant (test_defines) */
    kiln_manifest m;
    parse_ok(with_json("#define UNTUNED 7\n",
                       "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"rows\", "
                       "\"UNTUNED\"], \"block\": [\"BLOCK\"], \"args\": []}]}"), &m);
    assert_int_equal(m.nknobs, 1);
    assert_int_equal(m.ndefines, 1);
    assert_string_equal(m.defines[0].name, "UNTUNED");
    assert_string_equal(m.defines[0].value, "7");
    /* a knob must be the only #define of its name (BLOCK is one, on line 2) */
    parse_fails(with_json("#define BLOCK 128\n", GOOD_JSON),
                "manifest (line 12): 'BLOCK' is a knob (line 2) and is #defined again here", NULL);
    parse_fails(with_json("#ifdef KILN_DTYPE_F32\n#undef BLOCK\n#endif\n", GOOD_JSON),
                "manifest (line 13): 'BLOCK' is a knob (line 2) and is #undef'd here", NULL);
    parse_fails(with_json("#define BLOCK(x) x\n", GOOD_JSON), "'BLOCK' is a knob", NULL);
    /* text in a comment or string is no #define */
    parse_ok(with_json("// #define BLOCK 128\n/* #undef BLOCK */\n", GOOD_JSON), &m);
}

/* ---- parsing: fields ---------------------------------------------------- */

#define L0(rest) "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", " rest "}]}"
#define L0S(rest, scratch) "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", " rest "}], \"scratch\": " scratch "}"
#define GB "\"grid\": [\"rows\"], \"block\": [\"BLOCK\"]"

static void test_unknown_and_missing_fields(void **state)
{
    (void)state;
    json_fails("{\"launches\": [], \"scrach\": []}", "manifest: unknown field 'scrach'", NULL);
    json_fails("{\"launches\": [], \"lets\": {}}", "manifest: unknown field 'lets'", NULL);
    json_fails(L0(GB ", \"args\": [], \"gird\": [1]"),
               "manifest: launches[0]: unknown field 'gird'", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"bytes\": 4, \"init\": \"zero\", \"size\": 1}]"),
               "manifest: scratch[0]: unknown field 'size'", NULL);
    json_fails(L0(GB ", \"args\": [], \"grid\": [2]"), "launches[0]: field 'grid' given twice", NULL);
    json_fails("{\"scratch\": []}", "manifest: missing field 'launches'", NULL);
    json_fails(L0("\"block\": [1], \"args\": []"), "launches[0]: missing field 'grid'", NULL);
    json_fails(L0("\"grid\": [1], \"args\": []"), "launches[0]: missing field 'block'", NULL);
    json_fails(L0(GB), "launches[0]: missing field 'args'", NULL);
    json_fails("{\"launches\": [{\"grid\": [1], \"block\": [1], \"args\": []}]}",
               "launches[0]: missing field 'kernel'", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"bytes\": 4, \"init\": \"zero\"}]"),
               "scratch[0]: missing field 'name'", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"init\": \"zero\"}]"),
               "scratch[0]: missing field 'bytes'", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"bytes\": 4}]"),
               "scratch[0]: missing field 'init'", NULL);
}

static void test_wrong_types(void **state)
{
    (void)state;
    json_fails("{\"launches\": {}}", "manifest: launches: must be an array of 1 to 8", NULL);
    json_fails("{\"launches\": []}", "manifest: launches: must be an array of 1 to 8", NULL);
    char nine[8192] = "{\"launches\": [";
    for (int i = 0; i < 9; i++)
        strcat(nine, i ? ", {\"kernel\": \"rmsnorm_fwd\", " GB ", \"args\": []}"
                       : "{\"kernel\": \"rmsnorm_fwd\", " GB ", \"args\": []}");
    strcat(nine, "]}");
    json_fails(nine, "manifest: launches: must be an array of 1 to 8", NULL);
    json_fails("{\"launches\": [3]}", "manifest: launches[0]: must be an object", NULL);
    json_fails("{\"launches\": [{\"kernel\": 3, " GB ", \"args\": []}]}",
               "launches[0].kernel: must be a kernel's name or a template instance", NULL);
    json_fails(L0("\"grid\": \"rows\", \"block\": [1], \"args\": []"),
               "launches[0].grid: must be an array of 1 to 3", NULL);
    json_fails(L0("\"grid\": [], \"block\": [1], \"args\": []"),
               "launches[0].grid: must be an array of 1 to 3", NULL);
    json_fails(L0("\"grid\": [1], \"block\": [1, 1, 1, 1], \"args\": []"),
               "launches[0].block: must be an array of 1 to 3", NULL);
    json_fails(L0("\"grid\": [1, true], \"block\": [1], \"args\": []"),
               "launches[0].grid[1]: must be an integer or an expression string", NULL);
    json_fails(L0("\"grid\": [1.5], \"block\": [1], \"args\": []"),
               "launches[0].grid[0]: 1.5 is not a non-negative integer", NULL);
    json_fails(L0("\"grid\": [-2], \"block\": [1], \"args\": []"),
               "launches[0].grid[0]: -2 is not a non-negative integer", NULL);
    json_fails(L0(GB ", \"cluster\": {}, \"args\": []"),
               "launches[0].cluster: must be an array", NULL);
    json_fails(L0(GB ", \"smem\": null, \"args\": []"),
               "launches[0].smem: must be an integer or an expression string", NULL);
    json_fails(L0(GB ", \"args\": \"x\""), "launches[0].args: must be an array", NULL);
    json_fails(L0(GB ", \"args\": [\"x\", true]"),
               "launches[0].args[1]: must be a name or an expression", NULL);
    json_fails(L0(GB ", \"args\": [\"x\", \"w\", \"z\"]"),
               "launches[0].args[2]: unknown name 'z'", NULL);
    json_fails(L0S(GB ", \"args\": []", "{}"), "manifest: scratch: must be an array", NULL);
    json_fails(L0S(GB ", \"args\": []", "[1]"), "manifest: scratch[0]: must be an object", NULL);
    json_fails(L0S(GB ", \"args\": []",
                   "[{\"name\": \"a\", \"bytes\": 4, \"init\": \"zero\"}, {\"name\": \"b\", \"bytes\": 4, \"init\": \"zero\"},"
                   " {\"name\": \"c\", \"bytes\": 4, \"init\": \"zero\"}, {\"name\": \"d\", \"bytes\": 4, \"init\": \"zero\"},"
                   " {\"name\": \"e\", \"bytes\": 4, \"init\": \"zero\"}]"),
               "manifest: scratch: must be an array of at most 4", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"bytes\": 4, \"init\": \"ones\"}]"),
               "scratch[0].init: must be \"zero\" or \"none\"", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": 7, \"bytes\": 4, \"init\": \"zero\"}]"),
               "scratch[0].name: must be an identifier", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"bytes\": [4], \"init\": \"zero\"}]"),
               "scratch[0].bytes: must be an integer or an expression string", NULL);
}

static void test_scratch_names(void **state)
{
    (void)state;
    json_fails(L0S(GB ", \"args\": []",
                   "[{\"name\": \"tmp\", \"bytes\": 4, \"init\": \"zero\"},"
                   " {\"name\": \"tmp\", \"bytes\": 8, \"init\": \"none\"}]"),
               "manifest: scratch[1].name: scratch buffer 'tmp' is declared twice", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"x\", \"bytes\": 4, \"init\": \"zero\"}]"),
               "manifest: scratch[0].name: 'x' is already an arg of task rmsnorm", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"cols\", \"bytes\": 4, \"init\": \"zero\"}]"),
               "manifest: scratch[0].name: 'cols' is already an arg", NULL);
}

static void test_expression_errors(void **state)
{
    (void)state;
    json_fails(L0("\"grid\": [\"rows\", \"foo\"], \"block\": [1], \"args\": []"),
               "manifest: launches[0].grid[1]: unknown name 'foo'", NULL);
    json_fails(L0("\"grid\": [1], \"block\": [\"BLOCK * \"], \"args\": []"),
               "manifest: launches[0].block[0]: ", "unexpected end of expression");
    json_fails(L0("\"grid\": [1], \"block\": [\"(BLOCK\"], \"args\": []"),
               "manifest: launches[0].block[0]: ", "missing ')'");
    json_fails(L0(GB ", \"cluster\": [\"eps\"], \"args\": []"),
               "manifest: launches[0].cluster[0]: unknown name 'eps'", NULL);
    json_fails(L0(GB ", \"smem\": \"BLOCK * sizeof(U)\", \"args\": []"),
               "manifest: launches[0].smem: unknown type 'U' in sizeof()", NULL);
    json_fails(L0(GB ", \"smem\": \"\", \"args\": []"), "manifest: launches[0].smem: ", NULL);
    json_fails(L0S(GB ", \"args\": []", "[{\"name\": \"t\", \"bytes\": \"rows * sizeof(T) + x\", \"init\": \"zero\"}]"),
               "manifest: scratch[0].bytes: unknown name 'x'", NULL);
    char longexpr[600] = "";
    for (int i = 0; i < 100; i++)
        strcat(longexpr, "rows+");
    strcat(longexpr, "1");
    char json[1024];
    snprintf(json, sizeof json, L0("\"grid\": [\"%s\"], \"block\": [1], \"args\": []"), longexpr);
    json_fails(json, "manifest: launches[0].grid[0]: expression longer than", NULL);
}

/* ---- resolving ---------------------------------------------------------- */

static void resolve_ok(const kiln_manifest *m, kiln_dtype dt, kiln_shape s,
                       const kiln_device_limits *lim, kiln_call_req *rq)
{
    kiln_error err = {0};
    if (kiln_manifest_resolve(m, TASK, dt, &s, lim, rq, &err) != 0)
        fail_msg("unexpected resolve failure: %s", err.msg);
}

static void test_limits_default(void **state)
{
    (void)state;
    kiln_device_limits lim;
    kiln_device_limits_default(&lim);
    assert_int_equal(lim.max_threads_per_block, 1024);
    assert_int_equal(lim.max_block[0], 1024);
    assert_int_equal(lim.max_block[1], 1024);
    assert_int_equal(lim.max_block[2], 64);
    assert_int_equal(lim.max_grid[0], 2147483647);
    assert_int_equal(lim.max_grid[1], 65535);
    assert_int_equal(lim.max_grid[2], 65535);
    assert_int_equal(lim.max_smem_optin, 232448);
    assert_int_equal(lim.max_cluster, 16);
    assert_int_equal(lim.max_scratch_bytes, (int64_t)4 << 30);
}

static void test_resolve_rmsnorm(void **state)
{
    (void)state;
    kiln_manifest m;
    kiln_device_limits lim;
    kiln_device_limits_default(&lim);
    parse_ok(with_json("", GOOD_JSON), &m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(rq);
    rq->nargs = 6;
    rq->args[0].offset = 12345;          /* must stay untouched */
    resolve_ok(&m, KILN_DT_F32, shape(64, 4096), &lim, rq);
    assert_int_equal(rq->nargs, 6);
    assert_int_equal(rq->args[0].offset, 12345);
    assert_int_equal(rq->nlaunches, 1);
    assert_int_equal(rq->nscratch, 0);
    const kiln_wire_launch *l = &rq->launches[0];
    assert_string_equal(l->kernel, "rmsnorm_fwd");
    assert_int_equal(l->grid[0], 64);
    assert_int_equal(l->grid[1], 1);
    assert_int_equal(l->grid[2], 1);
    assert_int_equal(l->block[0], 256);
    assert_int_equal(l->block[1], 1);
    assert_int_equal(l->block[2], 1);
    assert_int_equal(l->cluster[0], 0);
    assert_int_equal(l->cluster[1], 0);
    assert_int_equal(l->cluster[2], 0);
    assert_int_equal(l->smem, 0);
    assert_int_equal(l->nargs, 5);
    /* args are task arg indices, in the order of t->args */
    assert_int_equal(l->arg[0], 0);
    assert_int_equal(l->arg[1], 1);
    assert_int_equal(l->arg[2], 2);
    assert_int_equal(l->arg[3], 4);
    assert_int_equal(l->arg[4], 5);
    /* another shape; NULL limits are the defaults */
    resolve_ok(&m, KILN_DT_F32, shape(33, 1000), NULL, rq);
    assert_int_equal(rq->launches[0].grid[0], 33);
    free(rq);
}

static void test_resolve_knobs(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok(with_json(KNOB_HEAD, KNOB_JSON), &m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(rq);
    /* BLOCK 256, VEC 4: cdiv(4096, 1024) = 4; cdiv(65, 2) = 33 */
    resolve_ok(&m, KILN_DT_F32, shape(65, 4096), NULL, rq);
    assert_int_equal(rq->nlaunches, 2);
    const kiln_wire_launch *a = &rq->launches[0], *b = &rq->launches[1];
    assert_string_equal(a->kernel, "reduce_part");
    assert_int_equal(a->grid[0], 4);
    assert_int_equal(a->grid[1], 33);
    assert_int_equal(a->grid[2], 1);
    assert_int_equal(a->block[0], 256);
    assert_int_equal(a->cluster[0], 2);
    assert_int_equal(a->cluster[1], 1);
    assert_int_equal(a->cluster[2], 1);
    assert_int_equal(a->smem, 256 * 4 + 16);
    assert_int_equal(a->nargs, 3);
    assert_int_equal(a->arg[0], -1);
    assert_int_equal(a->arg[1], 0);
    assert_int_equal(a->arg[2], 3);
    assert_string_equal(b->kernel, "rmsnorm_fwd");
    assert_int_equal(b->grid[0], 65);
    assert_int_equal(b->block[0], 128);
    assert_int_equal(b->cluster[0], 0);
    assert_int_equal(b->nargs, 7);
    assert_int_equal(b->arg[6], -2);
    assert_int_equal(rq->nscratch, 2);
    assert_int_equal(rq->scratch[0].bytes, 65 * 4 * 4);
    assert_int_equal(rq->scratch[0].zero, 1);
    assert_int_equal(rq->scratch[1].bytes, 4);
    assert_int_equal(rq->scratch[1].zero, 0);

    /* sizeof(T) follows the dtype; a changed knob value is used */
    resolve_ok(&m, KILN_DT_BF16, shape(65, 4096), NULL, rq);
    assert_int_equal(rq->launches[0].smem, 256 * 2 + 16);
    snprintf(m.knobs[0].value, sizeof m.knobs[0].value, "512");
    resolve_ok(&m, KILN_DT_F32, shape(65, 4096), NULL, rq);
    assert_int_equal(rq->launches[0].grid[0], 2);
    assert_int_equal(rq->launches[0].block[0], 512);
    assert_int_equal(rq->launches[1].block[0], 256);
    free(rq);
}

#define ONE_WHEN "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"when\": \"cols % 2 == 0\", " \
    "\"grid\": [1], \"block\": [1], \"args\": []}]}"

/* Resolve json at rows x cols must fail with want (and never print the dims). */
static void resolve_fails(const char *json, int64_t rows, int64_t cols,
                          const kiln_device_limits *lim, const char *want)
{
    kiln_manifest m;
    parse_ok(with_json("", json), &m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    kiln_error err = {0};
    kiln_shape s = shape(rows, cols);
    assert_non_null(rq);
    if (kiln_manifest_resolve(&m, TASK, KILN_DT_F32, &s, lim, rq, &err) != -1)
        fail_msg("expected a resolve failure naming \"%s\"", want);
    if (!strstr(err.msg, want))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
    char dim[32];
    snprintf(dim, sizeof dim, "%lld", (long long)cols);
    if (strstr(err.msg, dim))
        fail_msg("message \"%s\" shows the dim %s", err.msg, dim);
    free(rq);
}

/* Computed arguments: a dim widened to 64 bits, a knob, a let, a float
 * constant and a bare integer, each passed as a value of its cast's type;
 * what they may name, how many, and an i32 that overflows at a shape. */
static void test_computed_args(void **state)
{
    (void)state;
    kiln_manifest *m = malloc(sizeof *m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(m);
    assert_non_null(rq);
    parse_ok(with_json("", "{\"let\": {\"n\": \"rows * cols\"}, \"launches\": [{\"kernel\": "
                       "\"rmsnorm_fwd\", " GB ", \"args\": [\"x\", \"i64(cols)\", \"BLOCK\", "
                       "\"f32(1e-5)\", \"i64(n * 2)\", 7, \" f64 ( cols / 2 ) \", \"(cols + 1) * 2\"]}]}"),
             m);
    const kiln_launch_spec *ls = &m->launches[0];
    assert_int_equal(ls->nargs, 8);
    assert_int_equal(ls->nimm, 7);
    assert_int_equal(ls->arg[0], 0);
    for (int k = 1; k < 8; k++)
        assert_int_equal(ls->arg[k], KILN_WIRE_ARG_IMM + k - 1);
    assert_int_equal(ls->imm[0].kind, KILN_WIRE_I64);
    assert_string_equal(ls->imm[0].expr, "cols");
    assert_int_equal(ls->imm[1].kind, KILN_WIRE_I32);
    assert_int_equal(ls->imm[2].kind, KILN_WIRE_F32);
    assert_int_equal(ls->imm[5].kind, KILN_WIRE_F64);
    assert_int_equal(ls->imm[6].kind, KILN_WIRE_I32);
    assert_string_equal(ls->imm[6].expr, "(cols + 1) * 2");
    resolve_ok(m, KILN_DT_F32, shape(33, 1000), NULL, rq);
    const kiln_wire_launch *l = &rq->launches[0];
    assert_int_equal(l->nimm, 7);
    assert_int_equal(l->imm[0].kind, KILN_WIRE_I64);
    assert_int_equal(l->imm[0].ival, 1000);
    assert_int_equal(l->imm[1].ival, 256);
    assert_true(l->imm[2].fval == 1e-5);
    assert_int_equal(l->imm[3].ival, 66000);
    assert_int_equal(l->imm[4].kind, KILN_WIRE_I32);
    assert_int_equal(l->imm[4].ival, 7);
    assert_true(l->imm[5].fval == 500.0);
    assert_int_equal(l->imm[6].ival, 2002);
    assert_int_equal(l->arg[1], KILN_WIRE_ARG_IMM);
    free(rq);
    free(m);
    json_fails(L0(GB ", \"args\": [\"i64(x)\"]"), "launches[0].args[0]: unknown name 'x'", NULL);
    json_fails(L0(GB ", \"args\": [\"i64(cols\"]"), "launches[0].args[0]", NULL);
    json_fails(L0(GB ", \"args\": [\"i64(cols) + 1\"]"),   /* a cast is of the whole */
               "launches[0].args[0]: unknown function 'i64'", NULL);
    json_fails(L0(GB ", \"args\": [\"i64(nope)\"]"), "launches[0].args[0]: unknown name 'nope'",
               NULL);
    json_fails(L0(GB ", \"args\": [\"cols\", \"nope\"]"),
               "launches[0].args[1]: unknown name 'nope' (not an arg of task rmsnorm", NULL);
    json_fails(L0(GB ", \"args\": [\"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\", \"8\", \"9\"]"),
               "launches[0].args[8]: more than 8 computed arguments", NULL);
    resolve_fails(L0(GB ", \"args\": [\"cols * cols * cols\"]"), 8, 4096, NULL,
                  "launches[0].args[0] does not fit a 32-bit int at this shape");
    resolve_fails(L0(GB ", \"args\": [\"x\", \"i32(rows / (cols - cols))\"]"), 8, 4096, NULL,
                  "launches[0].args[1]: division by zero");
}

/* "when": a launch only where it holds, as a host's vector-width choice;
 * where none holds, the shape fails without showing its dims. */
static void test_when(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok("template <int V> __global__ void k(float *y, int cols) { }\n"
             "/*@kiln launch {\"launches\": ["
             "{\"kernel\": \"k<4>\", \"when\": \"cols % 4 == 0\", \"grid\": [\"rows\"], "
             "\"block\": [64], \"args\": [\"y\", \"cols\"]},"
             "{\"kernel\": \"k<1>\", \"when\": \"cols % 4 != 0\", \"grid\": [\"rows\"], "
             "\"block\": [32], \"args\": [\"y\", \"cols\"]}]} @*/",
             &m);
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(rq);
    resolve_ok(&m, KILN_DT_F32, shape(8, 1024), NULL, rq);
    assert_int_equal(rq->nlaunches, 1);
    assert_string_equal(rq->launches[0].kernel, "k<4>");
    assert_int_equal(rq->launches[0].block[0], 64);
    resolve_ok(&m, KILN_DT_F32, shape(8, 1001), NULL, rq);
    assert_int_equal(rq->nlaunches, 1);
    assert_string_equal(rq->launches[0].kernel, "k<1>");
    assert_int_equal(rq->launches[0].block[0], 32);
    free(rq);
    resolve_fails(ONE_WHEN, 8, 1001, NULL, "no launch's \"when\" holds at this shape");
    json_fails("{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"when\": \"cols %\", "
               "\"grid\": [1], \"block\": [1], \"args\": []}]}",
               "launches[0].when", NULL);
}

#define OK0 "{\"kernel\": \"rmsnorm_fwd\", \"grid\": [1], \"block\": [32], \"args\": []}"
#define LAUNCH(rest) "{\"kernel\": \"rmsnorm_fwd\", " rest ", \"args\": []}"
#define ONE(rest) "{\"launches\": [" LAUNCH(rest) "]}"
#define TWO(rest) "{\"launches\": [" OK0 ", " LAUNCH(rest) "]}"

static void test_resolve_errors(void **state)
{
    (void)state;
    resolve_fails(TWO("\"grid\": [\"rows - rows\"], \"block\": [32]"), 64, 4097, NULL,
                  "manifest: launches[1].grid[0] is 0 at this shape");
    resolve_fails(TWO("\"grid\": [1, \"rows - cols\"], \"block\": [32]"), 64, 4097, NULL,
                  "manifest: launches[1].grid[1] is negative at this shape");
    resolve_fails(ONE("\"grid\": [1], \"block\": [32, \"rows / 128\"]"), 64, 4097, NULL,
                  "manifest: launches[0].block[1] is 0 at this shape");
    resolve_fails(ONE("\"grid\": [\"cols / (rows - 64)\"], \"block\": [32]"), 64, 4097, NULL,
                  "manifest: launches[0].grid[0]: division by zero");
    resolve_fails(ONE("\"grid\": [\"rows / 2.0\"], \"block\": [32]"), 63, 4097, NULL,
                  "manifest: launches[0].grid[0] is not an integer at this shape");
    /* block limits */
    resolve_fails(ONE("\"grid\": [1], \"block\": [\"BLOCK * 8\"]"), 64, 4097, NULL,
                  "manifest: launches[0].block[0] exceeds the device's limit of 1024");
    resolve_fails(ONE("\"grid\": [1], \"block\": [1, 1, 128]"), 64, 4097, NULL,
                  "manifest: launches[0].block[2] exceeds the device's limit of 64");
    resolve_fails(ONE("\"grid\": [1], \"block\": [32, 32, 2]"), 64, 4097, NULL,
                  "manifest: launches[0].block exceeds the device's limit of 1024 threads per block");
    /* grid limits */
    resolve_fails(ONE("\"grid\": [1, \"cols * 16\"], \"block\": [32]"), 64, 4097, NULL,
                  "manifest: launches[0].grid[1] exceeds the device's limit of 65535");
    resolve_fails(ONE("\"grid\": [\"rows * cols * 10000\"], \"block\": [32]"), 64, 4097, NULL,
                  "manifest: launches[0].grid[0] exceeds the device's limit of 2147483647");
    /* shared memory */
    resolve_fails(ONE("\"grid\": [1], \"block\": [32], \"smem\": \"cols * 64\""), 64, 4097, NULL,
                  "manifest: launches[0].smem exceeds the device's limit of 232448");
    resolve_fails(ONE("\"grid\": [1], \"block\": [32], \"smem\": \"rows - cols\""), 64, 4097, NULL,
                  "manifest: launches[0].smem is negative");
    /* clusters */
    resolve_fails(ONE("\"grid\": [16, 16], \"block\": [32], \"cluster\": [4, 8]"), 64, 4097, NULL,
                  "manifest: launches[0].cluster exceeds the device's limit of 16 blocks per cluster");
    resolve_fails(ONE("\"grid\": [32], \"block\": [32], \"cluster\": [32]"), 64, 4097, NULL,
                  "manifest: launches[0].cluster[0] exceeds the device's limit of 16");
    resolve_fails(ONE("\"grid\": [\"rows\"], \"block\": [32], \"cluster\": [2]"), 63, 4097, NULL,
                  "manifest: launches[0].grid[0] is not a multiple of launches[0].cluster[0]");
    resolve_fails(ONE("\"grid\": [4, 4], \"block\": [32], \"cluster\": [1, \"rows - 63\"]"), 63,
                  4097, NULL, "manifest: launches[0].cluster[1] is 0 at this shape");
    /* scratch */
    resolve_fails("{\"launches\": [" OK0 "], \"scratch\": [{\"name\": \"t\", \"bytes\": \"rows - 64\", "
                  "\"init\": \"zero\"}]}", 64, 4097, NULL,
                  "manifest: scratch[0].bytes is 0 at this shape");
    resolve_fails("{\"launches\": [" OK0 "], \"scratch\": [{\"name\": \"t\", \"bytes\": "
                  "\"rows * cols * 1024 * 1024\", \"init\": \"zero\"}]}", 64, 4097, NULL,
                  "manifest: scratch[0].bytes exceeds the device's limit of 4294967296");
    /* limits given by the caller */
    kiln_device_limits lim;
    kiln_device_limits_default(&lim);
    lim.max_threads_per_block = 512;
    lim.max_cluster = 2;
    resolve_fails(ONE("\"grid\": [1], \"block\": [\"BLOCK * 4\"]"), 64, 4097, &lim,
                  "manifest: launches[0].block exceeds the device's limit of 512 threads per block");
    resolve_fails(ONE("\"grid\": [4], \"block\": [32], \"cluster\": [4]"), 64, 4097, &lim,
                  "manifest: launches[0].cluster[0] exceeds the device's limit of 2");
}


/* ---- #define constants ------------------------------------------------- */

/* One launch whose grid[0] is expr, after the lines head (from line 12). */
static const char *grid_json(const char *expr)
{
    static char json[512];
    snprintf(json, sizeof json, "{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"%s\"], "
             "\"block\": [\"BLOCK\"], \"args\": []}]}", expr);
    return json;
}

/* head's constants used by grid[0] = expr resolve to want (rows 64, cols 4096). */
static void define_resolves(const char *head, const char *expr, int64_t want)
{
    kiln_manifest m;
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(rq);
    parse_ok(with_json(head, grid_json(expr)), &m);
    resolve_ok(&m, KILN_DT_F32, shape(64, 4096), NULL, rq);
    if (rq->launches[0].grid[0] != want)
        fail_msg("%s: grid[0] = %u, want %lld", expr, rq->launches[0].grid[0], (long long)want);
    free(rq);
}

static void test_defines(void **state)
{
    (void)state;
    define_resolves("#define TILE 64\n", "cdiv(cols, TILE)", 64);
    define_resolves("#define TILE   64   // a comment\n#define NEG -3\n", "TILE + NEG", 61);
    define_resolves("  #  define TILE /* c */ 32 /* d */\n", "TILE", 32);
    define_resolves("#define TILE 64\r\n", "TILE", 64);
    /* #if blocks that are closed do not hide what follows */
    define_resolves("#ifdef KILN_DTYPE_F32\n#define V 4\n#else\n#define V 8\n#endif\n"
                    "#if 1\n#  if 0\n#  endif\n#endif\n#define TILE 16\n", "TILE", 16);
    /* a dim wins over a #define of its name (the kernel would not build) */
    define_resolves("#define cols 5\n", "cols / 1024", 4);
    /* only the constants used are kept */
    kiln_manifest m;
    parse_ok(with_json("#define A 1\n#define B 2\n#define C 3\n", grid_json("C + A")), &m);
    assert_int_equal(m.ndefines, 2);
    assert_string_equal(m.defines[0].name, "C");
    assert_string_equal(m.defines[0].value, "3");
    assert_string_equal(m.defines[1].name, "A");
}

static const struct { const char *head, *expr, *want; } DEFINE_ERRORS[] = {
    {"#define HEX 0x40\n", "HEX", "grid[0]: 'HEX' (line 12) is not #defined as a decimal integer"},
    {"#define OCT 010\n", "OCT", "'OCT' (line 12) is not #defined as a decimal integer"},
    {"#define SUF 64u\n", "SUF", "is not #defined as a decimal integer"},
    {"#define PAR (64)\n", "PAR", "is not #defined as a decimal integer"},
    {"#define EXPR 32 * 2\n", "EXPR", "is not #defined as a decimal integer"},
    {"#define FN(x) 4\n", "FN", "'FN' (line 12) is not #defined as a decimal integer"},
    {"#define EMPTY\n", "EMPTY", "is not #defined as a decimal integer"},
    {"#define CONT \\\n 64\n", "CONT", "'CONT' (line 12) is not #defined as a decimal integer"},
    {"#ifdef KILN_DTYPE_F32\n#define V 4\n#else\n#define W 8\n#endif\n", "W",
     "'W' is #defined inside #if/#ifdef/#ifndef (line 15)"},
    {"#ifndef T2\n#define T2 4\n#endif\n", "T2", "inside #if"},
    {"#if 1\n#endif\n#if 1\n#define X 4\n#endif\n", "X", "inside #if"},
    {"#define D 4\n#define D 4\n", "D", "'D' is #defined or #undef'd more than once (lines 12 and 13)"},
    {"#define D 4\n#undef D\n", "D", "more than once (lines 12 and 13)"},
    {"#undef D\n", "D", "unknown name 'D'"},
    {"// #define D 4\n", "D", "unknown name 'D'"},
    {"/* a comment\n#define D 4\n*/\n", "D", "unknown name 'D'"},
};

static void test_define_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof DEFINE_ERRORS / sizeof *DEFINE_ERRORS; i++)
        parse_fails(with_json(DEFINE_ERRORS[i].head, grid_json(DEFINE_ERRORS[i].expr)),
                    DEFINE_ERRORS[i].want, "launches[0].grid[0]");
    /* at most 32 distinct constants, across all expressions */
    char head[2048] = "", a[512] = "", b[512] = "", json[1400];
    for (int i = 0; i < 33; i++) {
        snprintf(head + strlen(head), sizeof head - strlen(head), "#define D%d %d\n", i, i);
        char *e = i < 20 ? a : b;
        snprintf(e + strlen(e), 512 - strlen(e), "%sD%d", e[0] ? "+" : "", i);
    }
    snprintf(json, sizeof json, "{\"let\": {\"a\": \"%s\", \"b\": \"%s\"}, \"launches\": "
             "[{\"kernel\": \"rmsnorm_fwd\", \"grid\": [1], \"block\": [1], \"args\": []}]}", a, b);
    parse_fails(with_json(head, json), "manifest: let.b: the expressions use more than 32 #define "
                "constants", NULL);
}

/* ---- lets ------------------------------------------------------------------ */

static const char LET_JSON[] =
    "{\"let\": {\"vec\": \"gcd(cols, 8)\", \"threads\": \"min(1024, cols / vec)\",\n"
    "          \"per\": \"cols % 2 == 0 && rows > 32 ? 2 : 1\", \"bytes\": 16},\n"
    " \"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"cdiv(rows, per)\"],\n"
    "   \"block\": [\"threads\"], \"smem\": \"threads * vec * sizeof(T) + bytes\",\n"
    "   \"args\": [\"x\", \"w\", \"y\", \"cols\", \"eps\", \"tmp\"]}],\n"
    " \"scratch\": [{\"name\": \"tmp\", \"bytes\": \"rows * per * bytes\", \"init\": \"zero\"}]}\n";

static void test_lets(void **state)
{
    (void)state;
    kiln_manifest m;
    parse_ok(with_json("", LET_JSON), &m);
    assert_int_equal(m.nlets, 4);             /* in the order written */
    assert_string_equal(m.lets[0].name, "vec");
    assert_string_equal(m.lets[0].expr, "gcd(cols, 8)");
    assert_string_equal(m.lets[1].name, "threads");
    assert_string_equal(m.lets[3].name, "bytes");
    assert_string_equal(m.lets[3].expr, "16");
    kiln_call_req *rq = calloc(1, sizeof *rq);
    assert_non_null(rq);
    /* 64 x 4096: vec 8, threads 512, per 2 */
    resolve_ok(&m, KILN_DT_F32, shape(64, 4096), NULL, rq);
    assert_int_equal(rq->launches[0].grid[0], 32);
    assert_int_equal(rq->launches[0].block[0], 512);
    assert_int_equal(rq->launches[0].smem, 512 * 8 * 4 + 16);
    assert_int_equal(rq->scratch[0].bytes, 64 * 2 * 16);
    /* 63 x 1001: vec 1, threads 1001, per 1 */
    resolve_ok(&m, KILN_DT_BF16, shape(63, 1001), NULL, rq);
    assert_int_equal(rq->launches[0].grid[0], 63);
    assert_int_equal(rq->launches[0].block[0], 1001);
    assert_int_equal(rq->launches[0].smem, 1001 * 1 * 2 + 16);
    assert_int_equal(rq->scratch[0].bytes, 63 * 16);
    /* lets may be negative; only the fields are bounded */
    parse_ok(with_json("#define TILE 4\n", "{\"let\": {\"d\": \"rows - cols\", \"t\": \"TILE * 2\"}, "
                       "\"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": [\"d < 0 ? -d : d\"], "
                       "\"block\": [\"t\"], \"args\": []}]}"), &m);
    resolve_ok(&m, KILN_DT_F32, shape(64, 4096), NULL, rq);
    assert_int_equal(rq->launches[0].grid[0], 4032);
    assert_int_equal(rq->launches[0].block[0], 8);
    free(rq);
}

#define LET(lets) "{\"let\": " lets ", \"launches\": [{\"kernel\": \"rmsnorm_fwd\", " \
                  "\"grid\": [1], \"block\": [1], \"args\": []}]}"

static void test_let_errors(void **state)
{
    (void)state;
    json_fails(LET("[\"vec\"]"), "manifest: let: must be an object of names and expressions", NULL);
    json_fails(LET("\"vec\""), "manifest: let: must be an object", NULL);
    json_fails(LET("{\"3x\": 1}"), "manifest: let.3x: a let's name must be an identifier", NULL);
    json_fails(LET("{\"\": 1}"), "manifest: let.: a let's name must be an identifier", NULL);
    json_fails(LET("{\"a_name_that_is_much_too_long_for_kiln\": 1}"),
               "a let's name must be an identifier of at most 31 characters", NULL);
    json_fails(LET("{\"a\": 1, \"a\": 2}"), "manifest: let.a: 'a' is defined twice", NULL);
    json_fails(LET("{\"rows\": 1}"), "manifest: let.rows: 'rows' is a dim of task rmsnorm; a let "
               "may not shadow it", NULL);
    json_fails(LET("{\"BLOCK\": 1}"), "manifest: let.BLOCK: 'BLOCK' is a knob (line 2)", NULL);
    json_fails(LET("{\"gcd\": 1}"), "manifest: let.gcd: 'gcd' is a function", NULL);
    json_fails(LET("{\"sizeof\": 1}"), "'sizeof' is a function", NULL);
    parse_fails(with_json("#define TILE 4\n", LET("{\"TILE\": 1}")),
                "manifest: let.TILE: 'TILE' is #defined in the source (line 12)", NULL);
    parse_fails(with_json("#define F(x) x\n", LET("{\"F\": 1}")), "'F' is #defined in the source",
                NULL);
    json_fails(LET("{\"a\": \"b + 1\", \"b\": 2}"),
               "manifest: let.a: 'b' is a later let; a let may use only the lets before it", NULL);
    json_fails(LET("{\"a\": \"a + 1\"}"), "manifest: let.a: a let cannot use itself", NULL);
    json_fails(LET("{\"a\": \"foo\"}"), "manifest: let.a: unknown name 'foo'", NULL);
    json_fails(LET("{\"a\": \"rows ? 1\"}"), "manifest: let.a: ", "expected ':'");
    json_fails(LET("{\"a\": \"rows = 1\"}"), "manifest: let.a: ", "compare with '=='");
    json_fails(LET("{\"a\": true}"), "manifest: let.a: must be an integer or an expression string",
               NULL);
    json_fails(LET("{\"a\": -1}"), "manifest: let.a: -1 is not a non-negative integer", NULL);
    json_fails(LET("{\"a\": \"sizeof(U)\"}"), "manifest: let.a: unknown type 'U'", NULL);
    /* a launch may not name an unknown let either */
    json_fails("{\"let\": {\"a\": 1}, \"launches\": [{\"kernel\": \"rmsnorm_fwd\", \"grid\": "
               "[\"b\"], \"block\": [1], \"args\": []}]}",
               "manifest: launches[0].grid[0]: unknown name 'b'", NULL);
    /* 16 lets are accepted, 17 are not; each expression keeps its 255 characters */
    char lets[1024] = "{\"v0\": 0", json[1536];
    for (int i = 1; i < 16; i++)
        snprintf(lets + strlen(lets), sizeof lets - strlen(lets), ", \"v%d\": \"v%d + 1\"", i,
                 i - 1);
    snprintf(json, sizeof json, LET("%s, \"v16\": 16}"), lets);
    json_fails(json, "manifest: let: more than 16 names", NULL);
    snprintf(json, sizeof json, LET("%s}"), lets);
    kiln_manifest m;
    parse_ok(with_json("", json), &m);
    assert_int_equal(m.nlets, 16);
    assert_string_equal(m.lets[15].expr, "v14 + 1");
    char longexpr[320] = "";   /* 60 * 5 + 1 characters, and the NUL */
    for (int i = 0; i < 60; i++)
        strcat(longexpr, "rows+");
    strcat(longexpr, "1");
    snprintf(json, sizeof json, LET("{\"a\": \"%s\"}"), longexpr);
    json_fails(json, "manifest: let.a: expression longer than 255 characters", NULL);
}

/* A let that fails at a shape fails it, naming the let, never the dims. */
static void test_let_resolve_errors(void **state)
{
    (void)state;
    resolve_fails(LET("{\"q\": \"cols / (rows - 64)\"}"), 64, 4097, NULL,
                  "manifest: let.q: division by zero");
    resolve_fails(LET("{\"q\": \"cols * 4611686018427387904\"}"), 64, 4097, NULL,
                  "manifest: let.q: integer overflow in '*'");
    resolve_fails(LET("{\"q\": \"lcm(cols, 9223372036854775807)\"}"), 64, 4097, NULL,
                  "manifest: let.q: integer overflow in lcm()");
    /* an unused let fails the shape too: the resolver evaluates them all */
    resolve_fails(LET("{\"ok\": 1, \"unused\": \"1 / (rows - 64)\"}"), 64, 4097, NULL,
                  "manifest: let.unused: division by zero");
    /* a field that uses a let is checked as any other */
    resolve_fails("{\"let\": {\"g\": \"cols < 5000 ? 0 : 1\"}, \"launches\": [{\"kernel\": "
                  "\"rmsnorm_fwd\", \"grid\": [\"g\"], \"block\": [1], \"args\": []}]}", 64, 4097,
                  NULL, "manifest: launches[0].grid[0] is 0 at this shape");
}

/* kiln_manifest_locate finds the block the parser would, not text that
 * only looks like one. */
static void test_locate(void **state)
{
    (void)state;
    const char *src = "const char *s = \"/*@kiln launch {} @*/\"; // /*@kiln launch\n"
                      "__global__ void k() {}\n/*@kiln launch\n{\"launches\": []}\n@*/\n";
    kiln_manifest_span sp;
    assert_int_equal(kiln_manifest_locate(src, strlen(src), &sp), 1);
    assert_ptr_equal(src + sp.block_at, strstr(src, "\n/*@kiln launch") + 1);
    assert_memory_equal(src + sp.block_end - 3, "@*/", 3);
    assert_memory_equal(src + sp.json_at, "\n{\"launches\": []}\n", sp.json_end - sp.json_at);
    const char *none = "__global__ void k() {} /* kiln launch */";
    assert_int_equal(kiln_manifest_locate(none, strlen(none), &sp), 0);
    const char *open = "/*@kiln launch {\"launches\": []}";
    assert_int_equal(kiln_manifest_locate(open, strlen(open), &sp), 0);
    const char *no_at = "/*@kiln launch {\"launches\": []} */";
    assert_int_equal(kiln_manifest_locate(no_at, strlen(no_at), &sp), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_rmsnorm),
        cmocka_unit_test(test_valid_defaults_and_integers),
        cmocka_unit_test(test_knobs_in_expressions),
        cmocka_unit_test(test_comments_and_strings),
        cmocka_unit_test(test_block_errors),
        cmocka_unit_test(test_knob_errors),
        cmocka_unit_test(test_unknown_and_missing_fields),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_scratch_names),
        cmocka_unit_test(test_expression_errors),
        cmocka_unit_test(test_limits_default),
        cmocka_unit_test(test_resolve_rmsnorm),
        cmocka_unit_test(test_resolve_knobs),
        cmocka_unit_test(test_resolve_errors),
        cmocka_unit_test(test_defines),
        cmocka_unit_test(test_define_errors),
        cmocka_unit_test(test_lets),
        cmocka_unit_test(test_let_errors),
        cmocka_unit_test(test_let_resolve_errors),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_when),
        cmocka_unit_test(test_computed_args),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
