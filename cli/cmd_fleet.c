/* cmd_fleet.c - `kiln fleet up|status|down`: kilnd daemons on a Slurm
 * cluster, one job per node, found through a fleet directory (docs/fleet.md):
 * DIR/token (0600), DIR/jobs (the submitted job ids), DIR/endpoints/JOB.json
 * (written by scripts/slurm/kilnd.sbatch once its kilnd answers). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "daemon_client.h"
#include "fileutil.h"
#include "paths.h"
#include "kilnd_pool.h"

#ifndef KILN_SLURM_SCRIPT
#define KILN_SLURM_SCRIPT "scripts/slurm/kilnd.sbatch"
#endif

static const char usage[] =
    "usage: kiln fleet up --slurm --dir DIR [--nodes N] [--devices LIST] [-- SBATCH_OPTIONS...]\n"
    "       kiln fleet status --dir DIR [--json]\n"
    "       kiln fleet down --dir DIR\n"
    "\n"
    "up      submit N (default 1) kilnd jobs with sbatch (scripts/slurm/kilnd.sbatch, or\n"
    "        $KILN_SLURM_SCRIPT), one task per node; each listens on TCP with DIR/token\n"
    "        (made with mode 0600 if absent) and writes DIR/endpoints/JOB.json. --devices\n"
    "        goes to kilnd (default: cpu and every GPU the job has). DIR must be on storage\n"
    "        the nodes share.\n"
    "status  each endpoint: up (lanes, queue) or down; jobs without an endpoint yet\n"
    "down    scancel the jobs and remove their endpoint files\n"
    "\n"
    "Exit status: 0 ok (status: every endpoint up), 1 (status) one down or none up,\n"
    "2 bad input, 3 internal error (sbatch or scancel missing or failing).\n";

typedef struct fleet_args {
    const char *dir, *devices;
    int slurm, nodes, json;
    int nsbatch;
    char **sbatch;              /* the options after -- */
} fleet_args;

static int parse(int argc, char **argv, fleet_args *a)
{
    a->nodes = 1;
    for (int i = 2; i < argc; i++) {
        int miss = 0;
        const char *v;
        if (strcmp(argv[i], "--") == 0) {
            a->sbatch = argv + i + 1;
            a->nsbatch = argc - i - 1;
            break;
        } else if (strcmp(argv[i], "--slurm") == 0) {
            a->slurm = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            a->json = 1;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--dir", &miss))) {
            a->dir = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--devices", &miss))) {
            a->devices = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--nodes", &miss))) {
            a->nodes = atoi(v);
        } else {
            fprintf(stderr, "kiln fleet: %s '%s'\n", miss ? "a value is missing after" : "unknown argument",
                    argv[i]);
            return -1;
        }
    }
    if (!a->dir) {
        fprintf(stderr, "kiln fleet: --dir DIR is required (the fleet directory)\n");
        return -1;
    }
    if (a->nsbatch > 64) {
        fprintf(stderr, "kiln fleet: at most 64 sbatch options after --\n");
        return -1;
    }
    if (a->nodes < 1 || a->nodes > 1024) {
        fprintf(stderr, "kiln fleet: --nodes must be from 1 to 1024\n");
        return -1;
    }
    return 0;
}

/* up: DIR made when its parent exists, and DIR/token when absent: created
 * 0600 from the start (never readable by others, not even for a moment),
 * and removed again if it cannot be written whole. */
static int make_fleet(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) < 0 && errno == ENOENT && mkdir(dir, 0700) < 0) {
        fprintf(stderr, "kiln fleet: cannot create the fleet directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/token", dir);
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || stat(path, &st) == 0 || errno != ENOENT)
        return 0;   /* what is wrong, if anything, fleet_check says */
    unsigned char raw[24];
    char text[2 * sizeof raw + 2] = "";
    int fd = -1;
    ssize_t len = -1;
    if (getrandom(raw, sizeof raw, 0) == (ssize_t)sizeof raw &&
        (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(text + 2 * i, 3, "%02x", raw[i]);
        strcat(text, "\n");
        len = write(fd, text, strlen(text));
    }
    int e = errno;
    if (fd >= 0 && (close(fd) != 0 || len != (ssize_t)strlen(text))) {
        unlink(path);   /* an empty or partial token must not be found later */
        fd = -1;
    }
    if (fd < 0) {
        fprintf(stderr, "kiln fleet: cannot create the token file %s: %s\n", path, strerror(e));
        return -1;
    }
    return 0;
}

