#!/usr/bin/env python3
"""report_check.py - checks report_charts_test.sh makes of `kiln report`'s
pages against what sqlite3 read from the run database. Prints one line per
problem and exits 1 when there is one, 0 when there is none.

usage: report_check.py runs RUN.html CANDS   (CANDS: "n|decision" lines of the run)
       report_check.py task TASK.html SHAPES NRUNS
       (SHAPES: "run|n|shape|speedup" lines, each visible shape of each kept
       candidate's verdict against the baseline, from every run of the task)
"""
import re
import sys
from html.parser import HTMLParser

problems = []


def problem(msg):
    problems.append(msg)


class Page(HTMLParser):
    """The elements the checks need, each as (tag, attrs, chart label)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chart = None        # aria-label of the <svg class="chart"> we are in
        self.els = []
        self.legend = None       # text of the first <p class="legend">
        self.legend_marks = []   # (tag, attrs) of the legend's svg shapes
        self.in_legend = False
        self.headings = []       # h2 texts, in order
        self.h2 = None
        self.rows = []           # attrs of <tr data-shape> rows, with their cell texts
        self.row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "chart" in a.get("class", "").split():
            self.chart = a.get("aria-label", "")
        if tag == "p" and a.get("class") == "legend" and self.legend is None:
            self.in_legend, self.legend = True, ""
        if self.in_legend and tag in ("circle", "path"):
            self.legend_marks.append((tag, a))
        if self.chart is not None and tag in ("circle", "path", "polyline"):
            self.els.append((tag, a, self.chart))
        if tag == "h2":
            self.h2 = ""
        if tag == "tr" and "data-shape" in a:
            self.row = (a, [])
        if tag == "td" and self.row:
            self.row[1].append("")

    def handle_endtag(self, tag):
        if tag == "svg":
            self.chart = None
        if tag == "p" and self.in_legend:
            self.in_legend = False
        if tag == "h2" and self.h2 is not None:
            self.headings.append(self.h2)
            self.h2 = None
        if tag == "tr" and self.row:
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.in_legend:
            self.legend += data
        if self.h2 is not None:
            self.h2 += data
        if self.row and self.row[1]:
            self.row[1][-1] += data


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def hollow(a):
    return a.get("fill") == "none" and a.get("stroke", "none") not in ("", "none")


def filled(a):
    return a.get("fill", "none") not in ("", "none", "#fff", "#ffffff", "white")


DIAMOND = re.compile(r"^M([0-9.]+),([0-9.]+)l5,5l-5,5l-5,-5z$")
STEPS = re.compile(r"^M[0-9.]+,[0-9.]+((H[0-9.]+V[0-9.]+)*)H[0-9.]+$")


def check_markers(p, cands):
    charts = ["best speedup against iteration", "best speedup against elapsed time"]
    for label in charts:
        marks = {}
        for tag, a, chart in p.els:
            if chart == label and a.get("class") in ("kept", "est"):
                marks[int(a["data-n"])] = (tag, a)
        if sorted(marks) != sorted(cands):
            problem(f"{label}: markers for candidates {sorted(marks)}, the run has {sorted(cands)}")
        kept_y = set()
        for n, decision in cands.items():
            if n not in marks:
                continue
            tag, a = marks[n]
            if decision == "keep":
                if tag != "circle" or a.get("class") != "kept" or not filled(a):
                    problem(f"{label}: kept #{n} is <{tag} {a}>, expected a filled circle")
                else:
                    kept_y.add(a["cy"])
            elif tag != "path" or a.get("class") != "est" or not hollow(a) or \
                    not DIAMOND.match(a.get("d", "")):
                problem(f"{label}: reverted #{n} is <{tag} {a}>, expected a hollow diamond")
        lines = [a for tag, a, chart in p.els if chart == label and tag == "polyline"]
        if len(lines) != 1:
            problem(f"{label}: {len(lines)} best-so-far lines, expected 1")
            continue
        ys = {pt.split(",")[1] for pt in lines[0]["points"].split()}
        if not ys <= kept_y:
            problem(f"{label}: the best-so-far line is at y {sorted(ys - kept_y)}, where no kept "
                    f"point is (kept at {sorted(kept_y)})")


def check_legend(p):
    want = ["kept (recorded against the baseline)", "estimated (not recorded against the baseline)"]
    text = " ".join((p.legend or "").split())
    for w in want:
        if w not in text:
            problem(f"the legend lacks '{w}': '{text}'")
    tags = [(tag, filled(a), hollow(a)) for tag, a in p.legend_marks]
    if tags != [("circle", True, False), ("path", False, True)]:
        problem(f"the legend's marks are {tags}, expected a filled circle and a hollow path")


def check_steps(p, nshapes):
    for label in ("speedup against the task's baseline per shape against iteration",
                  "fraction of the roofline per shape against iteration"):
        paths = [a for tag, a, chart in p.els if chart == label and tag == "path"]
        if len(paths) != nshapes:
            problem(f"{label}: {len(paths)} lines, expected one per visible shape ({nshapes})")
        for a in paths:
            d = a.get("d", "")
            if not STEPS.match(d):
                problem(f"{label}: shape {a.get('data-shape')}'s path is not M then H/V steps: '{d}'")
                continue
            xs = [float(x) for x in re.findall(r"H([0-9.]+)", d)]
            if xs != sorted(xs):
                problem(f"{label}: shape {a.get('data-shape')}'s steps go back in x: '{d}'")
        if [t for t, a, chart in p.els if chart == label and t == "polyline"]:
            problem(f"{label}: a polyline (straight lines between keeps) is still drawn")


def runs_page(html, cands_file):
    cands = {}
    for line in open(cands_file, encoding="utf-8"):
        n, decision = line.rstrip("\n").split("|")
        cands[int(n)] = decision
    p = parse(html)
    check_markers(p, cands)
    check_legend(p)
    check_steps(p, 6)   # rmsnorm's prefill group: v1 .. v6
    if p.rows or any(h.startswith("across") for h in p.headings):
        problem("a one-run report has the across-runs table")


def task_page(html, shapes_file, nruns):
    best = {}   # shape: (speedup, {(run, n) at that speedup})
    for line in open(shapes_file, encoding="utf-8"):
        run, n, shape, sp = line.rstrip("\n").split("|")
        sp = float(sp)
        b = best.get(shape)
        if b is None or sp > b[0]:
            best[shape] = (sp, {(run, int(n))})
        elif sp == b[0]:
            b[1].add((run, int(n)))
    p = parse(html)
    want = f"across the {nruns} run{'' if nruns == 1 else 's'}"
    if not p.headings or p.headings[0] != want:
        problem(f"the first heading is {p.headings[:1]}, expected '{want}'")
    runs = [h for h in p.headings if h.startswith("run ")]
    if len(runs) != nruns:
        problem(f"{len(runs)} run sections after the table, expected {nruns}")
    got = {a["data-shape"]: (a, cells) for a, cells in p.rows}
    if sorted(got) != sorted(best):
        problem(f"the across table lists shapes {sorted(got)}, the database {sorted(best)}")
    for shape, (sp, who) in sorted(best.items()):
        if shape not in got:
            continue
        a, cells = got[shape]
        if (a["data-run"], int(a["data-n"])) not in who:
            problem(f"{shape}: best is run {a['data-run']} #{a['data-n']}, the database says {who}")
        if abs(float(a["data-speedup"]) - sp) > 1e-9 * sp:
            problem(f"{shape}: data-speedup {a['data-speedup']}, the database {sp!r}")
        shown = f"{sp:.3f}x"
        if len(cells) != 5 or not cells[2].startswith(shown + " [") or cells[3] != a["data-run"] \
                or not cells[4].startswith(f"#{a['data-n']}, commit "):
            problem(f"{shape}: row {cells}, expected {shown} [..], run {a['data-run']}, #{a['data-n']}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "runs":
        runs_page(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "task":
        task_page(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for m in problems:
        print(m)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
