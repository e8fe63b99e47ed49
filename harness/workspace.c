/* workspace.c - git operations of a search (see workspace.h), with libgit2. */
#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileutil.h"
#include "paths.h"
#include "workspace_dir.h"

static int git_fail(kiln_error *err, const char *what)
{
    const git_error *e = git_error_last();
    return kiln_fail(err, "git: %s: %s", what, e && e->message ? e->message : "unknown error");
}

static int signature(git_repository *repo, git_signature **sig)
{
    if (git_signature_default(sig, repo) == 0)
        return 0;
    return git_signature_now(sig, "kiln", "kiln@localhost");
}

static int write_file(const char *path, const char *content, kiln_error *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (kiln_mkdirs(dir, err) < 0)
            return -1;
    }
    return kiln_write_text(path, content, err);
}

/* A tree of the index with relpath set to content; the working tree too. */
static int stage(kiln_ws *ws, const char *relpath, const char *content, git_oid *tree,
                 kiln_error *err)
{
    char path[PATH_MAX * 2];
    git_index *idx = NULL;
    snprintf(path, sizeof path, "%s/%s", ws->dir, relpath);
    if (write_file(path, content, err) < 0)
        return -1;
    int rc = git_repository_index(&idx, ws->repo);
    if (rc == 0)
        rc = git_index_add_bypath(idx, relpath);
    if (rc == 0)
        rc = git_index_write_tree(tree, idx);
    if (rc == 0)
        rc = git_index_write(idx);
    git_index_free(idx);
    return rc < 0 ? git_fail(err, "staging the candidate") : 0;
}

static int first_commit(kiln_ws *ws, kiln_error *err)
{
    static const char readme[] =
        "# kiln workspace\n\n"
        "Each search run is a branch `kiln/<task>/<run>`; every candidate is a commit.\n"
        "Rejected candidates are kept under `refs/kiln/rejected/<run>/<n>`; verdicts are\n"
        "notes: `git log --notes=kiln` (one line each; the full verdicts: `git notes\n"
        "--ref=kiln-verdict show COMMIT`). The best kernels are tagged `kiln/best/...`.\n"
        "The run database is `.kiln/kiln.db` (SQLite).\n";
    git_oid tree_id, commit_id;
    git_tree *tree = NULL;
    git_signature *sig = NULL;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.gitignore", ws->dir);
    if (write_file(path, ".kiln/\n", err) < 0 || stage(ws, "README.md", readme, &tree_id, err) < 0)
        return -1;
    git_index *idx = NULL;
    int rc = git_repository_index(&idx, ws->repo);
    if (rc == 0 && (rc = git_index_add_bypath(idx, ".gitignore")) == 0 &&
        (rc = git_index_write_tree(&tree_id, idx)) == 0)
        rc = git_index_write(idx);
    git_index_free(idx);
    if (rc == 0 && (rc = git_tree_lookup(&tree, ws->repo, &tree_id)) == 0 &&
        (rc = signature(ws->repo, &sig)) == 0)
        rc = git_commit_create_v(&commit_id, ws->repo, "HEAD", sig, sig, NULL,
                                 "kiln workspace\n", tree, 0);
    git_tree_free(tree);
    git_signature_free(sig);
    return rc < 0 ? git_fail(err, "creating the first commit") : 0;
}

int kiln_ws_lock_error(kiln_error *err, const char *dir, const char *path, int locking, int e)
{
    if (!locking && (e == EACCES || e == EPERM || e == EROFS))
        return kiln_bad_input(err, "the workspace %s is not writable (%s: %s): make it writable "
                              "or choose another --workspace", dir, path, strerror(e));
    if (!locking)
        return kiln_fail(err, "cannot open %s: %s", path, strerror(e));
    if (e == EWOULDBLOCK)
        return kiln_fail(err, "another kiln search is using the workspace %s", dir);
    return kiln_fail(err, "cannot lock %s: %s", path, strerror(e));
}