/* DIR and DIR/token as every reader of a fleet needs them
 * (kiln_fleet_dir_check); KILN_TOKEN_FILE set to the token. */
static int fleet_check(const char *dir, char *token, size_t len)
{
    kiln_error err = {0};
    if (kiln_fleet_dir_check(dir, token, len, &err) < 0) {
        fprintf(stderr, "kiln fleet: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* A Slurm command on PATH, or a message saying it is missing. */
static int find_tool(const char *name)
{
    const char *path = getenv("PATH");
    char buf[4096], full[4200];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
    for (char *save, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(full, sizeof full, "%s/%s", d, name);
        if (access(full, X_OK) == 0)
            return 0;
    }
    fprintf(stderr, "kiln fleet: %s not found on PATH: is Slurm installed on this machine?\n", name);
    return -1;
}

/* Run argv, its stdout into out (up to len); -1 if it could not run or failed. */
static int run_tool(char **argv, char *out, size_t len)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "kiln fleet: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    char chunk[512];
    while (pid > 0 && (r = read(p[0], chunk, sizeof chunk)) > 0)   /* to EOF; keep what fits */
        for (ssize_t k = 0; k < r && n < len - 1; k++)
            out[n++] = chunk[k];
    out[n] = '\0';
    close(p[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- up ------------------------------------------------------------------- */

static int submit_one(const fleet_args *a, const char *script, const char *bindir, char *job,
                      size_t jlen)
{
    char logs[4200], exp[4200], outp[4300];
    snprintf(logs, sizeof logs, "%s/logs", a->dir);
    mkdir(logs, 0700);
    snprintf(outp, sizeof outp, "--output=%s/kilnd-%%j.out", logs);
    snprintf(exp, sizeof exp, "--export=ALL,KILN_BIN=%s", bindir);
    char *argv[64 + 16];
    int n = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = outp;
    argv[n++] = exp;
    for (int i = 0; i < a->nsbatch; i++)
        argv[n++] = a->sbatch[i];
    argv[n++] = (char *)script;
    argv[n++] = (char *)a->dir;
    if (a->devices) {
        argv[n++] = "--devices";
        argv[n++] = (char *)a->devices;
    }
    argv[n] = NULL;
    char out[256];
    if (run_tool(argv, out, sizeof out) < 0) {
        fprintf(stderr, "kiln fleet: sbatch %s failed (its message is above)\n", script);
        return -1;
    }
    snprintf(job, jlen, "%.*s", (int)strcspn(out, ";\n"), out);   /* "JOB[;CLUSTER]" */
    if (!job[0] || job[strspn(job, "0123456789")] != '\0') {
        fprintf(stderr, "kiln fleet: sbatch --parsable printed no job id: '%s'\n", out);
        return -1;
    }
    return 0;
}

static int fleet_up(const fleet_args *a)
{
    char token[4200], script[4096], bindir[4096], jobs[4200];
    if (!a->slurm) {
        fprintf(stderr, "kiln fleet up: say how to start the daemons: --slurm (the only way today)\n");
        return KILN_EXIT_BAD_INPUT;
    }
    if (make_fleet(a->dir) < 0 || fleet_check(a->dir, token, sizeof token) < 0)
        return KILN_EXIT_BAD_INPUT;
    char absdir[PATH_MAX];   /* the jobs may start elsewhere */
    if (!realpath(a->dir, absdir)) {
        fprintf(stderr, "kiln fleet: cannot resolve %s: %s\n", a->dir, strerror(errno));
        return KILN_EXIT_BAD_INPUT;
    }
    fleet_args abs = *a;
    abs.dir = absdir;
    a = &abs;
    if (find_tool("sbatch") < 0)
        return KILN_EXIT_INTERNAL;
    const char *env = getenv("KILN_SLURM_SCRIPT");
    snprintf(script, sizeof script, "%s", env && *env ? env : KILN_SLURM_SCRIPT);
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "kiln fleet: the sbatch script %s is not readable (set KILN_SLURM_SCRIPT)\n", script);
        return KILN_EXIT_INTERNAL;
    }
    kiln_error perr = {0};
    if (kiln_kilnd_path(bindir, sizeof bindir, &perr) < 0) {   /* the jobs run this kilnd */
        fprintf(stderr, "kiln fleet: %s\n", perr.msg);
        return KILN_EXIT_INTERNAL;
    }
    char *slash = strrchr(bindir, '/');
    if (slash)
        *slash = '\0';
    snprintf(jobs, sizeof jobs, "%s/jobs", a->dir);
    for (int i = 0; i < a->nodes; i++) {
        char job[64];
        if (submit_one(a, script, bindir, job, sizeof job) < 0)
            return KILN_EXIT_INTERNAL;
        FILE *f = fopen(jobs, "a");
        if (!f || fprintf(f, "%s\n", job) < 0 || fclose(f) != 0) {
            fprintf(stderr, "kiln fleet: cannot record job %s in %s: scancel it by hand\n", job, jobs);
            return KILN_EXIT_INTERNAL;
        }
        printf("submitted kilnd job %s\n", job);
    }
    printf("endpoints appear in %s/endpoints as the jobs start; see kiln fleet status --dir %s\n",
           a->dir, a->dir);
    return KILN_EXIT_OK;
}

/* ---- status --------------------------------------------------------------- */

/* One endpoint file: ask its kilnd for its status; add a row to rows. */
static int status_one(const char *file, const char *job, cJSON *rows)
{
    char *text = NULL;
    size_t len;
    kiln_error err = {0};
    cJSON *ep = kiln_read_file(file, 1 << 16, &text, &len, &err) == 0 ? cJSON_Parse(text) : NULL;
    free(text);
    const char *addr = cJSON_GetStringValue(cJSON_GetObjectItem(ep, "endpoint"));
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "job", job);
    cJSON_AddStringToObject(row, "endpoint", addr ? addr : "");
    int up = 0;
    cJSON *r = NULL;
    if (!addr)
        kiln_fail(&err, "%s is not an endpoint file", file);
    else
        r = kiln_client_status(addr, 5000, &err);
    const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(r, "event"));
    up = ev && strcmp(ev, "status") == 0;
    cJSON_AddStringToObject(row, "health", up ? "up" : "down");
    if (!up)
        cJSON_AddStringToObject(row, "error", ev ? "no status answer" : err.msg);
    cJSON *lanes = cJSON_AddArrayToObject(row, "lanes"), *d;
    cJSON *from = up ? cJSON_GetObjectItem(r, "devices") : cJSON_GetObjectItem(ep, "lanes");
    cJSON_ArrayForEach(d, from) {
        const char *name = cJSON_IsString(d) ? d->valuestring : cJSON_GetStringValue(cJSON_GetObjectItem(d, "name"));
        cJSON_AddItemToArray(lanes, cJSON_CreateString(name ? name : "?"));
    }
    for (const char *const *k = (const char *const[]){"queued", "active", "jobs_done", NULL}; up && *k; k++)
        cJSON_AddNumberToObject(row, *k, cJSON_GetNumberValue(cJSON_GetObjectItem(r, *k)));
    cJSON_AddItemToArray(rows, row);
    cJSON_Delete(r);
    cJSON_Delete(ep);
    return up;
}

static void print_row(const cJSON *row)
{
    const char *job = cJSON_GetStringValue(cJSON_GetObjectItem(row, "job"));
    const char *addr = cJSON_GetStringValue(cJSON_GetObjectItem(row, "endpoint"));
    const char *health = cJSON_GetStringValue(cJSON_GetObjectItem(row, "health"));
    char lanes[512] = "";
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(row, "lanes"))
        snprintf(lanes + strlen(lanes), sizeof lanes - strlen(lanes), "%s%s", lanes[0] ? "," : "",
                 l->valuestring);
    printf("job %s  %s  %s", job, addr && *addr ? addr : "-", health);
    if (strcmp(health, "up") == 0)
        printf("  lanes %s  queued %.0f  active %.0f  done %.0f\n", lanes,
               cJSON_GetNumberValue(cJSON_GetObjectItem(row, "queued")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(row, "active")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(row, "jobs_done")));
    else if (strcmp(health, "down") == 0)
        printf("  lanes %s  (%s)\n", lanes, cJSON_GetStringValue(cJSON_GetObjectItem(row, "error")));
    else
        printf("  (no endpoint yet: queued in Slurm or starting)\n");
}

