/* paths.c - locating kiln's files and managing temporary directories. */
#include "paths.h"

#include "fileutil.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A binary next to the running executable, or where env says. */
static int sibling_path(const char *env_name, const char *name, char *buf, size_t len,
                        kiln_error *err)
{
    const char *env = getenv(env_name);
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return kiln_fail(err, "cannot find the running executable: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, len, "%s/%s", self, name);
    if (access(buf, X_OK) != 0)
        return kiln_fail(err, "%s not found at %s (set %s)", name, buf, env_name);
    return 0;
}

int kiln_worker_path(char *buf, size_t len, kiln_error *err)
{
    return sibling_path("KILN_WORKER", "kiln-worker", buf, len, err);
}

int kiln_kilnd_path(char *buf, size_t len, kiln_error *err)
{
    return sibling_path("KILND", "kilnd", buf, len, err);
}

int kiln_cuda_worker_path(char *buf, size_t len, kiln_error *err)
{
    if (sibling_path("KILN_CUDA_WORKER", "kiln-worker-cuda", buf, len, err) < 0)
        return kiln_error_prefix(err, "the CUDA backend is not available (built without the "
                                 "CUDA toolkit?)");
    return 0;
}

const char *kiln_cuda_include_dir(void)
{
    const char *env = getenv("KILN_CUDA_INCLUDE");
    return env && *env ? env : KILN_CUDA_HEADER_DIR;
}

const char *kiln_cpu_include_dir(void)
{
    const char *env = getenv("KILN_CPU_INCLUDE");
    return env && *env ? env : KILN_CPU_INCLUDE_DIR;
}

int kiln_mkdirs(const char *path, kiln_error *err)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return kiln_fail(err, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return kiln_fail(err, "cannot create %s: %s", buf, strerror(errno));
    return 0;
}

int kiln_state_dir(char *buf, size_t len, kiln_error *err)
{
    const char *env = getenv("KILN_STATE"), *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (xdg && *xdg)
        snprintf(buf, len, "%s/kiln", xdg);
    else if (home && *home)
        snprintf(buf, len, "%s/.local/state/kiln", home);
    else
        return kiln_fail(err, "no state directory: set KILN_STATE or HOME");
    return kiln_mkdirs(buf, err);
}

int kiln_daemon_state_dir(const char *build, char *buf, size_t len, kiln_error *err)
{
    const char *env = getenv("KILN_STATE");
    char base[4000];
    if (env && *env)   /* named: the user's choice, shared by whatever names it */
        return kiln_state_dir(buf, len, err);
    if (kiln_state_dir(base, sizeof base, err) < 0)
        return -1;
    snprintf(buf, len, "%.3990s/kilnd-%.16s", base, build);
    return kiln_mkdirs(buf, err);
}

int kiln_make_tempdir(const char *root, const char *prefix, char *buf, size_t len,
                      kiln_error *err)
{
    const char *tmp = root ? root : getenv("TMPDIR");
    snprintf(buf, len, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(buf))
        return kiln_fail(err, "cannot create a temporary directory %s: %s", buf, strerror(errno));
    return 0;
}

/* nftw has no user pointer; kilnd removes trees from several threads. */
static _Thread_local int remove_failed;

static int make_writable(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_D || flag == FTW_DNR)
        chmod(path, 0700);
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        remove_failed = 1;
    return 0;   /* go on: one entry that will not go must not keep the rest */
}

int kiln_remove_tree(const char *path)
{
    if (!path || !*path)
        return 0;
    /* Directories writable first (a candidate may have chmod'ed one), then
     * everything removed, children before parents. */
    chmod(path, 0700);
    nftw(path, make_writable, 32, FTW_PHYS);
    remove_failed = 0;
    int rc = nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS);
    return rc < 0 || remove_failed ? -1 : 0;
}

int kiln_default_socket_of(const char *build, char *buf, size_t len, kiln_error *err)
{
    const char *env = getenv("KILN_SOCKET"), *rt = getenv("XDG_RUNTIME_DIR");
    char dir[4000];
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return 0;
    }
    if (rt && *rt) {
        snprintf(dir, sizeof dir, "%.3990s/kiln", rt);
        if (kiln_mkdirs(dir, err) < 0)
            return -1;
        snprintf(buf, len, "%.4000s/kilnd-%.16s.sock", dir, build);
        return 0;
    }
    if (kiln_daemon_state_dir(build, dir, sizeof dir, err) < 0)
        return -1;
    snprintf(buf, len, "%.4000s/kilnd.sock", dir);
    return 0;
}

int kiln_default_socket(char *buf, size_t len, kiln_error *err)
{
    char build[17];
    kiln_kilnd_build(build);
    return kiln_default_socket_of(build, buf, len, err);
}

void kiln_kilnd_build(char out[17])
{
    char path[PATH_MAX + 16];
    kiln_error err;
    if (kiln_kilnd_path(path, sizeof path, &err) < 0)
        snprintf(out, 17, "unknown");
    else
        kiln_build_id(path, out);
}

void kiln_build_id(const char *path, char out[17])
{
    char hex[65];
    kiln_error err;
    if (kiln_sha256_file(path, hex, &err) < 0)
        snprintf(hex, sizeof hex, "unknown");
    snprintf(out, 17, "%.16s", hex);
}
