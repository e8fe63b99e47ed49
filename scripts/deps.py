#!/usr/bin/env python3
"""deps.py - who calls whom in a kiln build, from the object files' symbols.

    scripts/deps.py BUILD_DIR            cycles between object files, and calls
                                         into SQLite or libgit2 from outside their
                                         owners; exit 1 if any
    scripts/deps.py BUILD_DIR --edges    every "a.c -> b.c: symbols" edge

An edge a -> b means a.c uses a function or variable that b.c defines (nm's
U against T, D, B or R). Tests and CMake's probes are left out. A cycle is
a strongly connected group of two or more files: each of them, through the
others, depends on itself (docs/architecture.md says why there are none).

One module owns each library (OWNERS): only harness/rundb.c and knowledge/
(the lessons tables) may call SQLite (sqlite3_*), only harness/workspace.c
libgit2 (git_*). A library's symbol is one with its prefix that the file
uses and no kiln file defines, so a kiln function of that name is not one.

The folders are layers (LAYERS, lowest first): a file may call into its own
folder and the folders below it, never above, so folders form no cycle
either. Folders not listed (bench/) sit on top.
"""
import collections
import os
import subprocess
import sys


def objects(build):
    for root, _, files in os.walk(build):
        rel = os.path.relpath(root, build)
        if rel.startswith("tests") or "CMakeFiles/3." in root or "CompilerId" in root:
            continue
        for f in files:
            if f.endswith(".c.o"):
                yield os.path.join(root, f)


def name_of(build, path):
    rel = os.path.relpath(path, build).replace("CMakeFiles/", "")
    parts = [p for p in rel.split("/") if not p.endswith(".dir")]
    return "/".join(parts)[:-2]   # "verifier/backend/cpu/cpu.c"


# prefix of the library's symbols -> (library, owners: a file, or every file under a "dir/")
OWNERS = {
    "sqlite3_": ("SQLite", ("harness/rundb.c", "knowledge/")),
    "git_": ("libgit2", ("harness/workspace.c",)),
}


# the folders, lowest first: each calls only into itself and those before it
LAYERS = ["common", "worker", "verifier", "daemon", "judge", "agent", "knowledge", "harness", "porting", "cli"]


def layer(name):
    top = name.split("/")[0]
    return LAYERS.index(top) if top in LAYERS else len(LAYERS)


def report_layers(edges):
    """Calls from a folder into one above it (or beside it at the same rank)."""
    bad = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a.split("/")[0] != b.split("/")[0] and layer(b) >= layer(a):
                bad.append((a, b, sorted(edges[a][b])))
    print(f"layers: {' < '.join(LAYERS)}; {len(bad)} calls upward")
    for a, b, syms in bad:
        print(f"layer violation: {a} -> {b}: {' '.join(syms)}")
    return len(bad)


def symbols(build):
    """What each object file defines and uses: ({symbol: {file}}, {file: {symbol}})."""
    defs, uses = {}, collections.defaultdict(set)
    for o in objects(build):
        n = name_of(build, o)
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs.setdefault(p[2], set()).add(n)
            elif len(p) == 2 and p[0] == "U":
                uses[n].add(p[1])
    return defs, uses


def graph(defs, uses):
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for n, syms in uses.items():
        for s in syms:
            for d in defs.get(s, ()):
                if d != n:
                    edges[n][d].add(s)
    names = set(uses) | {d for ds in defs.values() for d in ds}
    return names, edges


def cycles(names, edges):
    """Strongly connected groups of two or more (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in sorted(names):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def owned(name, owners):
    return any(name.startswith(o) if o.endswith("/") else name == o for o in owners)


def owner_check(defs, uses):
    """(users, violations): {prefix: files using the library}, and
    [(file, library, owners, symbols)] for each file outside the owners."""
    users, bad = collections.defaultdict(set), []
    for n in sorted(uses):
        for prefix, (lib, owners) in OWNERS.items():
            syms = sorted(s for s in uses[n] if s.startswith(prefix) and s not in defs)
            if not syms:
                continue
            users[prefix].add(n)
            if not owned(n, owners):
                bad.append((n, lib, owners, syms))
    return users, bad


def report_owners(defs, uses):
    users, bad = owner_check(defs, uses)
    counts = ", ".join(f"{lib} ({p}*) in {len(users[p])}" for p, (lib, _) in OWNERS.items())
    print(f"owners: {counts} object files; {len(bad)} outside their owners")
    for n, lib, owners, syms in bad:
        print(f"owner violation: {n} calls {lib}, which only {' and '.join(owners)} may:"
              f" {' '.join(syms)}")
    return len(bad)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    defs, uses = symbols(sys.argv[1])
    names, edges = graph(defs, uses)
    if "--edges" in sys.argv[2:]:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}: {' '.join(sorted(edges[a][b]))}")
        return 0
    found = cycles(names, edges)
    nedges = sum(len(v) for v in edges.values())
    print(f"deps: {len(names)} object files, {nedges} edges between them, {len(found)} cycles")
    for c in found:
        print("cycle: " + " ".join(c))
        for a in c:
            for b in sorted(edges[a]):
                if b in c:
                    print(f"  {a} -> {b}: {' '.join(sorted(edges[a][b]))}")
    bad = report_owners(defs, uses)
    up = report_layers(edges)
    return 1 if found or bad or up else 0


if __name__ == "__main__":
    sys.exit(main())
