#!/usr/bin/env python3
"""deps.py - who calls whom in a kiln build, from the object files' symbols.

    scripts/deps.py BUILD_DIR            cycles between object files; exit 1 if any
    scripts/deps.py BUILD_DIR --edges    every "a.c -> b.c: symbols" edge

An edge a -> b means a.c uses a function or variable that b.c defines (nm's
U against T, D, B or R). Tests and CMake's probes are left out. A cycle is
a strongly connected group of two or more files: each of them, through the
others, depends on itself (docs/architecture.md says why there are none).
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
    return "/".join(parts)[:-2]   # "verifier/backend/cpu.c"


def graph(build):
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


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    names, edges = graph(sys.argv[1])
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
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
