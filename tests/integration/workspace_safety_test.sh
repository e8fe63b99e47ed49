#!/usr/bin/env bash
# workspace_safety_test.sh - `kiln search --workspace DIR` never deletes or
# overwrites a file kiln did not write (issue 31.1): a directory that is not
# empty and not a kiln workspace, a git repository with uncommitted edits,
# staged and untracked files, `--workspace .` in a project, a repository an
# older kiln touched, and `kiln reverify` on one are refused with exit 2
# naming the directory and what it holds; an empty directory becomes a
# workspace (.kiln/workspace); a workspace of an earlier kiln (no marker) and
# a clone of one are used and marked; in a workspace a resume leaves the
# user's own files alone and refuses to overwrite a kernel file the user
# edited. Each case lists every file below the directory with its SHA-256
# (the .git directory included) before and after kiln, and compares.
#
# usage: workspace_safety_test.sh BUILD_DIR SOURCE_DIR
# Needs find, git, sqlite3 and sha256sum.
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools git sqlite3 sha256sum
# The projects' commits are the user's, not the harness's test identity.
export GIT_AUTHOR_NAME=user GIT_AUTHOR_EMAIL=user@example.com
export GIT_COMMITTER_NAME=user GIT_COMMITTER_EMAIL=user@example.com
mkdir -p "$tmp/io"
FAST=(--iterations 1 --group decode --timing-ms 200)

# kiln ARGS...: run kiln (in the current directory), output in io/out and
# io/err, exit status in RC. Each stderr is kept in io/err.all too: a check
# runs kiln several times, and lib.sh's look for UBSan's lines (at the
# check's end) must see every one, not the last.
kiln() {
    timeout -k 10 300 "$KILN" "$@" >"$tmp/io/out" 2>"$tmp/io/err" </dev/null
    RC=$?
    cat "$tmp/io/err" >>"$tmp/io/err.all"
}
show() { printf 'exit %s; stderr: %s; stdout: %s' "$RC" "$(head -c 600 "$tmp/io/err")" \
    "$(tail -c 300 "$tmp/io/out")"; }