/* The job ids of DIR/jobs, one a line, into ids (up to max). */
static int read_jobs(const char *dir, char ids[][64], int max)
{
    char path[4200], line[128];
    snprintf(path, sizeof path, "%s/jobs", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && n < max && fgets(line, sizeof line, f))
        if (line[strspn(line, "0123456789")] == '\n' && line[0] != '\n')
            snprintf(ids[n++], 64, "%.*s", (int)strcspn(line, "\n"), line);
    if (f)
        fclose(f);
    return n;
}

static int fleet_status(const fleet_args *a)
{
    char token[4200], path[4400];
    static char ids[1024][64];
    if (fleet_check(a->dir, token, sizeof token) < 0)
        return KILN_EXIT_BAD_INPUT;
    int njobs = read_jobs(a->dir, ids, 1024), nup = 0, ndown = 0;
    cJSON *rows = cJSON_CreateArray();
    snprintf(path, sizeof path, "%s/endpoints", a->dir);
    DIR *dh = opendir(path);
    for (struct dirent *e; dh && (e = readdir(dh));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char job[64], file[4700];
        snprintf(job, sizeof job, "%.*s", (int)(len - 5), e->d_name);
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        status_one(file, job, rows) ? nup++ : ndown++;
        for (int i = 0; i < njobs; i++)
            if (strcmp(ids[i], job) == 0)
                ids[i][0] = '\0';
    }
    if (dh)
        closedir(dh);
    for (int i = 0; i < njobs; i++) {
        if (!ids[i][0])
            continue;
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "job", ids[i]);
        cJSON_AddStringToObject(row, "health", "pending");
        cJSON_AddItemToArray(rows, row);
    }
    if (a->json) {
        char *s = cJSON_Print(rows);
        puts(s ? s : "[]");
        free(s);
    } else {
        const cJSON *row;
        cJSON_ArrayForEach(row, rows)
            print_row(row);
        printf("%d up, %d down, %d without an endpoint\n", nup, ndown, cJSON_GetArraySize(rows) - nup - ndown);
    }
    cJSON_Delete(rows);
    return nup > 0 && ndown == 0 ? KILN_EXIT_OK : KILN_EXIT_FAIL;
}

