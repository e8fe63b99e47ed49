/* spool.c - durable job records for kilnd (see spool.h). Files are written
 * to a temporary name, fsync'ed and renamed, and the directory is synced,
 * so a crash leaves either the old state or the new one. */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_cache.h"
#include "fileutil.h"
#include "paths.h"

int kiln_valid_job_id(const char *job)
{
    if (job[0] != 'j' || strlen(job) != 9)
        return 0;
    for (int i = 1; i < 9; i++)
        if (job[i] < '0' || job[i] > '9')
            return 0;
    return 1;
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int write_durable(const char *dir, const char *name, const char *text, kiln_error *err)
{
    char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return kiln_fail(err, "cannot write %s: %s", tmp, strerror(errno));
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n <= 0) {
            close(fd);
            unlink(tmp);
            return kiln_fail(err, "cannot write %s: %s", tmp, strerror(errno));
        }
        off += (size_t)n;
    }
    if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return kiln_fail(err, "cannot store %s: %s", path, strerror(errno));
    }
    sync_dir(dir);
    return 0;
}

static unsigned long max_id_in(const char *dir)
{
    unsigned long max = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == 'j') {
            unsigned long v = strtoul(e->d_name + 1, NULL, 10);
            max = v > max ? v : max;
        }
    }
    if (d)
        closedir(d);
    return max;
}

int kiln_spool_open(kiln_spool *s, const char *state_dir, kiln_error *err)
{
    memset(s, 0, sizeof *s);
    snprintf(s->root, sizeof s->root, "%s", state_dir);
    snprintf(s->spool, sizeof s->spool, "%s/spool", state_dir);
    snprintf(s->results, sizeof s->results, "%s/results", state_dir);
    snprintf(s->work, sizeof s->work, "%s/work", state_dir);
    snprintf(s->keys, sizeof s->keys, "%s/keys", state_dir);
    char cache[PATH_MAX + 16];
    snprintf(cache, sizeof cache, "%s/build-cache", state_dir);
    if (kiln_mkdirs(s->spool, err) < 0 || kiln_mkdirs(s->results, err) < 0 ||
        kiln_mkdirs(s->keys, err) < 0)
        return -1;
    /* $KILN_BUILD_CACHE may name another (kilnds that share one) or "off". */
    int has_cache = kiln_build_cache_dir(cache, s->cache, sizeof s->cache, err);
    if (has_cache < 0)
        return -1;
    if (has_cache == 0)
        s->cache[0] = '\0';
    kiln_remove_tree(s->work);   /* job directories of a daemon that died */
    if (kiln_mkdirs(s->work, err) < 0)
        return -1;
    unsigned long a = max_id_in(s->spool), b = max_id_in(s->results);
    s->next_id = (a > b ? a : b) + 1;
    return 0;
}

int kiln_spool_accept(kiln_spool *s, const kiln_verify_request *rq, char job[32], kiln_error *err)
{
    snprintf(job, 32, "j%08lu", s->next_id++ % 100000000ul);
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "job", job);
    cJSON_AddItemToObject(rec, "request", kiln_verify_request_json(rq));
    char *text = cJSON_PrintUnformatted(rec);
    cJSON_Delete(rec);
    if (!text)
        return kiln_fail(err, "out of memory");
    char name[64];
    snprintf(name, sizeof name, "%s.json", job);
    int rc = write_durable(s->spool, name, text, err);
    free(text);
    return rc;
}

int kiln_spool_mark_running(kiln_spool *s, const char *job)
{
    char name[64];
    snprintf(name, sizeof name, "%s.running", job);
    return write_durable(s->spool, name, "running\n", NULL);
}

int kiln_spool_finish(kiln_spool *s, const char *job, const char *event)
{
    char name[64], path[PATH_MAX + 64];
    snprintf(name, sizeof name, "%s.json", job);
    if (write_durable(s->results, name, event, NULL) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/%s.json", s->spool, job);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.running", s->spool, job);
    unlink(path);
    sync_dir(s->spool);
    return 0;
}

static char *slurp(const char *path)
{
    char *buf;
    kiln_error err;
    int rc = kiln_read_file(path, (1 << 24) - 1, &buf, NULL, &err);
    if (rc == 1)
        free(buf);
    return rc == 0 ? buf : NULL;
}

char *kiln_spool_result(const kiln_spool *s, const char *job)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.json", s->results, job);
    return slurp(path);
}

int kiln_spool_pending(const kiln_spool *s, const char *job)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.json", s->spool, job);
    return access(path, F_OK) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_record(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] == 'j' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

int kiln_spool_recover(kiln_spool *s, kiln_spool_visit fn, void *ctx, kiln_error *err)
{
    struct dirent **names;
    int n = scandir(s->spool, &names, is_record, by_name);
    if (n < 0)
        return kiln_fail(err, "cannot read %s: %s", s->spool, strerror(errno));
    for (int i = 0; i < n; i++) {
        char job[32], path[PATH_MAX + 64];
        int stem = (int)strlen(names[i]->d_name) - 5;
        snprintf(job, sizeof job, "%.*s", stem < 31 ? stem : 31, names[i]->d_name);
        snprintf(path, sizeof path, "%s/%.40s", s->spool, names[i]->d_name);
        char *text = slurp(path);
        cJSON *rec = text ? cJSON_Parse(text) : NULL;
        cJSON *rq = rec ? cJSON_DetachItemFromObject(rec, "request") : NULL;
        snprintf(path, sizeof path, "%s/%s.running", s->spool, job);
        if (kiln_valid_job_id(job))
            fn(ctx, job, access(path, F_OK) == 0, rq);
        else
            cJSON_Delete(rq);
        cJSON_Delete(rec);
        free(text);
        free(names[i]);
    }
    free(names);
    return 0;
}

static void key_name(const char *key, char out[65])
{
    kiln_sha256_hex(key, strlen(key), out);
}

int kiln_spool_key_get(const kiln_spool *s, const char *key, char job[32])
{
    char name[65], path[PATH_MAX + 96];
    key_name(key, name);
    snprintf(path, sizeof path, "%s/%s", s->keys, name);
    char *text = slurp(path);
    int ok = text && kiln_valid_job_id(strtok(text, "\n") ? text : "");
    if (ok)
        snprintf(job, 32, "%s", text);
    free(text);
    return ok;
}

int kiln_spool_key_put(kiln_spool *s, const char *key, const char *job, kiln_error *err)
{
    char name[65], line[40];
    key_name(key, name);
    snprintf(line, sizeof line, "%s\n", job);
    return write_durable(s->keys, name, line, err);
}
