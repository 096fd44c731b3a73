#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The memory headroom for allocator fragmentation (docs/solver.md, "Memory
headroom"). On a Llama-3-8B sweep (1x8 H100, --variants all) the memory
budget is set so that the best plan without headroom sits within 1 % of
the capacity; with the default headroom (5 %) the auto search picks a plan
that leaves it, every stage reports its reserve, apreport's headline shows
the headroom and reserve per stage, and the same edge plan given by hand is
priced and warned about, not refused.

Usage: headroom.py APPROF APSOLVE APREPORT
"""
import json
import os
import subprocess
import sys
import tempfile

approf, apsolve, apreport = sys.argv[1:4]
tmp = tempfile.mkdtemp()


def run(*args, code=0):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != code:
        raise SystemExit("FAIL: %s exited %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


def solve(*extra):
    return json.loads(run(apsolve, "--db", db, "--format", "json", *extra).stdout)


def worst(plan):
    return max(s["memory_needed"] / s["available_memory"] for s in plan["stages"])


db = os.path.join(tmp, "l.db")
run(approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
    "--cluster", "1x8", "--hardware", "h100-sxm", "--micro-batches", "16", "--variants", "all")
free = solve("--no-store", "--memory-headroom", "0")
need = max(s["memory_needed"] for s in free["stages"])
budget = int(need / 0.99)
edge = solve("--no-store", "--memory-headroom", "0", "--memory-budget", str(budget))
assert worst(edge) >= 0.98, "the plan without headroom is not at the edge: %.4f" % worst(edge)
for s in edge["stages"]:
    assert s["memory_reserve"] == 0, s["memory_reserve"]

# The default: 5 % of the budget kept free on every stage.
auto = solve("--memory-budget", str(budget))
reserve = round(budget * 0.05)
for s in auto["stages"]:
    assert s["memory_reserve"] == reserve, (s["memory_reserve"], reserve)
    assert s["available_memory"] - s["memory_needed"] >= reserve, s
assert worst(auto) <= 0.95, worst(auto)
assert auto["total_cost"] >= edge["total_cost"], (auto["total_cost"], edge["total_cost"])
# An explicit size in bytes works the same way.
gib = solve("--no-store", "--memory-budget", str(budget), "--memory-headroom", str(reserve))
assert worst(gib) <= 0.95 and gib["stages"] == auto["stages"], worst(gib)
text = run(apsolve, "--db", db, "--no-store", "--memory-budget", str(budget)).stdout
# The columns: "free" the memory a stage leaves free, "reserve" the part of
# it kept for fragmentation (--memory-headroom); no column is called
# "headroom", the option's name, for the free memory.
header = [l for l in text.splitlines() if l.startswith("stage ")][0]
assert "free GiB" in header and "reserve" in header and "headroom" not in header, header

# The edge plan given by hand (a stored plan re-evaluated with --plan):
# priced (exit 0), judged by the raw capacity, and warned about.
stored = solve("--memory-headroom", "0", "--memory-budget", str(budget))
assert stored["stages"] == edge["stages"], "the stored edge plan differs"
p = run(apsolve, "--db", db, "--format", "json", "--plan", str(stored["plan_id"]))
given = json.loads(p.stdout)
given = given["plans"][0] if "plans" in given else given
assert given["feasible"], given
assert "reserve for allocator fragmentation" in p.stderr, p.stderr
assert worst(given) >= 0.98, worst(given)
# No plan leaves the headroom: the search falls back to the raw capacity
# (the plan without headroom) and says so.
p = run(apsolve, "--db", db, "--no-store", "--format", "json", "--memory-budget", str(budget),
        "--memory-headroom", str(budget - 2**30))
fallback = json.loads(p.stdout)
assert fallback["stages"] == [dict(s, memory_reserve=budget - 2**30) for s in edge["stages"]], \
    "the fallback is not the plan without headroom"
assert "no plan of the search leaves it" in p.stderr, p.stderr
bad = run(apsolve, "--db", db, "--no-store", "--memory-headroom", "60%", code=2)
assert "--memory-headroom" in bad.stderr, bad.stderr
# A size at or above the device's memory (here the budget, then the
# sweep's available memory) leaves nothing for any stage: refused (exit 2)
# with the option and the memory named, not searched.
for size, extra in ((budget, ["--memory-budget", str(budget)]),
                    (budget + 1, ["--memory-budget", str(budget)]),
                    (free["stages"][0]["available_memory"], [])):
    bad = run(apsolve, "--db", db, "--no-store", "--memory-headroom", str(size), *extra, code=2)
    assert "--memory-headroom %d bytes" % size in bad.stderr, bad.stderr
    assert "device's memory" in bad.stderr, bad.stderr

# apreport's headline: the free memory and the reserve per stage.
last = solve("--memory-budget", str(budget))
assert last["stages"] == auto["stages"]
out = os.path.join(tmp, "r")
run(apreport, "--db", db, "--plan", str(last["plan_id"]), "--out", out, "--quiet",
    "--export", "none")
rep = json.load(open(os.path.join(out, "report.json")))
for k, m in enumerate(rep["headline"]["memory"]):
    assert m["reserve"] == reserve, m
    assert m["free"] == m["available"] - m["needed"] and m["free"] >= reserve, m
    assert "headroom" not in m, m
html = open(os.path.join(out, "report.html")).read()
assert "<th>free</th>" in html and "reserve for fragmentation (--memory-headroom)" in html
print("ok: edge plan %.2f %% full, default plan %.2f %% (reserve %.3f GiB)"
      % (100 * worst(edge), 100 * worst(auto), reserve / 2**30))
