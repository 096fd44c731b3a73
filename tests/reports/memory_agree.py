#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One memory figure (docs/solver.md, "Memory"): on random plans over several
real sweeps, apsolve's memory_needed per stage (its JSON, the stored plan),
apsolve --plan's re-evaluation and apreport's (report.json, the stage dumps)
are the same number, for both objectives and every schedule. approf
compare's plan of each sweep states the figures apsolve gives the same
stages (--stage-option manual, Alpa's objective, 1F1B, the sweep's
micro-batches, as compare plans).

Usage: memory_agree.py APPROF APSOLVE APREPORT [CASES]
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

approf, apsolve, apreport = sys.argv[1:4]
cases = int(sys.argv[4]) if len(sys.argv) > 4 else 40
rng = random.Random(20261128)
failures = []


def run(args, ok=(0,)):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode not in ok:
        raise SystemExit("FAIL: %s exited %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


def sweep(path, *args):
    run([approf, "sweep", "--db", path, "--quiet", *args])


tmp = tempfile.mkdtemp()
dbs = {
    # name: (path, global batch)
    "resnet50": (os.path.join(tmp, "r.db"), 256),
    "gpt-variants": (os.path.join(tmp, "g.db"), 32),
    "bert-2x4": (os.path.join(tmp, "b.db"), 32),
}
sweep(dbs["resnet50"][0], "--model", "resnet50", "--layers", "8")
sweep(dbs["gpt-variants"][0], "--model", "gpt", "--cluster", "2x4", "--layers", "6",
      "--variants", "all", "--micro-batch-sizes", "1,2,4")
sweep(dbs["bert-2x4"][0], "--model", "bert", "--cluster", "2x4", "--layers", "6",
      "--hardware", "v100-16g")

checked = 0
for case in range(cases):
    name = rng.choice(sorted(dbs))
    path, gb = dbs[name]
    objective = rng.choice(["full", "alpa"])
    schedule = rng.choice(["1f1b", "gpipe", "interleaved", "zb-h1", "interleaved-zb", "zbv"])
    args = [apsolve, "--db", path, "--format", "json", "--quiet", "--objective", objective,
            "--schedule", schedule]
    if schedule in ("interleaved", "interleaved-zb"):
        args += ["--virtual-stages", str(rng.choice([2, 3]))]
    if name == "gpt-variants" and objective == "full":
        args += ["--global-batch", str(gb)]
    else:
        args += ["--micro-batches", str(rng.choice([1, 2, 4, 8, 16]))]
    if rng.random() < 0.3:
        args += ["--memory-budget", rng.choice(["512M", "1G", "2G", "6G"])]
    if rng.random() < 0.25:
        args += ["--max-stages", str(rng.choice([2, 3]))]
    p = run(args, ok=(0, 3))
    if p.returncode == 3 or not p.stdout.strip():
        continue
    plan = json.loads(p.stdout)
    out = os.path.join(tmp, "o%d" % case)
    run([apreport, "--db", path, "--out", out, "--quiet", "--export", "none"])
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    solver = [s["memory_needed"] for s in plan["stages"]]
    report = [s["memory_needed"] for s in rep["stages"]]
    if solver != report:
        failures.append("case %d (%s): apsolve %s != apreport %s  [%s]" %
                        (case, name, solver, report, " ".join(args[3:])))
        continue
    # the stage dumps state the same figure (GB, three decimals)
    for k, need in enumerate(solver):
        dump = [x for x in os.listdir(out) if x.endswith("stage_%d.mem_usage.txt" % k)]
        with open(os.path.join(out, dump[0])) as f:
            text = f.read()
        g = re.search(r"# memory_needed: ([0-9.]+) GB", text)
        if not g or abs(float(g.group(1)) - need / 2**30) > 0.0006:
            failures.append("case %d (%s) stage %d: dump says %s, apsolve %.4f GB" %
                            (case, name, k, g.group(1) if g else "nothing", need / 2**30))
    # apsolve --plan re-evaluates the stored plan to the same figures
    plan_id = rep["plan"]["id"] if "plan" in rep and "id" in rep["plan"] else None
    if plan_id is not None:
        again = run([apsolve, "--db", path, "--plan", str(plan_id), "--format", "json",
                     "--quiet"], ok=(0, 3))
        if again.stdout.strip():
            ev = json.loads(again.stdout)
            if [s["memory_needed"] for s in ev["stages"]] != solver:
                failures.append("case %d (%s): apsolve --plan %s gives %s, not %s" %
                                (case, name, plan_id, [s["memory_needed"] for s in ev["stages"]],
                                 solver))
    checked += 1

# approf compare's plan (reports/compare.c) of each sweep: apsolve prices
# the same stages to the same memory figures
for name in sorted(dbs):
    path = dbs[name][0]
    side = json.loads(run([approf, "compare", path, path, "--format", "json"]).stdout)["sides"][0]
    plan = side.get("plan")
    if not plan or not plan.get("stages"):
        failures.append("compare (%s): no plan" % name)
        continue
    st = plan["stages"]
    ev = json.loads(run([
        apsolve, "--db", path, "--sweep", str(side["sweep_id"]), "--no-store", "--format",
        "json", "--quiet", "--objective", "alpa", "--schedule", "1f1b", "--micro-batches",
        str(plan["micro_batches"]), "--stage-option", "manual", "--forward-stage-layer-ids",
        json.dumps([list(range(x["layers"][0], x["layers"][-1] + 1)) for x in st]),
        "--submesh-shapes", "[%s]" % ",".join("(%d,%d)" % tuple(x["submesh"]) for x in st),
        "--logical-shapes", "[%s]" % ",".join("(%d,%d)" % tuple(x["logical_mesh"]) for x in st),
        "--option-dicts", json.dumps([x["options"] for x in st])]).stdout)
    ev = [x for x in ev["plans"] if x["kind"] != "auto"][0] if "plans" in ev else ev
    # memory_needed and the headroom's reserve (apsolve's default, kept by
    # compare too: apsolve_solve_keep_headroom)
    got = [(x["memory_needed"], x["memory_reserve"]) for x in st]
    want = [(x["memory_needed"], x["memory_reserve"]) for x in ev["stages"]]
    if got != want:
        failures.append("compare (%s): (need, reserve) %s, apsolve on the same stages %s"
                        % (name, got, want))
    checked += 1

if checked < cases // 2:
    failures.append("only %d of %d cases gave a plan to check" % (checked, cases))
for f in failures:
    print("FAIL:", f)
print("%d plans checked, %d failures" % (checked, len(failures)))
sys.exit(1 if failures else 0)