/* An open that fails is not a search in the way: only a flock refused
 * because another holds it says that (a read-only workspace used to be
 * reported as one in use). */
static int take_lock(kiln_ws *ws, kiln_error *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.kiln", ws->dir);
    if (kiln_mkdirs(path, err) < 0)
        return kiln_ws_lock_error(err, ws->dir, path, 0, errno);
    strcat(path, "/lock");
    ws->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (ws->lock_fd < 0)
        return kiln_ws_lock_error(err, ws->dir, path, 0, errno);
    if (flock(ws->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return kiln_ws_lock_error(err, ws->dir, path, 1, errno);
    char who[32];   /* no run (yet): a search names its own with kiln_ws_lock_note */
    snprintf(who, sizeof who, "%ld -\n", (long)getpid());
    kiln_ws_lock_note(ws, who);
    return 0;
}

int kiln_ws_lock_note(kiln_ws *ws, const char *text)
{
    size_t n = strlen(text);
    if (ws->lock_fd < 0 || ftruncate(ws->lock_fd, 0) < 0)
        return -1;
    return pwrite(ws->lock_fd, text, n, 0) == (ssize_t)n ? 0 : -1;
}

/* A first commit as kiln makes it (first_commit): "kiln workspace", a
 * README and the .gitignore, nothing else. */
static int kiln_root(git_commit *c)
{
    git_tree *t = NULL;
    const char *msg = git_commit_message(c);
    int ours = git_commit_parentcount(c) == 0 && msg && strcmp(msg, "kiln workspace\n") == 0 &&
               git_commit_tree(&t, c) == 0 && git_tree_entrycount(t) == 2 &&
               git_tree_entry_byname(t, "README.md") && git_tree_entry_byname(t, ".gitignore");
    git_tree_free(t);
    return ours;
}

/* 1 when every commit the branches reach starts at kiln's first commit: a
 * repository an earlier kiln made (its .kiln/ holding only kiln's files).
 * One with no commit yet qualifies when it holds nothing else at all. */
static int earlier_workspace(kiln_ws *ws)
{
    if (!kiln_ws_kiln_dir_ours(ws->dir))
        return 0;
    if (git_repository_head_unborn(ws->repo) == 1)   /* an init that never got its commit */
        return kiln_ws_dir_only_git(ws->dir);
    git_revwalk *walk = NULL;
    git_oid id;
    int ours = git_revwalk_new(&walk, ws->repo) == 0 &&
               git_revwalk_push_glob(walk, "refs/heads/*") == 0 && git_revwalk_push_head(walk) == 0;
    int roots = 0;
    while (ours && git_revwalk_next(&id, walk) == 0) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, ws->repo, &id) < 0)
            ours = 0;
        else if (git_commit_parentcount(c) == 0)
            ours = kiln_root(c), roots++;
        git_commit_free(c);
    }
    git_revwalk_free(walk);
    return ours && roots > 0;
}

/* The refusal of a directory that is not a workspace, naming what is in it. */
static int refuse(const char *dir, const char *is, const char *what, kiln_error *err)
{
    return kiln_fail(err, "%s %s (%s); kiln uses as a workspace only a new or empty directory, "
                     "or one that kiln made (it has %s), and never writes into another: "
                     "give --workspace a new directory", dir, is, what, KILN_WS_MARKER);
}

/* A new workspace in an empty directory: the repository, its first
 * commit, the marker. The lock first: a second kiln racing for the same
 * directory finds it no longer empty and refuses. */
static int create(kiln_ws *ws, kiln_error *err)
{
    if (take_lock(ws, err) < 0)
        return -1;
    if (git_repository_init(&ws->repo, ws->dir, 0) < 0)
        return git_fail(err, "creating the workspace repository");
    return first_commit(ws, err) < 0 ? -1 : kiln_ws_mark(ws->dir, err);
}

