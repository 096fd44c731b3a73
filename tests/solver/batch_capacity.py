#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""apsolve --batch judges the plan at the new batch by the raw capacity,
not by the auto search's memory headroom (docs/solver.md, "Memory headroom"
and "--batch"; commit 83b3861). A small GPT is swept at micro-batch sizes
4 and 8; the auto plan is made at 4 with a headroom that this plan just
keeps (the headroom is the device's memory less the plan's largest stage
need), and re-evaluated with --batch at micro-batch 8, exactly from the
sweep at 8, where its largest stage needs more than the memory less the
headroom but far less than the memory. The re-evaluation must judge the
plan at micro-batch 8 feasible: it fits, and it has its full estimate
(judged with the headroom, as before 83b3861, the re-priced plan was
infeasible and its full estimate unavailable: JSON rebatch.full_cost absent,
the text without ", full estimate").

Usage: batch_capacity.py APPROF APSOLVE
"""
import json
import os
import subprocess
import sys
import tempfile

approf, apsolve = sys.argv[1:3]
tmp = tempfile.TemporaryDirectory()
db = os.path.join(tmp.name, "g.db")


def run(*args, code=0):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != code:
        raise SystemExit("FAIL: %s exited %d, not %d\n%s%s" % (" ".join(args), p.returncode,
                                                               code, p.stdout, p.stderr))
    return p


def solve(*extra, code=0):
    return json.loads(run(apsolve, "--db", db, "--no-store", "--format", "json",
                          "--micro-batch-size", "4", "--batch", "32", *extra, code=code).stdout)


run(approf, "sweep", "--db", db, "--quiet", "--model", "gpt", "--num-layers", "4", "--hidden",
    "256", "--heads", "4", "--seq-len", "128", "--vocab", "1000", "--layers", "3", "--cluster",
    "1x4", "--batch", "16", "--micro-batch-sizes", "4,8", "--dtype", "f16", "--backend", "model")

free = solve("--memory-headroom", "0")
assert free["micro_batch_size"] == 4 and free["rebatch"]["micro_batch"] == 8, free["rebatch"]
assert free["rebatch"]["source"] == "sweep", "not the exact re-evaluation: %s" % free["rebatch"]
avail = free["stages"][0]["available_memory"]
small = max(s["memory_needed"] for s in free["stages"])
big = max(s["memory_needed"] for s in free["rebatch"]["stages"])
assert small < big < avail // 2, (small, big, avail)

# The headroom this plan just keeps at micro-batch 4, and not at 8.
headroom = avail - small
plan = solve("--memory-headroom", str(headroom))
KEYS = ("layers", "submesh", "logical_mesh", "options", "memory_level", "recompute", "zero",
        "memory_needed")
layout = lambda stages: [[s[k] for k in KEYS] for s in stages]
assert layout(plan["stages"]) == layout(free["stages"]), "the auto plan changed with the headroom"
for s in plan["stages"]:
    assert s["memory_reserve"] == headroom and s["memory_needed"] <= avail - headroom, s
assert big > avail - headroom
reb = plan["rebatch"]
assert reb["source"] == "sweep", reb
assert reb["fits"], "--batch judged the plan with the headroom: %s" % reb
assert all(s["memory_ok"] for s in reb["stages"]), reb
assert "full_cost" in free["rebatch"], free["rebatch"]
assert reb.get("full_cost") == free["rebatch"]["full_cost"], \
    "the plan at --batch was judged with the headroom: %s" % reb
text = run(apsolve, "--db", db, "--no-store", "--micro-batch-size", "4", "--batch", "32",
           "--memory-headroom", str(headroom)).stdout
line = [l for l in text.splitlines() if l.startswith("At global batch 32")][0]
assert "exact" in line and ", full estimate " in line and "fits in memory" in line, line
print("ok: the plan keeps %d bytes free at micro-batch 4; at 8 it needs %d of %d bytes and fits"
      % (headroom, big, avail))
