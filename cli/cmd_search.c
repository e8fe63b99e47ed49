/* cmd_search.c - `kiln search`: parse the command line, run the search. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keep_rule.h"
#include "search.h"

static const char usage[] =
    "usage: kiln search TASK [options]\n"
    "\n"
    "Search for a faster kernel: propose candidates, verify each against its parent,\n"
    "keep the ones that are correct and faster (confirmed by a re-time), and record\n"
    "everything in a git workspace and its database.\n"
    "\n"
    "options:\n"
    "  --agent A          tune (default without --model), openai, anthropic, replay\n"
    "  --model M          the model (openai / anthropic)\n"
    "  --base-url URL     OpenAI-compatible server (default $OPENAI_BASE_URL or OpenAI)\n"
    "  --from FILE|DIR    start kernel (default: the task's starter); replay: the directory\n"
    "  --drafts N         proposals per iteration, verified together (default 1)\n"
    "  --iterations N     stop after N iterations\n"
    "  --budget DURATION  stop after this much time (90s, 30m, 8h, 1h30m)\n"
    "  --max-tokens N     stop after N model tokens\n"
    "  --answer-tokens N  longest model answer (default 4096)\n"
    "  --model-failures N, --model-failure-window DURATION\n"
    "                     stop when N model calls in a row failed over at least DURATION\n"
    "                     (default 5 and 2m; each call is retried with backoff first)\n"
    "  --seed S           seed of the tuner (default 1)\n"
    "  --backend B        cpu (default) or cuda (kernels verified on a GPU)\n"
    "  --dtype T, --group G   as for kiln verify (default: the backend's first dtype)\n"
    "  --workspace DIR    the git workspace (default ./kiln-work): one kiln made, or a new\n"
    "                     or empty directory; any other is refused, never written to\n"
    "  --resume RUN       continue a run (RUN or 'last')\n"
    "  --timing-ms N      timing budget of each verification (default 1000)\n"
    "  --keep-margin P    keep a candidate only if the lower end of its objective's\n"
    "                     interval against its parent exceeds 1 + P (default 2%)\n"
    "  --max-regression P ... and no visible shape is surely slower than 1 - P: the\n"
    "                     upper end of its interval below it (default 3%)\n"
    "  --objective O      geomean (default), min, a visible shape id (v3), or per-shape:\n"
    "                     keep a kernel that is surely fastest at one shape or more\n"
    "                     (the export serves each shape with its fastest kept kernel)\n"
    "                     (the three are recorded with the run; --resume keeps them)\n"
    "  --parents P        best (each iteration starts from the best kernel) or archive\n"
    "                     (a seeded draw from the run's elites; the default for a model)\n"
    "  --socket ADDR      kilnd to use (default $KILN_SOCKET; started on demand)\n"
    "  --verifiers ADDR,...   many kilnds (Unix socket paths or tcp://HOST:PORT, the token\n"
    "                     in $KILN_TOKEN_FILE): drafts go to the one with the most free\n"
    "                     lanes; one that dies has its jobs sent to the others\n"
    "  --fleet DIR        the kilnds of a fleet directory (kiln fleet up), read again as\n"
    "                     nodes join; its token is DIR/token\n"
    "  --no-daemon        verify in this process\n"
    "  --json             one JSON event per line\n"
    "\n"
    "Ctrl-C, SIGTERM, SIGHUP and a closed output (kiln search | head) stop after the\n"
    "current step, recording the run as stopped; a second Ctrl-C aborts. Resume with\n"
    "--resume. Overnight: nohup kiln search ... > log 2>&1 &, or run it in tmux.\n"
    "\n"
    "Exit status: 0 done, 2 bad input, 3 internal error (a model server that keeps\n"
    "failing, no GPU for a CUDA run), 130 interrupted (resumable).\n";

/* "90", "90s", "30m", "8h", "1h30m", "1.5h" -> seconds; -1 if malformed. A
 * bare number is seconds only on its own: "1h30" is refused, not read as
 * 1 h 0 min 30 s, and each unit comes once, largest first. */
static double parse_duration(const char *s)
{
    static const char units[] = "hms";
    static const double secs[] = {3600, 60, 1};
    double total = 0;
    int next = 0;   /* the first unit still allowed */
    const char *start = s;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || v < 0 || *s == '+' || *s == '-' || *s == ' ')
            return -1;
        if (!*end)
            return s == start ? v : -1;
        const char *u = strchr(units + next, *end);
        if (!u || !*u)
            return -1;
        total += v * secs[u - units];
        next = (int)(u - units) + 1;
        s = end + 1;
    }
    return s == start ? -1 : total;
}

/* Why a duration is refused, with the spelling that was likely meant. */
static int bad_duration(const char *flag, const char *v)
{
    size_t n = strlen(v);
    if (n > 0 && n < 32 && v[n - 1] >= '0' && v[n - 1] <= '9' && strpbrk(v, "hm")) {
        /* the unit after the last one given: 1h30 -> 1h30m, 2m30 -> 2m30s */
        size_t last = strcspn(v, "hm");
        for (size_t k = last; v[k]; k++)
            if (v[k] == 'h' || v[k] == 'm')
                last = k;
        return fprintf(stderr, "kiln search: bad value for %s: '%s' (a number after a unit "
                       "needs one too: %s%c)\n", flag, v, v, v[last] == 'h' ? 'm' : 's'), -1;
    }
    return fprintf(stderr, "kiln search: bad value for %s: '%s' (a duration such as 90s, 30m, 8h "
                   "or 1h30m)\n", flag, v), -1;
}

