/* cmd_doctor.c - `kiln doctor`: checks what a kiln install needs, one line
 * each, and for anything wrong says how to fix it: the build, the daemon
 * (socket, version, binary identity), the GPU (driver, NVRTC, CUPTI through
 * the CUDA worker's probe), the sandbox (Landlock, seccomp), disk space,
 * and the configured model servers. Exit 0 when nothing needs fixing. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "daemon_client.h"
#include "paths.h"

static const char usage[] =
    "usage: kiln doctor [--socket ADDR] [--json]\n"
    "\n"
    "Check the build, the verifier daemon (socket, version, build identity), the GPU\n"
    "(driver, NVRTC, CUPTI), Landlock and seccomp, disk space and the configured model\n"
    "servers; print one line each, with the fix for anything wrong.\n"
    "\n"
    "--json prints one JSON object instead: ok (true when nothing needs fixing),\n"
    "problems (how many) and checks, a list of {check, ok, message, fix} (fix is\n"
    "null for a check that passed).\n"    "\n"
    "Exit status: 0 all fine, 1 something needs fixing, 2 bad usage.\n";

typedef struct doctor {
    int problems;
    cJSON *checks;              /* --json: the checks so far; NULL: print each line */
} doctor;

/* One check's outcome, for --json. */
static void add_check(doctor *d, const char *what, const char *message, const char *remedy)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "check", what);
    cJSON_AddBoolToObject(o, "ok", remedy == NULL);
    cJSON_AddStringToObject(o, "message", message);
    if (remedy)
        cJSON_AddStringToObject(o, "fix", remedy);
    else
        cJSON_AddNullToObject(o, "fix");
    cJSON_AddItemToArray(d->checks, o);
}

static void ok(doctor *d, const char *what, const char *fmt, const char *detail)
{
    char line[4600];
    snprintf(line, sizeof line, fmt, detail ? detail : "");   /* fmt: this file's, one %s */
    if (d->checks)
        add_check(d, what, line, NULL);
    else
        printf("ok    %-10s %s\n", what, line);
}

static void fix(doctor *d, const char *what, const char *problem, const char *remedy)
{
    d->problems++;
    if (d->checks)
        add_check(d, what, problem, remedy);
    else
        printf("FIX   %-10s %s\n      %-10s fix: %s\n", what, problem, "", remedy);
}

/* The directory part of path (in a static buffer). */
static const char *dirname_of(const char *path)
{
    static char dir[4300];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    return dir;
}

static void check_build(doctor *d)
{
    char path[4300];
    kiln_error err;
    if (kiln_kilnd_path(path, sizeof path, &err) < 0 || access(path, X_OK) != 0)
        fix(d, "build", "kilnd is missing next to kiln", "scripts/setup.sh (it builds into build/)");
    else if (kiln_worker_path(path, sizeof path, &err) < 0 || access(path, X_OK) != 0)
        fix(d, "build", "kiln-worker is missing next to kiln", "scripts/setup.sh");
    else
        ok(d, "build", "kiln, kilnd and kiln-worker are in %s", dirname_of(path));
    if (kiln_cuda_worker_path(path, sizeof path, &err) < 0 || access(path, X_OK) != 0)
        ok(d, "build", "%sno kiln-worker-cuda: built without the CUDA toolkit, so only the CPU "
           "backend", NULL);
}

static void check_daemon(doctor *d, const char *flag)
{
    char addr[4300], kilnd[4300], mine[17];
    kiln_error err;
    if (kiln_client_address(flag, addr, sizeof addr, &err) < 0) {
        fix(d, "daemon", err.msg, "set KILN_SOCKET or KILN_STATE");
        return;
    }
    kiln_client c;
    if (kiln_client_open(&c, addr, 0, &err) < 0) {
        ok(d, "daemon", "not running at %s (kiln starts it when needed)", addr);
        return;
    }
    cJSON *r = kiln_client_request(&c, "ping", 10000, &err);
    kiln_client_close(&c);
    const char *build = cJSON_GetStringValue(cJSON_GetObjectItem(r, "build"));
    if (kiln_kilnd_path(kilnd, sizeof kilnd, &err) == 0)
        kiln_build_id(kilnd, mine);
    else
        snprintf(mine, sizeof mine, "unknown");
    char line[600];
    snprintf(line, sizeof line, "kilnd at %.300s: pid %.0f, version %.20s, build %.20s", addr,
             cJSON_GetNumberValue(cJSON_GetObjectItem(r, "pid")),
             r ? cJSON_GetStringValue(cJSON_GetObjectItem(r, "version")) : "?",
             build ? build : "(none: an older kilnd)");
    if (!r)
        fix(d, "daemon", "something listens on the socket but does not answer a ping",
            "kill it, or remove the socket file");
    else if (!build || strcmp(build, mine) != 0) {
        snprintf(line + strlen(line), sizeof line - strlen(line),
                 ", but this kiln's kilnd is build %s", mine);
        fix(d, "daemon", line, "kiln daemon stop (kiln then starts its own)");
    } else {
        ok(d, "daemon", "%s, the kilnd this kiln would start", line);
    }
    cJSON_Delete(r);
}

