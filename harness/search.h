/* search.h - `kiln search`: the loop that proposes candidates, verifies
 * them, keeps the ones that are faster and correct, and records it all. */
#ifndef KILN_SEARCH_H
#define KILN_SEARCH_H

typedef struct kiln_search_opts {
    const char *task;           /* name or directory */
    const char *backend;        /* "cpu" (NULL: cpu; a resumed run keeps its own) or "cuda" */
    const char *dtype, *group;  /* NULL: the task's defaults */
    const char *agent;          /* tune | openai | anthropic | replay */
    const char *model, *base_url;
    const char *from;           /* start file (tune/llm) or replay directory */
    int drafts;
    int iterations;             /* 0: no limit */
    double budget_s;            /* 0: no limit */
    long long max_tokens;       /* 0: no limit */
    unsigned long long seed;
    const char *workspace;
    const char *resume;         /* run id */
    const char *socket;
    const char *verifiers;      /* "ADDR,ADDR,...": many kilnds (kilnd_pool.h), or NULL */
    const char *fleet;          /* a fleet directory (kiln fleet up), or NULL */
    int json, no_daemon, timing_ms, answer_tokens;
    int model_failures;         /* stop after this many failed model calls in a row (0: 5) */
    double model_failure_window_s;   /* ... spanning at least this long (0: 120 s) */
    /* Pipelining's rule (shares.h): the least share of the wait it must
     * save (0: KILN_PIPELINE_MIN_SAVING; below 0: always, for a test whose
     * scripted verifier takes no wall time). No flag sets it. */
    double pipeline_min_saving;
    /* The keep rule (keep_rule.h): fractions, -1 when not given (2% and
     * 3%, or a resumed run's own); objective NULL: geomean, or the run's. */
    double keep_margin, max_regression;
    const char *objective;
    const char *parents;        /* "best" | "archive"; NULL: archive for a model, best otherwise */
} kiln_search_opts;

/* Returns a kiln exit status. */
int kiln_search(const kiln_search_opts *o);

#endif