static int parse_count(const char *v, long long max, long long *out)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || n < 0 || n > max)
        return -1;
    *out = n;
    return 0;
}

static int bad(const char *flag, const char *v)
{
    fprintf(stderr, "kiln search: bad value for %s: '%s'\n", flag, v);
    return -1;
}

static int numeric(kiln_search_opts *o, const char *flag, const char *v)
{
    long long n;
    if (strcmp(flag, "--budget") == 0)
        return (o->budget_s = parse_duration(v)) <= 0 ? bad_duration(flag, v) : 0;
    if (strcmp(flag, "--model-failure-window") == 0)
        return (o->model_failure_window_s = parse_duration(v)) <= 0 ? bad_duration(flag, v) : 0;
    if (strcmp(flag, "--keep-margin") == 0 || strcmp(flag, "--max-regression") == 0) {
        kiln_error e;
        double *slot = flag[2] == 'k' ? &o->keep_margin : &o->max_regression;
        if (kiln_keep_parse_percent(flag, v, slot, &e) < 0)
            return fprintf(stderr, "kiln search: %s\n", e.msg), -1;
        return 0;
    }
    if (parse_count(v, 1LL << 40, &n) < 0)
        return bad(flag, v);
    if (strcmp(flag, "--drafts") == 0 && (n < 1 || n > 16))
        return bad(flag, v);
    if (strcmp(flag, "--iterations") == 0 && n < 1)
        return fprintf(stderr, "kiln search: bad value for --iterations: '%s' (1 or more; leave "
                       "the flag out for no limit)\n", v), -1;
    if (strcmp(flag, "--timing-ms") == 0 && (n < 1 || n > 3600000))
        return fprintf(stderr, "kiln search: bad value for --timing-ms: '%s' (1 to 3600000 ms of "
                       "timing a verification)\n", v), -1;
    if (strcmp(flag, "--drafts") == 0)
        o->drafts = (int)n;
    else if (strcmp(flag, "--iterations") == 0)
        o->iterations = (int)n;
    else if (strcmp(flag, "--max-tokens") == 0)
        o->max_tokens = n;
    else if (strcmp(flag, "--answer-tokens") == 0)
        o->answer_tokens = (int)n;
    else if (strcmp(flag, "--seed") == 0)
        o->seed = (unsigned long long)n;
    else if (strcmp(flag, "--timing-ms") == 0)
        o->timing_ms = (int)n;
    else if (strcmp(flag, "--model-failures") == 0 && (n < 1 || n > 1000))
        return bad(flag, v);
    else if (strcmp(flag, "--model-failures") == 0)
        o->model_failures = (int)n;
    return 0;
}

static int parse(int argc, char **argv, kiln_search_opts *o)
{
    static const char *strings[] = {"--agent", "--model", "--base-url", "--from", "--backend",
                                    "--dtype", "--group", "--workspace", "--resume", "--socket",
                                    "--objective", "--parents", "--verifiers", "--fleet"};
    static const char *numbers[] = {"--drafts", "--iterations", "--budget", "--max-tokens",
                                    "--answer-tokens", "--seed", "--timing-ms", "--model-failures",
                                    "--model-failure-window", "--keep-margin", "--max-regression"};
    const char **slots[] = {&o->agent, &o->model, &o->base_url, &o->from, &o->backend,
                            &o->dtype, &o->group, &o->workspace, &o->resume, &o->socket,
                            &o->objective, &o->parents, &o->verifiers, &o->fleet};
    for (int i = 1; i < argc; i++) {
        int miss = 0, done = 0;
        const char *v;
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            exit(KILN_EXIT_OK);
        }
        for (size_t k = 0; k < sizeof strings / sizeof *strings && !done; k++)
            if ((v = kiln_flag_value(argc, argv, &i, strings[k], &miss)))
                *slots[k] = v, done = 1;
        for (size_t k = 0; k < sizeof numbers / sizeof *numbers && !done; k++)
            if ((v = kiln_flag_value(argc, argv, &i, numbers[k], &miss))) {
                if (numeric(o, numbers[k], v) < 0)
                    return -1;
                done = 1;
            }
        if (done)
            continue;
        if (miss)
            return fprintf(stderr, "kiln search: %s needs a value\n", argv[i]), -1;
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--no-daemon") == 0)
            o->no_daemon = 1;
        else if (argv[i][0] == '-' || o->task)
            return kiln_unexpected("search", argv[i], usage);
        else
            o->task = argv[i];
    }
    if ((o->verifiers != NULL) + (o->fleet != NULL) + (o->socket != NULL) + o->no_daemon > 1)
        return fprintf(stderr, "kiln search: give one of --socket, --verifiers, --fleet and "
                               "--no-daemon\n"), -1;
    if (!o->task && !o->resume)
        return fprintf(stderr, "kiln search: need TASK (or --resume RUN)\n\n%s", usage), -1;
    return 0;
}

int kiln_cmd_search(int argc, char **argv)
{
    kiln_search_opts o = {.drafts = 1, .seed = 1, .timing_ms = 1000, .keep_margin = -1,
                          .max_regression = -1};
    if (parse(argc, argv, &o) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (!o.task)
        o.task = "";
    return kiln_search(&o);
}