/* The CUDA worker's probe opens the driver, a context and CUPTI's library. */
static void check_gpu(doctor *d)
{
    char worker[4300], cmd[4400], out[512] = "";
    kiln_error err;
    if (access("/dev/nvidia0", F_OK) != 0) {
        ok(d, "gpu", "%sno NVIDIA GPU here (/dev/nvidia0): CUDA verification is unavailable, "
           "the CPU backend works", NULL);
        return;
    }
    if (kiln_cuda_worker_path(worker, sizeof worker, &err) < 0 || access(worker, X_OK) != 0) {
        fix(d, "gpu", "a GPU but no kiln-worker-cuda", "install the CUDA toolkit, then scripts/setup.sh");
        return;
    }
    snprintf(cmd, sizeof cmd, "timeout 120 '%s' --probe 2>&1", worker);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    int st = p ? pclose(p) : -1;
    out[strcspn(out, "\n")] = '\0';
    if (st != 0 || !strstr(out, "name="))
        fix(d, "gpu", out[0] ? out : "the CUDA worker's probe failed",
            "check the NVIDIA driver (nvidia-smi) and that libcuda, libnvrtc and libcupti load");
    else
        ok(d, "gpu", "%s", out);
}

static void check_sandbox(doctor *d)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    char v[64];
    snprintf(v, sizeof v, "Landlock ABI %ld", abi);
    if (abi < 1)
        fix(d, "sandbox", "no Landlock: workers would run without filesystem confinement",
            "a Linux 5.13+ kernel with CONFIG_SECURITY_LANDLOCK and lsm=landlock");
    else
        ok(d, "sandbox", "%s", v);
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
        fix(d, "sandbox", "no seccomp", "a kernel with CONFIG_SECCOMP_FILTER");
    else
        ok(d, "sandbox", "%sseccomp filters available", NULL);
}

static void check_disk(doctor *d, const char *what, const char *path)
{
    struct statvfs s;
    char line[4400];
    if (statvfs(path, &s) != 0)
        return;
    double gib = (double)s.f_bavail * (double)s.f_frsize / (1 << 30);
    snprintf(line, sizeof line, "%.1f GiB free for %s (%.4000s)", gib, what, path);
    if (gib < 1.0)
        fix(d, "disk", line, "free some space: a search writes its workspace, kilnd its job "
            "directories");
    else
        ok(d, "disk", "%s", line);
}

/* A model server is configured when its base URL or key is set; one that is
 * configured must answer HTTP (any status) within 5 s. */
static void check_model(doctor *d, const char *name, const char *url_env, const char *key_env)
{
    const char *url = getenv(url_env), *key = getenv(key_env);
    char line[700];
    if ((!url || !*url) && (!key || !*key))
        return;
    if (!url || !*url)
        url = strcmp(name, "openai") == 0 ? "https://api.openai.com/v1" : "https://api.anthropic.com";
    CURL *h = curl_easy_init();
    long code = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    if (h) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
        rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
    }
    snprintf(line, sizeof line, "%s at %.400s%s", name, url,
             key && *key ? "" : " (no API key set)");
    if (rc != CURLE_OK) {
        snprintf(line + strlen(line), sizeof line - strlen(line), ": %s", curl_easy_strerror(rc));
        fix(d, "model", line, "check the URL (--base-url or the *_BASE_URL variable) and the network");
    } else {
        ok(d, "model", "%s answers", line);
    }
}

int kiln_cmd_doctor(int argc, char **argv)
{
    const char *sock = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            return KILN_EXIT_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--socket", &missing))) {
            sock = v;
        } else {
            fprintf(stderr, "kiln doctor: %s '%s'\n\n%s", missing ? "missing value for" :
                    "unknown argument", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        }
    }
    doctor d = {.checks = json ? cJSON_CreateArray() : NULL};
    char state[4300];
    kiln_error err;
    check_build(&d);
    check_daemon(&d, sock);
    check_gpu(&d);
    check_sandbox(&d);
    if (kiln_state_dir(state, sizeof state, &err) == 0)
        check_disk(&d, "kiln's state (kilnd's jobs)", state);
    check_disk(&d, "the current directory (kiln-work)", ".");
    check_model(&d, "openai", "OPENAI_BASE_URL", "OPENAI_API_KEY");
    check_model(&d, "anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY");
    if (!json) {
        printf("%s\n", d.problems ? "something needs fixing (see FIX above)" : "all fine");
        return d.problems ? KILN_EXIT_FAIL : KILN_EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", d.problems == 0);
    cJSON_AddNumberToObject(o, "problems", d.problems);
    cJSON_AddItemToObject(o, "checks", d.checks);
    if (kiln_print_json("doctor", o) < 0)
        return KILN_EXIT_INTERNAL;
    return d.problems ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}