int kiln_ws_open(kiln_ws *ws, const char *dir, int make, kiln_error *err)
{
    memset(ws, 0, sizeof *ws);
    ws->lock_fd = -1;
    git_libgit2_init();
    struct stat st;
    if (stat(dir, &st) != 0 && (!make || errno != ENOENT))
        return kiln_fail(err, "workspace %s: %s", dir, errno == ENOENT ? "no such directory (not a "
                         "kiln workspace)" : strerror(errno));
    if (make && kiln_mkdirs(dir, err) < 0)
        return kiln_error_prefix(err, "workspace %s", dir);
    if (!realpath(dir, ws->dir))
        return kiln_fail(err, "workspace %s: %s", dir, strerror(errno));
    kiln_ws_dir_kind kind;
    char what[2048];
    if (kiln_ws_dir_classify(ws->dir, &kind, what, sizeof what, err) < 0)
        return -1;
    if (kind == KILN_WS_DIR_EMPTY)
        return make ? create(ws, err) : kiln_fail(err, "%s is not a kiln workspace (it is empty)", dir);
    int rc = git_repository_open_ext(&ws->repo, ws->dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
    if (rc == GIT_ENOTFOUND)
        return refuse(ws->dir, kind == KILN_WS_DIR_MARKED ? "has the workspace marker but no "
                      "git repository" : "is not empty and not a kiln workspace", what, err);
    if (rc < 0)
        return git_fail(err, "opening the workspace");
    if (git_repository_is_bare(ws->repo))
        return refuse(ws->dir, "is a bare git repository", what, err);
    if (kind != KILN_WS_DIR_MARKED && !earlier_workspace(ws))
        return refuse(ws->dir, "is a git repository that kiln did not make", what, err);
    if (take_lock(ws, err) < 0)
        return -1;
    if (git_repository_head_unborn(ws->repo) == 1) {   /* its first commit writes README.md */
        if (!kiln_ws_dir_only_git(ws->dir))
            return refuse(ws->dir, "is a git repository with no commit that holds files", what, err);
        if (first_commit(ws, err) < 0)
            return -1;
    }
    /* an earlier kiln's workspace is one from now on */
    return kind == KILN_WS_DIR_MARKED ? 0 : kiln_ws_mark(ws->dir, err);
}

void kiln_ws_close(kiln_ws *ws)
{
    git_repository_free(ws->repo);
    ws->repo = NULL;
    if (ws->lock_fd >= 0)
        close(ws->lock_fd);
    ws->lock_fd = -1;
    git_libgit2_shutdown();
}

static int lookup_commit(kiln_ws *ws, const char *spec, git_commit **out, kiln_error *err)
{
    git_object *obj = NULL;
    if (git_revparse_single(&obj, ws->repo, spec) < 0)
        return git_fail(err, spec);
    int rc = git_object_peel((git_object **)out, obj, GIT_OBJECT_COMMIT);
    git_object_free(obj);
    return rc < 0 ? git_fail(err, spec) : 0;
}

/* The root commit: where every run branch starts. */
static int root_commit(kiln_ws *ws, git_oid *out, kiln_error *err)
{
    git_revwalk *walk = NULL;
    int rc = git_revwalk_new(&walk, ws->repo);
    if (rc == 0)
        rc = git_revwalk_push_head(walk);
    if (rc == 0)
        git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
    if (rc == 0)
        rc = git_revwalk_next(out, walk);
    git_revwalk_free(walk);
    return rc < 0 ? git_fail(err, "finding the first commit") : 0;
}

/* ---- what kiln may overwrite ------------------------------------------------ */

typedef struct guard_ctx {
    kiln_ws *ws;
    git_tree *target;   /* the tree a checkout is about to write (NULL: none) */
    git_odb *odb;
    int n;              /* paths holding what kiln did not write */
    char list[1024];
} guard_ctx;

/* The working file at rel holds what kiln once staged there (its blob is in
 * the repository), or is gone: either way nothing is lost by replacing it. */
static int kiln_content(guard_ctx *g, const char *rel)
{
    char full[PATH_MAX * 2];
    struct stat st;
    git_oid id;
    snprintf(full, sizeof full, "%s/%s", g->ws->dir, rel);
    if (lstat(full, &st) != 0)
        return errno == ENOENT;
    return S_ISREG(st.st_mode) && git_odb_hashfile(&id, full, GIT_OBJECT_BLOB) == 0 &&
           git_odb_exists(g->odb, &id);
}

static int in_target(const guard_ctx *g, const char *rel)
{
    git_tree_entry *e = NULL;
    int in = g->target && git_tree_entry_bypath(&e, g->target, rel) == 0;
    git_tree_entry_free(e);
    return in;
}

/* A checkout or hard reset writes over modified and staged files and
 * deletes staged ones; an untracked file only where the target has one. */
static int guard_one(const char *rel, unsigned int st, void *payload)
{
    guard_ctx *g = payload;
    const unsigned changed = GIT_STATUS_WT_NEW | GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE |
                             GIT_STATUS_WT_RENAMED | GIT_STATUS_CONFLICTED;
    const unsigned staged = GIT_STATUS_INDEX_NEW | GIT_STATUS_INDEX_MODIFIED |
                            GIT_STATUS_INDEX_RENAMED | GIT_STATUS_INDEX_TYPECHANGE;
    int safe;
    if (kiln_ws_own_path(rel))   /* staged there by kiln; changed only if kiln wrote it */
        safe = !(st & changed) || kiln_content(g, rel);
    else if (st == GIT_STATUS_WT_NEW)
        safe = !in_target(g, rel);
    else
        safe = !(st & (changed | staged));   /* a deleted file comes back: nothing lost */
    if (!safe) {
        size_t w = strlen(g->list);
        if (g->n < 8)
            snprintf(g->list + w, sizeof g->list - w, "%s%.120s", g->n ? ", " : "", rel);
        g->n++;
    }
    return 0;
}

/* -2 (with err naming them) when the working tree holds files kiln did not
 * write that a checkout of target (NULL: any of kiln's) would overwrite or
 * delete: kiln refuses rather than lose them. */
static int guard(kiln_ws *ws, git_tree *target, kiln_error *err)
{
    guard_ctx g = {.ws = ws, .target = target};
    git_status_options so;
    git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
    so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
    if (git_repository_odb(&g.odb, ws->repo) < 0)
        return git_fail(err, "opening the object database");
    int rc = git_status_foreach_ext(ws->repo, &so, guard_one, &g);
    git_odb_free(g.odb);
    if (rc < 0)
        return git_fail(err, "reading the working tree's status");
    if (g.n == 0)
        return 0;
    const char *it = g.n == 1 ? "it" : "them";
    kiln_fail(err, "the workspace %s holds %d file%s that kiln did not write (%s%s) where kiln "
              "would overwrite or delete %s; kiln leaves %s alone: move %s out of the workspace "
              "(or undo the change), then run again", ws->dir, g.n, g.n == 1 ? "" : "s", g.list,
              g.n > 8 ? ", ..." : "", it, it, it);
    return -2;
}

int kiln_ws_check(kiln_ws *ws, kiln_error *err)
{
    return guard(ws, NULL, err);
}

/* guard() against the tree of commit c. */
static int guard_commit(kiln_ws *ws, git_commit *c, kiln_error *err)
{
    git_tree *t = NULL;
    if (git_commit_tree(&t, c) < 0)
        return git_fail(err, "reading the commit's tree");
    int rc = guard(ws, t, err);
    git_tree_free(t);
    return rc;
}

int kiln_ws_checkout_branch(kiln_ws *ws, const char *branch, kiln_error *err)
{
    char ref[512];
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    git_reference *r = NULL;
    if (git_reference_lookup(&r, ws->repo, ref) == GIT_ENOTFOUND) {
        git_oid root;
        if (root_commit(ws, &root, err) < 0)
            return -1;
        if (git_reference_create(&r, ws->repo, ref, &root, 0, "kiln: start run") < 0)
            return git_fail(err, "creating the run branch");
    }
    git_reference_free(r);
    git_commit *tip = NULL;
    if (lookup_commit(ws, ref, &tip, err) < 0)
        return -1;
    int rc = guard_commit(ws, tip, err);
    git_commit_free(tip);
    if (rc < 0)
        return rc;
    git_checkout_options co;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    if (git_repository_set_head(ws->repo, ref) < 0 || git_checkout_head(ws->repo, &co) < 0)
        return git_fail(err, "checking out the run branch");
    return 0;
}

int kiln_ws_commit(kiln_ws *ws, const char *parent, const char *relpath, const char *content,
                   const char *message, char oid[41], kiln_error *err)
{
    git_commit *par = NULL;
    git_tree *tree = NULL;
    git_signature *sig = NULL;
    git_oid tree_id, id;
    if (lookup_commit(ws, parent ? parent : "HEAD", &par, err) < 0)
        return -1;
    /* Stage on top of the parent's tree so nothing else leaks in. */
    git_tree *ptree = NULL;
    git_index *idx = NULL;
    int rc = git_commit_tree(&ptree, par);
    if (rc == 0 && (rc = git_repository_index(&idx, ws->repo)) == 0)
        rc = git_index_read_tree(idx, ptree);
    if (rc == 0)
        rc = git_index_write(idx);
    git_index_free(idx);
    git_tree_free(ptree);
    if (rc < 0 || stage(ws, relpath, content, &tree_id, err) < 0) {
        git_commit_free(par);
        return rc < 0 ? git_fail(err, "reading the parent's tree") : -1;
    }
    rc = git_tree_lookup(&tree, ws->repo, &tree_id);
    if (rc == 0)
        rc = signature(ws->repo, &sig);
    if (rc == 0)
        rc = git_commit_create_v(&id, ws->repo, NULL, sig, sig, NULL, message, tree, 1, par);
    git_commit_free(par);
    git_tree_free(tree);
    git_signature_free(sig);
    if (rc < 0)
        return git_fail(err, "committing the candidate");
    git_oid_tostr(oid, 41, &id);
    return 0;
}

int kiln_ws_reset_hard(kiln_ws *ws, const char *commit, kiln_error *err)
{
    git_commit *c = NULL;
    if (lookup_commit(ws, commit, &c, err) < 0)
        return -1;
    int rc = guard_commit(ws, c, err);
    if (rc < 0) {
        git_commit_free(c);
        return rc;
    }
    git_checkout_options co;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    rc = git_reset(ws->repo, (git_object *)c, GIT_RESET_HARD, &co);
    git_commit_free(c);
    return rc < 0 ? git_fail(err, "resetting the branch") : 0;
}

int kiln_ws_set_ref(kiln_ws *ws, const char *ref, const char *commit, kiln_error *err)
{
    git_oid id;
    git_reference *r = NULL;
    if (git_oid_fromstr(&id, commit) < 0)
        return kiln_fail(err, "bad commit id %s", commit);
    int rc = git_reference_create(&r, ws->repo, ref, &id, 1, "kiln");
    git_reference_free(r);
    return rc < 0 ? git_fail(err, ref) : 0;
}

int kiln_ws_note(kiln_ws *ws, const char *commit, const char *summary, const char *json,
                 kiln_error *err)
{
    git_oid id, note;
    git_signature *sig = NULL;
    if (git_oid_fromstr(&id, commit) < 0)
        return kiln_fail(err, "bad commit id %s", commit);
    int rc = signature(ws->repo, &sig);
    if (rc == 0)
        rc = git_note_create(&note, ws->repo, KILN_VERDICT_NOTES_REF, sig, sig, &id, json, 1);
    if (rc == 0)
        rc = git_note_create(&note, ws->repo, KILN_NOTES_REF, sig, sig, &id, summary, 1);
    git_signature_free(sig);
    return rc < 0 ? git_fail(err, "writing the verdict notes") : 0;
}

int kiln_ws_tag(kiln_ws *ws, const char *tag, const char *commit, kiln_error *err)
{
    git_object *obj = NULL;
    git_oid out;
    if (git_revparse_single(&obj, ws->repo, commit) < 0)
        return git_fail(err, commit);
    int rc = git_tag_create_lightweight(&out, ws->repo, tag, obj, 1);
    git_object_free(obj);
    return rc < 0 ? git_fail(err, "tagging the best kernel") : 0;
}

int kiln_ws_resolve(kiln_ws *ws, const char *spec, char oid[41], kiln_error *err)
{
    git_commit *c = NULL;
    if (lookup_commit(ws, spec, &c, err) < 0)
        return -1;
    git_oid_tostr(oid, 41, git_commit_id(c));
    git_commit_free(c);
    return 0;
}

int kiln_ws_read(kiln_ws *ws, const char *commit, const char *relpath, char **content,
                 kiln_error *err)
{
    git_commit *c = NULL;
    git_tree *tree = NULL;
    git_tree_entry *entry = NULL;
    git_blob *blob = NULL;
    *content = NULL;
    if (lookup_commit(ws, commit, &c, err) < 0)
        return -1;
    int rc = git_commit_tree(&tree, c);
    if (rc == 0)
        rc = git_tree_entry_bypath(&entry, tree, relpath);
    if (rc == 0)
        rc = git_blob_lookup(&blob, ws->repo, git_tree_entry_id(entry));
    if (rc == 0) {
        size_t n = (size_t)git_blob_rawsize(blob);
        *content = malloc(n + 1);
        if (*content) {
            memcpy(*content, git_blob_rawcontent(blob), n);
            (*content)[n] = '\0';
        }
    }
    git_blob_free(blob);
    git_tree_entry_free(entry);
    git_tree_free(tree);
    git_commit_free(c);
    if (rc < 0)
        return git_fail(err, relpath);
    return *content ? 0 : kiln_fail(err, "out of memory");
}

/* An untracked file at one of kiln's paths, holding what kiln staged
 * there (guard() checked): a candidate stopped before its commit. */
static int remove_untracked(const char *path, unsigned int status, void *payload)
{
    kiln_ws *ws = payload;
    if (status != GIT_STATUS_WT_NEW || !kiln_ws_own_path(path))
        return 0;   /* what kiln did not write stays where it is */
    char full[PATH_MAX * 2];
    snprintf(full, sizeof full, "%s/%s", ws->dir, path);
    unlink(full);
    return 0;
}

int kiln_ws_clean(kiln_ws *ws, kiln_error *err)
{
    int rc = guard(ws, NULL, err);
    if (rc < 0)
        return rc;
    git_status_options so;
    git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
    so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
    if (git_status_foreach_ext(ws->repo, &so, remove_untracked, ws) < 0)
        return git_fail(err, "listing stray files");
    return 0;
}

int kiln_ws_best_commits(kiln_ws *ws, char (**oids)[41], int *n, kiln_error *err)
{
    git_reference_iterator *it = NULL;
    git_reference *ref = NULL;
    *oids = NULL;
    *n = 0;
    if (git_reference_iterator_glob_new(&it, ws->repo, "refs/tags/kiln/best/*") < 0)
        return kiln_fail(err, "git: listing the kiln/best tags");
    int rc = 0;
    while (rc == 0 && git_reference_next(&ref, it) == 0) {
        char(*p)[41] = realloc(*oids, (size_t)(*n + 1) * sizeof *p);
        if (!p)
            rc = kiln_fail(err, "out of memory");
        else if ((rc = kiln_ws_resolve(ws, git_reference_name(ref), p[*n], err)) == 0)
            ++*n;
        if (p)
            *oids = p;
        git_reference_free(ref);
    }
    git_reference_iterator_free(it);
    return rc;
}

char *kiln_ws_note_read(kiln_ws *ws, const char *ref, const char *commit)
{
    git_oid id;
    git_note *note = NULL;
    if (git_oid_fromstr(&id, commit) < 0 || git_note_read(&note, ws->repo, ref, &id) < 0)
        return NULL;
    const char *text = git_note_message(note);
    char *out = text ? strdup(text) : NULL;
    git_note_free(note);
    return out;
}

double kiln_ws_commit_time(kiln_ws *ws, const char *commit)
{
    git_oid id;
    git_commit *c = NULL;
    double t = 0;
    if (git_oid_fromstr(&id, commit) == 0 && git_commit_lookup(&c, ws->repo, &id) == 0)
        t = (double)git_commit_time(c);
    git_commit_free(c);
    return t;
}

int kiln_ws_reverify_note_append(kiln_ws *ws, const char *commit, const char *line,
                                 kiln_error *err)
{
    git_oid id, out;
    git_note *old = NULL;
    git_signature *sig = NULL;
    if (git_oid_fromstr(&id, commit) < 0)
        return kiln_fail(err, "bad commit id %s", commit);
    const char *prev = "";
    if (git_note_read(&old, ws->repo, KILN_REVERIFY_NOTES_REF, &id) == 0)
        prev = git_note_message(old);
    size_t lp = strlen(prev), ll = line ? strlen(line) : 0;
    char *text = line ? malloc(lp + ll + 3) : NULL;
    int rc = -1;
    if (text) {
        snprintf(text, lp + ll + 3, "%s%s%s\n", prev, lp && prev[lp - 1] != '\n' ? "\n" : "", line);
        rc = signature(ws->repo, &sig);
        if (rc == 0)
            rc = git_note_create(&out, ws->repo, KILN_REVERIFY_NOTES_REF, sig, sig, &id, text, 1);
    }
    git_signature_free(sig);
    git_note_free(old);
    free(text);
    if (rc < 0) {
        const git_error *e = git_error_last();
        return kiln_fail(err, "git: writing the reverify note: %s",
                         e && e->message ? e->message : "out of memory");
    }
    return 0;
}

/* ---- reading the notes and refs back (harness/db_rebuild.c) ------------- */

/* The commit a notes tree path names: the path without its fan-out
 * slashes ("ab/cdef..." -> "abcdef..."); 0 when it is no commit id. */
static int note_path_commit(const char *path, char hex[41])
{
    size_t k = 0;
    for (const char *p = path; *p; p++) {
        if (*p == '/')
            continue;
        if (k == 40)
            return 0;
        hex[k++] = *p;
    }
    hex[k] = '\0';
    return k == 40;
}

typedef struct note_write {
    char commit[41];
    double t;
    int dead;   /* a later write of the same note follows */
} note_write;

typedef struct note_writes {
    note_write *w;
    int n, cap;
    double t;   /* the notes commit being read */
} note_writes;

static int note_written(const git_diff_delta *d, float progress, void *payload)
{
    (void)progress;
    note_writes *ws = payload;
    char hex[41];
    if ((d->status != GIT_DELTA_ADDED && d->status != GIT_DELTA_MODIFIED) ||
        !note_path_commit(d->new_file.path, hex))
        return 0;
    for (int i = 0; i < ws->n; i++)
        if (!ws->w[i].dead && strcmp(ws->w[i].commit, hex) == 0)
            ws->w[i].dead = 1;
    if (ws->n == ws->cap) {
        int cap = ws->cap ? 2 * ws->cap : 64;
        note_write *p = realloc(ws->w, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        ws->w = p, ws->cap = cap;
    }
    note_write *w = &ws->w[ws->n++];
    snprintf(w->commit, sizeof w->commit, "%s", hex);
    w->t = ws->t;
    w->dead = 0;
    return 0;
}

/* What notes commit c wrote (its tree against its first parent's). */
static int notes_commit_writes(kiln_ws *ws, const git_oid *id, note_writes *nw)
{
    git_commit *c = NULL, *parent = NULL;
    git_tree *tree = NULL, *old = NULL;
    git_diff *diff = NULL;
    int rc = git_commit_lookup(&c, ws->repo, id);
    if (rc == 0)
        rc = git_commit_tree(&tree, c);
    if (rc == 0 && git_commit_parentcount(c) > 0 && (rc = git_commit_parent(&parent, c, 0)) == 0)
        rc = git_commit_tree(&old, parent);
    if (rc == 0)
        rc = git_diff_tree_to_tree(&diff, ws->repo, old, tree, NULL);
    if (rc == 0) {
        nw->t = (double)git_commit_time(c);
        rc = git_diff_foreach(diff, note_written, NULL, NULL, NULL, nw);
    }
    git_diff_free(diff);
    git_tree_free(old);
    git_tree_free(tree);
    git_commit_free(parent);
    git_commit_free(c);
    return rc;
}

int kiln_ws_note_each(kiln_ws *ws, const char *ref, kiln_ws_note_fn fn, void *ctx,
                      kiln_error *err)
{
    git_revwalk *walk = NULL;
    git_oid id;
    note_writes nw = {0};
    if (git_reference_name_to_id(&id, ws->repo, ref) < 0)
        return 0;   /* no notes yet */
    int rc = git_revwalk_new(&walk, ws->repo);
    if (rc == 0)
        rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
    if (rc == 0)
        rc = git_revwalk_push(walk, &id);
    while (rc == 0 && (rc = git_revwalk_next(&id, walk)) == 0)
        rc = notes_commit_writes(ws, &id, &nw);
    git_revwalk_free(walk);
    if (rc != GIT_ITEROVER) {
        free(nw.w);
        return git_fail(err, ref);
    }
    int count = 0;
    rc = 0;
    for (int i = 0; rc == 0 && i < nw.n; i++) {
        if (nw.w[i].dead)
            continue;
        char *text = kiln_ws_note_read(ws, ref, nw.w[i].commit);
        if (text) {   /* a note removed since is none */
            rc = fn(nw.w[i].commit, text, nw.w[i].t, ctx, err);
            count++;
        }
        free(text);
    }
    free(nw.w);
    return rc < 0 ? -1 : count;
}

int kiln_ws_ref_each(kiln_ws *ws, const char *glob, kiln_ws_ref_fn fn, void *ctx,
                     kiln_error *err)
{
    git_reference_iterator *it = NULL;
    git_reference *ref = NULL;
    if (git_reference_iterator_glob_new(&it, ws->repo, glob) < 0)
        return git_fail(err, glob);
    int rc = 0;
    while (rc == 0 && git_reference_next(&ref, it) == 0) {
        char oid[41];
        if (kiln_ws_resolve(ws, git_reference_name(ref), oid, err) == 0)
            rc = fn(git_reference_name(ref), oid, ctx, err);
        git_reference_free(ref);
    }
    git_reference_iterator_free(it);
    return rc;
}

int kiln_ws_commit_info(kiln_ws *ws, const char *commit, char parent[41], char **message,
                        kiln_error *err)
{
    git_commit *c = NULL;
    parent[0] = '\0';
    *message = NULL;
    if (lookup_commit(ws, commit, &c, err) < 0)
        return -1;
    if (git_commit_parentcount(c) > 0)
        git_oid_tostr(parent, 41, git_commit_parent_id(c, 0));
    const char *m = git_commit_message(c);
    *message = strdup(m ? m : "");
    git_commit_free(c);
    return *message ? 0 : kiln_fail(err, "out of memory");
}
