#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the defaults give a newcomer, and what they say. The auto search chooses the schedule when --schedule is not given
(docs/solver.md, "Schedules"): on a Llama-3-8B sweep of 16 layers on 1x8
H100 the interleaved plan is cheaper by the full estimate, so the
default picks it: two stages of 8 layers with 8 chunks each, cheaper than
the same stages with 2 (the search tries every vpp whose chunks are whole
layers; until 2026-11-29 v = 2 alone), every stage holds whole chunks, the stored plan says so
and apreport reports it under that schedule; --schedule 1f1b keeps 1F1B
and costs more. On ResNet-50 (where 1F1B wins) the default stays 1F1B, and
the sweep at one micro-batch size names the option that adds the others.
A stage launched as tp b whose weights are priced whole over the tp axis
gets apreport's warning.

A --parallel layout the sweep lacks is named with its reason and the sweep
option that adds it.

Usage: defaults.py APPROF APSOLVE APREPORT
"""
import json
import os
import re
import subprocess
import sys
import tempfile

approf, apsolve, apreport = sys.argv[1:4]
tmp = tempfile.mkdtemp()


def run(*args, stderr=False):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("FAIL: %s exited %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stderr if stderr else p.stdout


def solve(db, *extra):
    return json.loads(run(apsolve, "--db", db, "--format", "json", "--quiet", *extra))


llama = os.path.join(tmp, "l.db")
# Alpa's plain space (--variants alpa): its pipelines, schedules and notes
run(approf, "sweep", "--db", llama, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
    "--cluster", "1x8", "--hardware", "h100-sxm", "--micro-batches", "16", "--variants", "alpa")
auto = solve(llama)
one = solve(llama, "--schedule", "1f1b", "--no-store")
two = solve(llama, "--schedule", "interleaved", "--virtual-stages", "2", "--no-store")
assert auto["schedule"] == "interleaved" and auto["virtual_stages"] == 8, \
    (auto["schedule"], auto["virtual_stages"])
assert one["schedule"] == "1f1b", one["schedule"]
assert auto["full_cost"] < two["full_cost"] < one["full_cost"], \
    (auto["full_cost"], two["full_cost"], one["full_cost"])
for s in auto["stages"]:
    assert len(s["layers"]) % auto["virtual_stages"] == 0, s["layers"]
out = os.path.join(tmp, "r")
run(apreport, "--db", llama, "--out", out, "--quiet", "--export", "none")
rep = json.load(open(os.path.join(out, "report.json")))
assert rep["schedules"]["selected"] == "interleaved", rep["schedules"]["selected"]
# A stage launched as tp b > 1 whose priced weight matrices are not split
# over the tp axis (logical axis 1) is named in a warning, and only then.
for st in rep["stages"]:
    a, b = st["logical_mesh"]
    whole = 0
    for t in st["tensors"]:
        if t["role"] != "param" or len(t["shape"]) < 2:
            continue
        mapping = re.findall(r"(ShardedAxis|Replicated)", t["sharding_spec"].split("), (")[-1])
        on_tp = mapping[-1] == "ShardedAxis" if b > 1 and mapping else False
        whole += 0 if on_tp else 1
    said = [w for w in rep["warnings"] if w.startswith("stage %d runs as tp" % st["index"])]
    assert bool(said) == (b > 1 and whole > 0), (st["index"], b, whole, said)
    if said:
        assert " %d of its " % whole in said[0], (whole, said[0])
# the headline: apsolve's full estimate, throughput, MFU, the layout, and
# memory parts that add up to apsolve's need per stage
hl = rep["headline"]
assert abs(hl["iteration_seconds"] - auto["full_cost"]) <= 1e-9 * auto["full_cost"], hl
assert hl["gpus"] == 8 and 0 < hl["mfu"] < 1, hl
assert abs(hl["samples_per_second_per_gpu"] * hl["iteration_seconds"] * 8 - 32) < 1e-6, hl
assert abs(hl["tokens_per_second_per_gpu"] - 4096 * hl["samples_per_second_per_gpu"]) < 1e-3
assert hl["layout"].startswith("dp 2 x tp 2 x pp 2, interleaved vpp 8"), hl["layout"]
for m, st in zip(hl["memory"], auto["stages"]):
    assert m["needed"] == st["memory_needed"], (m, st["memory_needed"])
    parts = m["parameters"] + m["optimizer_state"] + m["activations"] + m["rest"]
    assert abs(parts - m["needed"]) <= 1, (parts, m)
html = open(os.path.join(out, "report.html")).read()
assert html.index("At a glance") < html.index("Cluster mesh"), "the headline comes first"
# trace.json: no complete event reaches past the start of the next one on
# its track (Perfetto drops overlapping events), in the printed decimals
trace = json.load(open(os.path.join(out, "trace.json")))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
tracks = {}
for e in events:
    if e.get("ph") == "X":
        tracks.setdefault((e["pid"], e["tid"]), []).append((round(e["ts"] * 1000),
                                                              round(e["dur"] * 1000)))
for key, evs in tracks.items():
    evs.sort()
    for (t0, d0), (t1, _) in zip(evs, evs[1:]):
        assert t0 + d0 <= t1, (key, t0, d0, t1)
# today's ILP keeps this plan's weights whole over its (2, 2) meshes' axis 1
assert any(" runs as tp " in w for w in rep["warnings"]), rep["warnings"]
# apsolve --parallel says the same of the layout it prices (one rule)
p = subprocess.run([apsolve, "--db", llama, "--parallel", "dp=2,tp=2,pp=2", "--no-store"],
                   capture_output=True, text=True)
said = [l for l in p.stderr.splitlines() if "priced whole on every device of the tp axis" in l]
assert len(said) == 2 and "3-D stage 0: 112 of its 113 weight matrices" in said[0], p.stderr
again = solve(llama, "--plan", str(auto["plan_id"]), "--no-store")
again = again.get("plans", [again])[0]
assert again["schedule"] == "interleaved" and abs(again["cost"] - auto["cost"]) < 1e-9

resnet = os.path.join(tmp, "r.db")
notice = run(approf, "sweep", "--db", resnet, "--quiet", "--model", "resnet50",
             "--micro-batches", "16", stderr=True)
# a sweep at one micro-batch size names the option that adds the others
assert "--micro-batch-sizes 256,128,64,32,16 " in notice, notice
assert solve(resnet, "--no-store")["schedule"] == "1f1b"
# the defaults profile the micro-batch sizes that matter, and a newcomer's
# ResNet-50 on 1x8 gets data parallelism: one stage, 8-way, one micro-batch
default = os.path.join(tmp, "rd.db")
said = run(approf, "sweep", "--db", default, "--quiet", "--model", "resnet50", "--resume",
           stderr=True)
assert "one sweep per micro-batch size that matters for the global batch 256: " \
       "256,128,64,32,16" in said, said
assert said.count("no CUDA device") <= 1, said
# the notices are said once for all the sweeps
assert said.count("out of memory in Alpa's plain space") <= 1, said
p = subprocess.run([apsolve, "--db", default, "--no-store"], capture_output=True, text=True)
assert "nan" not in p.stderr and p.stderr.count("micro-batch size ") == 5, p.stderr
# one data-parallel stage that fits with room: no note about the plain space
assert "plain space only" not in p.stderr, p.stderr
# a pipeline from the plain space: the note names the sweep option that adds the rest
p = subprocess.run([apsolve, "--db", llama, "--no-store"], capture_output=True, text=True)
assert "holds Alpa's plain space only" in p.stderr and "--variants all" in p.stderr, p.stderr
# Llama-3-8B on 1x8 H100 with the defaults only: its state (120 GiB) does
# not fit a device, so the sweep takes the whole space (--variants auto)
# and the plan is the ZeRO/FSDP family's one data-parallel stage, as an
# expert would run it (issue 32)
zdb = os.path.join(tmp, "z.db")
p = subprocess.run([approf, "sweep", "--db", zdb, "--model", "llama", "--preset", "llama-3-8b",
                    "--cluster", "1x8", "--hardware", "h100-sxm", "--backend", "model"],
                   capture_output=True, text=True)
assert p.returncode == 0, p.stderr
assert "the whole search space (--variants all" in p.stderr, p.stderr
z = solve(zdb, "--no-store")
assert len(z["stages"]) == 1 and z["stages"][0]["logical_mesh"] == [8, 1], z["stages"]
assert z["stages"][0]["zero"] >= 1, z["stages"][0]
dp = solve(default, "--no-store")
assert len(dp["stages"]) == 1 and dp["stages"][0]["logical_mesh"] == [8, 1], dp["stages"]
assert dp["micro_batches"] == 1 and dp["stages"][0]["options"] == \
       {"force_batch_dim_to_mesh_dim": 0}, dp
# --global-batch picks the family's sweep whose size divides it, whichever
# sweep is newest (here 256, which 128 does not divide)
fam = os.path.join(tmp, "fam.db")
run(approf, "sweep", "--db", fam, "--quiet", "--model", "resnet50", "--layers", "4",
    "--micro-batch-sizes", "16,256")
again = run(approf, "sweep", "--db", fam, "--quiet", "--model", "resnet50", "--layers", "4",
            "--micro-batches", "1", stderr=True)
assert "sweep 2 with these inputs is already complete in this database; this adds another " \
       "(--resume reuses it)" in again, again
half = solve(fam, "--no-store", "--global-batch", "128")
assert half["global_batch"] == 128 and half["micro_batch_size"] == 16, half["micro_batch_size"]
# BERT-large at its 32 samples in 16 micro-batches: dp=8 cannot split 2
bert = os.path.join(tmp, "b.db")
run(approf, "sweep", "--db", bert, "--quiet", "--model", "bert", "--preset", "large",
    "--layers", "4", "--micro-batches", "16")
p = subprocess.run([apsolve, "--db", bert, "--parallel", "dp=8,tp=1,pp=1", "--no-store"],
                   capture_output=True, text=True)
assert p.returncode == 3, p.returncode
assert ("a micro-batch of 2 samples cannot be split 8 ways (dp=8); approf sweep "
        "--micro-batch-sizes 32,16,8") in p.stderr, p.stderr
# with a sweep at micro-batch size 8 in the database too (the newest still
# at 2), a --parallel without mbs= is priced at 8, the one size dp=8
# divides, and says so (docs/solver.md, "--parallel")
for k in ("4", "16"):
    run(approf, "sweep", "--db", bert, "--quiet", "--model", "bert", "--preset", "large",
        "--layers", "4", "--micro-batches", k, stderr=True)
p = subprocess.run([apsolve, "--db", bert, "--parallel", "dp=8,tp=1,pp=1", "--no-store",
                    "--format", "json"], capture_output=True, text=True)
d3 = json.loads(p.stdout)["plans"][0]
assert d3["kind"] == "3d" and d3["micro_batch_size"] == 8 and d3["micro_batches"] == 4, d3
assert d3["stages"][0]["config_index"] >= 0, d3["stages"]
assert ("3-D plan: micro-batch size 8 (4 micro-batches, sweep 2): the only micro-batch size of "
        "this database that dp = 8 divides") in p.stderr, p.stderr
assert "cannot be split" not in p.stderr, p.stderr
# pinned at 2 (--micro-batch-size), the warning names the size the database
# has and the mbs that picks it, not a sweep to run
p = subprocess.run([apsolve, "--db", bert, "--parallel", "dp=8,tp=1,pp=1", "--no-store",
                    "--micro-batch-size", "2"], capture_output=True, text=True)
assert ("a micro-batch of 2 samples cannot be split 8 ways (dp=8); this database has sweeps "
        "at micro-batch sizes 8, which --parallel's mbs= picks (mbs=1: micro-batch size 8)") \
       in p.stderr, p.stderr
p = subprocess.run([apsolve, "--db", bert, "--parallel", "dp=1,tp=8,pp=1,recompute=full",
                    "--no-store"], capture_output=True, text=True)
assert "the sweep did not profile this variant (approf sweep --variants all" in p.stderr, p.stderr
print("defaults: ok")