# snap DIR [PRUNE...]: every entry below DIR (.git included; each PRUNE, a
# name directly below DIR, left out): type, path and, for a file, its
# SHA-256; a symlink with its target.
snap() {
    local d=$1 p
    shift
    local skip=()
    for p; do skip+=(-path "./$p" -prune -o); done
    (
        cd "$d" || exit 1
        find . -mindepth 1 "${skip[@]}" -printf '%y %p %l\n' | LC_ALL=C sort
        find . -mindepth 1 "${skip[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    )
}
# same BEFORE_FILE DIR [PRUNE...]: DIR's listing is BEFORE_FILE's.
same() {
    local before=$1 now
    shift
    now=$(snap "$@")
    if [ "$now" != "$(cat "$before")" ]; then
        problem "files below $1 changed:"$'\n'"$(diff <(cat "$before") <(printf '%s\n' "$now") | head -20)"
    fi
}

# refused DIR WHAT: kiln exited 2 naming DIR and, in what it holds, WHAT.
refused() {
    [ "$RC" -eq 2 ] || problem "exit $RC, expected 2: $(show)"
    grep -qF -- "$1" "$tmp/io/err" || problem "the refusal does not name $1: $(show)"
    grep -qF -- "$2" "$tmp/io/err" || problem "the refusal does not name '$2', in it: $(show)"
}

# A project: a repository with history, an uncommitted edit, a staged new
# file, untracked files (one in an untracked directory), a hidden file and
# a symlink.
make_project() {
    local p=$1
    mkdir -p "$p/src" && cd "$p" || return 1
    git init -q . && printf 'int main(void) { return 0; }\n' >src/main.c &&
        printf '# my project\n' >README.md && printf 'build/\n' >.gitignore &&
        git add -A && git commit -qm "my first commit" &&
        printf 'v2\n' >>src/main.c && git commit -qam "my second commit" &&
        printf 'uncommitted edit\n' >>src/main.c &&
        printf 'staged\n' >staged.txt && git add staged.txt &&
        printf 'notes\n' >notes.txt && mkdir -p scratch build && printf 'x\n' >scratch/a &&
        printf 'ignored\n' >build/out.o && printf 'hidden\n' >.env && ln -s src/main.c link.c
    cd "$SRC" || return 1
}

# ---- 1. a directory that is not empty and not a workspace --------------------------

begin
D=$tmp/plain
mkdir -p "$D/sub" && printf 'keep me\n' >"$D/a.txt" && printf 'x\n' >"$D/sub/b" &&
    printf 'h\n' >"$D/.hidden" && ln -s a.txt "$D/l"
snap "$D" >"$tmp/1.before"
kiln search rmsnorm --workspace "$D" "${FAST[@]}"
refused "$D" "a.txt"
same "$tmp/1.before" "$D"
[ ! -e "$D/.git" ] && [ ! -e "$D/.kiln" ] || problem "kiln wrote .git or .kiln into $D"
end "1. a non-empty directory that is not a workspace: refused (exit 2, naming it and what is in it), every file unchanged"

# ---- 2. a git repository with edits, staged and untracked files ----------------------

begin
P=$tmp/project
make_project "$P" || problem "could not make the project"
snap "$P" >"$tmp/2.before"
kiln search rmsnorm --workspace "$P" "${FAST[@]}"
refused "$P" "git repository"
grep -qF "README.md" "$tmp/io/err" || problem "the refusal does not list what the repository holds: $(show)"
same "$tmp/2.before" "$P"
kiln reverify --workspace "$P" --no-daemon
refused "$P" "git repository"
same "$tmp/2.before" "$P"
end "2. a git repository with uncommitted, staged and untracked files: search and reverify refused, every file (and .git) unchanged"

# ---- 3. --workspace . in a project ------------------------------------------------

begin
cd "$P" || exit 2
kiln search rmsnorm --workspace . "${FAST[@]}"
refused "$P" "git repository"
same "$tmp/2.before" "$P"
cd "$P/src" || exit 2
kiln search rmsnorm --workspace . "${FAST[@]}"
refused "$P/src" "main.c"
same "$tmp/2.before" "$P"
# Without --workspace: a new ./kiln-work beside the project's files, which stay as they were.
cd "$P" || exit 2
kiln search rmsnorm "${FAST[@]}"
[ "$RC" -eq 0 ] || problem "kiln search in the project (default ./kiln-work): $(show)"
[ -f "$P/kiln-work/.kiln/workspace" ] || problem "no ./kiln-work/.kiln/workspace"
same "$tmp/2.before" "$P" kiln-work
cd "$SRC" || exit 2
end "3. --workspace . in a project (its root or a subdirectory): refused, nothing changed; the default ./kiln-work leaves the project alone"

# ---- 4. an empty directory ------------------------------------------------------------

begin
E=$tmp/empty
mkdir -p "$E"
kiln search rmsnorm --workspace "$E" "${FAST[@]}"
[ "$RC" -eq 0 ] || problem "an empty directory: $(show)"
[ -f "$E/.kiln/workspace" ] && [ -d "$E/.git" ] || problem "$E is not a workspace now (.kiln/workspace, .git)"
kiln search rmsnorm --workspace "$tmp/new/deeper" "${FAST[@]}"
[ "$RC" -eq 0 ] && [ -f "$tmp/new/deeper/.kiln/workspace" ] ||
    problem "a directory that did not exist: $(show)"
end "4. an empty (or new) directory becomes a workspace, marked .kiln/workspace"

# ---- 5. a workspace: the user's own files survive a resume ------------------------------

begin
W=$E
RUN=$(sqlite3 "$W/.kiln/kiln.db" "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
printf 'my notes\n' >"$W/notes.txt"
mkdir -p "$W/out" && printf '<html>my report</html>\n' >"$W/out/report.html"
printf 'untracked next to a kernel\n' >"$W/rmsnorm/mine.c"
snap "$W" .git .kiln >"$tmp/5.before"
kiln search --workspace "$W" --resume last --iterations 2 --group decode --timing-ms 200
[ "$RC" -eq 0 ] || problem "resume: $(show)"
now=$(cd "$W" && sha256sum notes.txt out/report.html rmsnorm/mine.c 2>&1)
[ "$now" = "$(cd "$W" && grep -E ' \./(notes.txt|out/report.html|rmsnorm/mine.c)$' "$tmp/5.before" |
    sed 's| \./| |')" ] || problem "the user's files changed on resume: $now"
st=$(sqlite3 "$W/.kiln/kiln.db" "SELECT status || ' ' || iterations_done FROM runs WHERE id='$RUN'")
[ "$st" = "done 2" ] || problem "after the resume the run is '$st', expected 'done 2'"
# A kernel file the user edited is not kiln's to overwrite.
printf '// my edit\n' >>"$W/rmsnorm/cpu/kernel.c"
snap "$W" .git .kiln >"$tmp/5b.before"
kiln search --workspace "$W" --resume last --iterations 3 --group decode --timing-ms 200
refused "$W" "rmsnorm/cpu/kernel.c"
same "$tmp/5b.before" "$W" .git .kiln
kiln search rmsnorm --workspace "$W" "${FAST[@]}"
refused "$W" "rmsnorm/cpu/kernel.c"
same "$tmp/5b.before" "$W" .git .kiln
n=$(sqlite3 "$W/.kiln/kiln.db" "SELECT count(*) FROM runs")
[ "$n" = 1 ] || problem "a refused new run was recorded ($n runs)"
# Undone, the resume goes on.
git -C "$W" checkout -q -- rmsnorm/cpu/kernel.c
kiln search --workspace "$W" --resume last --iterations 3 --group decode --timing-ms 200
[ "$RC" -eq 0 ] || problem "resume once the edit is undone: $(show)"
end "5. in a workspace a resume leaves the user's own files byte for byte; an edited kernel file is refused, not overwritten"

# ---- 6. workspaces of an earlier kiln ------------------------------------------------------

begin
# An earlier kiln's workspace is one without the marker (everything else the same).
O=$tmp/old
kiln search rmsnorm --workspace "$O" "${FAST[@]}"
rm -f "$O/.kiln/workspace"
printf 'mine\n' >"$O/notes.txt"
kiln search --workspace "$O" --resume last --iterations 2 --group decode --timing-ms 200
[ "$RC" -eq 0 ] || problem "resuming an earlier kiln's workspace: $(show)"
[ -f "$O/.kiln/workspace" ] || problem "the earlier workspace did not get the marker"
[ "$(cat "$O/notes.txt")" = mine ] || problem "notes.txt changed"
# A clone of one has kiln's history and no .kiln/ at all.
git clone -q "$O" "$tmp/clone" 2>/dev/null || problem "git clone failed"
kiln search rmsnorm --workspace "$tmp/clone" "${FAST[@]}"
[ "$RC" -eq 0 ] && [ -f "$tmp/clone/.kiln/workspace" ] || problem "a clone of a workspace: $(show)"
# A project an earlier kiln was pointed at: its .kiln/ and kiln branches, but
# the history is the user's.
M=$tmp/mangled
make_project "$M" || problem "could not make the project"
mkdir -p "$M/.kiln" && cp "$O/.kiln/kiln.db" "$M/.kiln/kiln.db" && : >"$M/.kiln/lock" &&
    git -C "$M" branch kiln/rmsnorm/20260101-000000 2>/dev/null
snap "$M" >"$tmp/6.before"
kiln search --workspace "$M" --resume last "${FAST[@]}"
refused "$M" "git repository"
same "$tmp/6.before" "$M"
end "6. an earlier kiln's workspace (no marker) and a clone of one are used and marked; a project an earlier kiln touched is refused, unchanged"

t_done