/* ---- down ----------------------------------------------------------------- */

static int fleet_down(const fleet_args *a)
{
    static char ids[1024][64];
    char path[4200];
    struct stat st;
    int rc = stat(a->dir, &st);
    if (rc < 0 || !S_ISDIR(st.st_mode)) {   /* down needs no token: only the job list */
        fprintf(stderr, "kiln fleet: %s is not a fleet directory: %s\n", a->dir,
                rc < 0 ? strerror(errno) : "not a directory");
        return KILN_EXIT_BAD_INPUT;
    }
    int n = read_jobs(a->dir, ids, 1024);
    if (n == 0) {
        printf("no kilnd jobs recorded in %s/jobs: nothing to cancel\n", a->dir);
        return KILN_EXIT_OK;
    }
    if (find_tool("scancel") < 0)
        return KILN_EXIT_INTERNAL;
    char *argv[1024 + 2];
    argv[0] = "scancel";
    for (int i = 0; i < n; i++)
        argv[i + 1] = ids[i];
    argv[n + 1] = NULL;
    char out[256];
    if (run_tool(argv, out, sizeof out) < 0) {
        fprintf(stderr, "kiln fleet: scancel failed (its message is above); %s/jobs is kept\n", a->dir);
        return KILN_EXIT_INTERNAL;
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/endpoints/%.32s.json", a->dir, ids[i]);   /* job ids are short */
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/jobs", a->dir);
    unlink(path);
    printf("cancelled %d kilnd job%s\n", n, n == 1 ? "" : "s");
    return KILN_EXIT_OK;
}

int kiln_cmd_fleet(int argc, char **argv)
{
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    fleet_args a = {0};
    if (parse(argc, argv, &a) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (strcmp(argv[1], "up") == 0)
        return fleet_up(&a);
    if (strcmp(argv[1], "status") == 0)
        return fleet_status(&a);
    if (strcmp(argv[1], "down") == 0)
        return fleet_down(&a);
    fprintf(stderr, "kiln fleet: unknown command '%s' (up, status or down)\n%s", argv[1], usage);
    return KILN_EXIT_BAD_INPUT;
}
