#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""apsolve --framework F: the best plan F runs as priced (solver/
session_framework.c, docs/solver.md "The best plan a framework runs").

On Llama-3-8B with 8 blocks on 1x8 H100 with every variant, at a 12 GiB
budget (where the auto plan keeps weights whole on the tp axis):
- --framework megatron gives a plan whose verdict includes Megatron-LM,
  stored as the 3-D plan of its layout; its full estimate equals
  apsolve --parallel of that layout exactly, and no Megatron-runnable
  --parallel plan of a brute-force set (every dp x tp x pp, micro-batch
  size, recompute none/full, ZeRO 0/1, and vpp 2) that fits with the
  headroom is cheaper;
- apreport's Megatron file of the stored plan says it runs as priced, with
  the same price, and passes the manifest check (check_launch.py);
- DeepSpeed and torchtitan get plans they run;
- at 8 GiB, context parallelism: Megatron-LM's and torchtitan's plans use
  cp (the auto plan's cp 2 x tp 4), DeepSpeed's none; on a small Mixtral,
  Megatron-LM's plan uses ep and is no slower than the auto plan;
- refusals: at 6 GiB nothing fits (exit 3, the least memory named); on a
  sweep of Alpa's plain space the tp > 1 plans keep their weights whole
  (exit 3, --variants all named); nothing is stored; usage errors exit 2.

Usage: framework_search.py APPROF APSOLVE APREPORT MANIFESTS CHECK_LAUNCH
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

approf, apsolve, apreport, manifests, check = sys.argv[1:6]
tmp = tempfile.mkdtemp()
BUDGET = "12G"


def run(*args, code=0):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != code:
        raise SystemExit("FAIL: %s exited %d (expected %d)\n%s%s" % (
            " ".join(args), p.returncode, code, p.stdout, p.stderr))
    return p


def solve(db, *extra, code=0):
    p = run(apsolve, "--db", db, "--format", "json", "--memory-budget", BUDGET, *extra, code=code)
    return json.loads(p.stdout) if code == 0 else p


def three_d(d):
    return [p for p in d["plans"] if p["kind"] == "3d"][0] if "plans" in d else d


def plans(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT count(*) FROM plan").fetchone()[0]


def keeps_headroom(p):
    return all(s["available_memory"] <= 0 or
               s["memory_needed"] + s["memory_reserve"] <= s["available_memory"]
               for s in p["stages"])


db = os.path.join(tmp, "l.db")
run(approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
    "--num-layers", "8", "--layers", "8", "--cluster", "1x8", "--hardware", "h100-sxm",
    "--variants", "all", "--micro-batch-sizes", "2,4,8")

best = solve(db, "--framework", "megatron")
fs = best["framework_search"]
assert best["kind"] == "3d" and best["feasible"], best
assert "megatron" in best["frameworks"]["runs"], best["frameworks"]
assert best["label"] == "Megatron-LM " + fs["parallel"], (best["label"], fs)
assert fs["framework"] == "megatron" and fs["headroom_kept"], fs
assert fs["layouts"] >= fs["priced"] >= fs["runs"] >= fs["fit"] >= fs["headroom"] >= 1, fs
assert fs["layouts"] == (fs["pruned_rule"] + fs["pruned_memory"] + fs["missing"] +
                         fs["pruned_bound"] + fs["priced"]), fs
price = best["full_cost"]
assert price == fs["price"], (price, fs)
assert keeps_headroom(best), best["stages"]
with sqlite3.connect(db) as c:
    kind, opts = c.execute("SELECT kind, options FROM plan WHERE id = ?",
                           (best["plan_id"],)).fetchone()
opts = json.loads(opts)
assert kind == "3d" and "megatron" in opts["frameworks"].split(","), (kind, opts)
lay = opts["parallel"]
assert "dp=%d,tp=%d,pp=%d,zero=%d,recompute=%s" % (lay["dp"], lay["tp"], lay["pp"], lay["zero"],
                                                   lay["recompute"]) in fs["parallel"], (lay, fs)
text = run(apsolve, "--db", db, "--memory-budget", BUDGET, "--framework", "megatron",
           "--no-store").stdout
assert "Best plan Megatron-LM runs as priced: --parallel %s" % fs["parallel"] in text, text

# the same layout through --parallel: the same price, exactly
same = three_d(solve(db, "--no-store", "--parallel", fs["parallel"]))
assert same["full_cost"] == price and same["total_cost"] == best["total_cost"], (same, best)
assert [(s["memory_level"], s["config_index"]) for s in same["stages"]] == \
    [(s["memory_level"], s["config_index"]) for s in best["stages"]]

# brute force: no Megatron-runnable plan of the set that fits is cheaper
checked = 0
for dp, tp, pp in [(a, b, 8 // a // b) for a in (1, 2, 4, 8) for b in (1, 2, 4, 8) if a * b <= 8]:
    for m in (2, 4, 8):
        if m % dp:
            continue
        for rec, zero, vpp in (("none", 1, 1), ("full", 1, 1), ("none", 0, 1), ("full", 0, 1),
                               ("none", 1, 2)):
            if vpp > 1 and pp < 2:
                continue
            par = "dp=%d,tp=%d,pp=%d,zero=%d,recompute=%s,mbs=%d%s" % (
                dp, tp, pp, zero, rec, m // dp, ",vpp=%d" % vpp if vpp > 1 else "")
            p = subprocess.run([apsolve, "--db", db, "--format", "json", "--memory-budget",
                                BUDGET, "--no-store", "--quiet", "--parallel", par],
                               capture_output=True, text=True)
            if p.returncode == 2 and "must be a multiple of the pipeline stages" in p.stderr:
                continue  # interleaving B micro-batches on pp stages needs pp | B
            if p.returncode not in (0, 3):
                raise SystemExit("FAIL: --parallel %s exited %d\n%s" % (par, p.returncode,
                                                                          p.stderr))
            q = three_d(json.loads(p.stdout))
            if not q["feasible"] or "megatron" not in q["frameworks"]["runs"] or \
                    not keeps_headroom(q) or q["full_cost"] is None:
                continue
            checked += 1
            assert q["full_cost"] >= price, ("cheaper", par, q["full_cost"], fs["parallel"], price)
assert checked >= 5, checked

# apreport: the Megatron file runs the stored plan as priced, at its price
out = os.path.join(tmp, "r")
run(apreport, "--db", db, "--plan", str(best["plan_id"]), "--name", "a", "--out", out, "--quiet")
rep = json.load(open(os.path.join(out, "report.json")))
assert "megatron" in rep["headline"]["frameworks"]["runs"], rep["headline"]["frameworks"]
args = open(os.path.join(out, "a_megatron.args")).read()
assert "# Megatron-LM runs this plan as priced:\n" in args, args[:900]
assert "full estimate %.6f s" % price in args, args[:900]
assert "--tensor-model-parallel-size %d\n" % lay["tp"] in args, args
assert "--pipeline-model-parallel-size %d\n" % lay["pp"] in args, args
run(sys.executable, check, os.path.join(manifests, "megatron-lm-core_v0.19.0.json"),
    os.path.join(out, "a_megatron.args"))

# the other frameworks get plans they run, and their launch files say so
for f, name, suffix in (("deepspeed", "DeepSpeed", "deepspeed.json"),
                        ("torchtitan", "torchtitan", "torchtitan.toml")):
    d = solve(db, "--framework", f)
    assert f in d["frameworks"]["runs"] and d["framework_search"]["framework"] == f, d
    out = os.path.join(tmp, f)
    run(apreport, "--db", db, "--plan", str(d["plan_id"]), "--name", "a", "--out", out,
        "--quiet")
    text = open(os.path.join(out, "a_" + suffix)).read()
    assert "%s runs this plan as priced:" % name in text, text[:900]
    assert "full estimate %.6f s" % d["full_cost"] in text, text[:900]
run(sys.executable, check, os.path.join(manifests, "deepspeed-v0.16.4.json"),
    os.path.join(tmp, "deepspeed", "a_deepspeed.json"))

# refusals: exit 3 naming the closest reasons, nothing stored
n = plans(db)
# at 6 GiB only activation offload fits (h100-sxm's PCIe Gen5 host link,
# docs/variants.md "Activation offload"): the search finds it
d = json.loads(run(apsolve, "--db", db, "--format", "json", "--memory-budget", "6G",
                  "--framework", "megatron", "--no-store").stdout)
assert d["feasible"] and d.get("offload", {}).get("layers", 0) > 0, d.get("offload")
assert "offload=" in d["framework_search"]["parallel"], d["framework_search"]
p = run(apsolve, "--db", db, "--memory-budget", "5G", "--framework", "megatron", code=3)
assert "no plan Megatron-LM runs as priced fits in memory" in p.stderr, p.stderr
m = re.search(r"every tp=1 plan it runs needs ([0-9.]+) GiB on some device, 5\.0 GiB available",
              p.stderr)
assert m and float(m.group(1)) > 5.0, p.stderr
assert plans(db) == n
plain = os.path.join(tmp, "p.db")
run(approf, "sweep", "--db", plain, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
    "--num-layers", "8", "--layers", "8", "--cluster", "1x8", "--hardware", "h100-sxm",
    "--variants", "alpa", "--micro-batch-sizes", "2,4,8")
p = run(apsolve, "--db", plain, "--memory-budget", "16G", "--framework", "megatron", code=3)
assert "tp>1 plans: the database has no memory level that splits the weights" in p.stderr, \
    p.stderr
assert "--variants all" in p.stderr and "weight matrices whole" in p.stderr, p.stderr
assert plans(plain) == 0

# context parallelism (issue 32): at 8 GiB the auto plan splits the
# sequence 2 ways (cp 2); --framework megatron searches cp too and finds a
# cp plan (before, tp 8 at 0.720 s), priced exactly as --parallel prices
# it, and no slower than the auto plan when Megatron-LM runs that one;
# torchtitan runs the ring as well, DeepSpeed no cp
auto8 = json.loads(run(apsolve, "--db", db, "--format", "json", "--quiet", "--no-store",
                       "--memory-budget", "8G").stdout)
assert auto8.get("cp") == 2, auto8
auto8_megatron = "megatron" in auto8["frameworks"]["runs"]
for f in ("megatron", "torchtitan", "deepspeed"):
    d = json.loads(run(apsolve, "--db", db, "--format", "json", "--quiet", "--no-store",
                       "--memory-budget", "8G", "--framework", f).stdout)
    lay8 = d["framework_search"]["parallel"]
    assert f in d["frameworks"]["runs"] and d["feasible"], (f, d["frameworks"])
    assert (",cp=" in lay8) == (f != "deepspeed"), (f, lay8)
    same = three_d(json.loads(run(apsolve, "--db", db, "--format", "json", "--quiet",
                                  "--no-store", "--memory-budget", "8G", "--parallel",
                                  lay8).stdout))
    assert same["full_cost"] == d["full_cost"] == d["framework_search"]["price"], (f, same, d)
    if f == "megatron" and auto8_megatron:
        assert d["full_cost"] <= auto8["full_cost"], (lay8, d["full_cost"], auto8["full_cost"])

# expert parallelism: on a small Mixtral where ep pays, Megatron-LM's best
# plan splits the experts and is no slower than the auto plan (which it
# runs); torchtitan builds ep inside FSDP (ZeRO-2/3), which an ep plan is
# not priced with, so its plan has none (sequence 512: at 1024 the
# dispatcher's per-micro-batch costs, docs/expert-parallel.md, let cp=2 win)
moe = os.path.join(tmp, "moe.db")
run(approf, "sweep", "--db", moe, "--quiet", "--model", "mixtral", "--preset", "mixtral-8x7b",
    "--num-layers", "2", "--layers", "2", "--seq-len", "512", "--cluster", "1x4", "--hardware",
    "h100-sxm", "--batch", "16", "--micro-batches", "4", "--logical-space",
    "data_parallel_only", "--variants", "alpa")
mauto = json.loads(run(apsolve, "--db", moe, "--format", "json", "--quiet",
                       "--no-store").stdout)
assert mauto.get("ep", 0) > 1 and "megatron" in mauto["frameworks"]["runs"], mauto["frameworks"]
for f in ("megatron", "torchtitan"):
    d = json.loads(run(apsolve, "--db", moe, "--format", "json", "--quiet", "--no-store",
                       "--framework", f).stdout)
    layf = d["framework_search"]["parallel"]
    assert (",ep=" in layf) == (f == "megatron"), (f, layf)
    same = three_d(json.loads(run(apsolve, "--db", moe, "--format", "json", "--quiet",
                                  "--no-store", "--parallel", layf).stdout))
    assert same["full_cost"] == d["full_cost"] and f in same["frameworks"]["runs"], (f, same)
    if f == "megatron":
        assert d["full_cost"] <= mauto["full_cost"], (layf, d["full_cost"], mauto["full_cost"])

# usage errors
p = run(apsolve, "--db", db, "--framework", "jax", code=2)
assert "--framework 'jax' is not one of megatron|deepspeed|torchtitan" in p.stderr, p.stderr
p = run(apsolve, "--db", db, "--framework", "megatron", "--parallel", "dp=8,tp=1,pp=1", code=2)
assert "not with --parallel" in p.stderr, p.stderr
print("ok: --framework megatron: %s, full estimate %.6f s; %d layouts, %d priced, %d run; "
      "%d brute-force plans no cheaper" % (fs["parallel"], price, fs["layouts"], fs["priced"],
                                            fs["runs"], checked))
