#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A cp plan whose global batch has fewer sequences than its dp x cp twin's
micro-batch (solver/session_cp.c, apsolve_cp_micro_batches;
docs/context-parallel.md,
"A global batch of fewer sequences than the twin's micro-batch"), on
Llama-3-8B's shape with two blocks at sequence 4096 on 1x2 A100-40GB:

- a cp=2 plan of dp=1, mbs=1 runs G micro-batches of one sequence split
  over its 2 GPUs (Megatron: G / (mbs x dp)); its twin (dp=2, the batch on
  axis 0) is swept at micro-batch 2, at a global batch of 2, beside the
  run's own sweep at G. At G=1 and G=3 (before: refused, fewer than cp x
  whole twin micro-batches) it is priced with the same per-micro-batch
  stage figures as at G=2 (whole twin micro-batches, as before), the
  same ones a twin swept at global batch 8 gives, and G stage costs;
- the stored plan re-prices (--plan) to the same figures;
- the auto search tries such cp plans and takes one where it pays, and
  its stored plan re-prices too; so does --framework torchtitan;
- what still cannot be priced is refused naming why: a global batch not
  whole micro-batches of mbs x dp, a database with only the twin sweep
  (the hint names the sweep to add);
- apreport's launch files of the G=1 plan pass the manifests' checks;
  DeepSpeed's, which has no cp, runs one step of the dp x cp twin at a
  global batch of 2 and says so (reports/launch.c).

Usage: cp_batch.py APPROF APSOLVE [APREPORT MANIFESTS CHECK_LAUNCH]
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

MODEL = ["--model", "llama", "--preset", "llama-3-8b", "--num-layers", "2", "--layers", "2",
         "--seq-len", "4096", "--cluster", "1x2", "--hardware", "a100-40g", "--backend",
         "model", "--quiet"]
CP2 = "dp=1,tp=1,pp=1,cp=2,mbs=1"


def run(cmd, rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit("FAIL: %s exited %d (not %d)\n%s%s" % (" ".join(cmd), p.returncode, rc,
                                                        p.stdout, p.stderr))
    return p.stdout, p.stderr


def first_plan(out):
    d = json.loads(out)
    return d["plans"][0] if "plans" in d else d


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def stage_figs(pl):
    return [(s["fwd_cost"], s["bwd_cost"], s["apply_cost"], s["memory_needed"])
            for s in pl["stages"]]


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "b.db")          # the twin at batch 2, the run's sweep at 1
        big = os.path.join(tmp, "big.db")       # the twin at batch 8
        only = os.path.join(tmp, "only.db")     # the twin alone
        run([approf, "sweep", "--db", db] + MODEL + ["--batch", "2", "--micro-batches", "1"])
        run([approf, "sweep", "--db", db] + MODEL + ["--batch", "1", "--micro-batches", "1"])
        run([approf, "sweep", "--db", big] + MODEL + ["--batch", "8",
                                                      "--micro-batch-sizes", "2"])
        run([approf, "sweep", "--db", only] + MODEL + ["--batch", "2", "--micro-batches", "1"])

        def price(path, G, par=CP2, *extra):
            out, err = run([apsolve, "--db", path, "--no-store", "--format", "json",
                            "--global-batch", str(G), "--parallel", par] + list(extra))
            return first_plan(out), err

        whole, _ = price(db, 2)                  # one twin micro-batch: priced before
        at8, _ = price(big, 2)
        if stage_figs(whole) != stage_figs(at8):
            fails.append("the twin's figures depend on its sweep's batch: %r vs %r" % (
                stage_figs(whole), stage_figs(at8)))
        if whole["micro_batches"] != 2:
            fails.append("G=2: %d micro-batches, not 2" % whole["micro_batches"])
        for G in (1, 3):
            pl, err = price(db, G)
            if pl["micro_batches"] != G or pl["global_batch"] != G or pl.get("cp") != 2:
                fails.append("G=%d: %d micro-batches, global batch %r, cp %r" % (
                    G, pl["micro_batches"], pl["global_batch"], pl.get("cp")))
            if stage_figs(pl) != stage_figs(whole):
                fails.append("G=%d: stage figures %r, not G=2's %r" % (G, stage_figs(pl),
                                                                      stage_figs(whole)))
            st = pl["stages"][0]["cost"]
            if not close(pl["cost"], G * st):
                fails.append("G=%d: T %r, not %d x the stage's %r" % (G, pl["cost"], G, st))
            if "not whole micro-batches of the dp x cp twin" not in err:
                fails.append("G=%d: no notice of the twin apart: %s" % (G, err))
        # stored and re-priced
        run([apsolve, "--db", db, "--quiet", "--global-batch", "1", "--parallel", CP2])
        con = sqlite3.connect(db)
        pid, mb, gb = con.execute("SELECT id, micro_batches, global_batch FROM plan "
                                  "ORDER BY id DESC LIMIT 1").fetchone()
        pid_par = pid
        con.close()
        one, _ = price(db, 1)
        again = first_plan(run([apsolve, "--db", db, "--quiet", "--format", "json",
                                "--plan", str(pid)])[0])
        if (mb, gb) != (1, 1) or not close(again["total_cost"], one["total_cost"]) or \
                stage_figs(again) != stage_figs(one) or again["global_batch"] != 1:
            fails.append("--plan %d (stored %d x, G %d): %r %r, not %r %r" % (
                pid, mb, gb, again["total_cost"], stage_figs(again), one["total_cost"],
                stage_figs(one)))
        # the auto search at G=1 tries cp 2 on the twin's sweep
        out, err = run([apsolve, "--db", db, "--format", "json", "--global-batch", "1"])
        auto = first_plan(out)
        if auto.get("cp") != 2 or auto["micro_batches"] != 1 or \
                "cp=2 on micro-batch size 2" not in err:
            fails.append("auto at G=1: cp %r, %d micro-batches: %s" % (
                auto.get("cp"), auto["micro_batches"], err))
        con = sqlite3.connect(db)
        pid = con.execute("SELECT id FROM plan WHERE kind = 'auto' ORDER BY id DESC "
                          "LIMIT 1").fetchone()[0]
        con.close()
        again = first_plan(run([apsolve, "--db", db, "--quiet", "--format", "json",
                                "--plan", str(pid)])[0])
        if not close(again["total_cost"], auto["total_cost"]) or \
                stage_figs(again) != stage_figs(auto):
            fails.append("auto plan %d re-priced %r, stored %r" % (pid, again["total_cost"],
                                                                  auto["total_cost"]))
        # apreport's launch files of the stored G=1 plan
        if len(sys.argv) > 5:
            apreport, manifests, check = sys.argv[3:6]
            out_dir = os.path.join(tmp, "rep")
            run([apreport, "--db", db, "--plan", str(pid_par), "--out", out_dir])
            for mf, name in (("deepspeed-v0.16.4.json", "deepspeed.json"),
                             ("megatron-lm-core_v0.19.0.json", "megatron.args"),
                             ("torchtitan-v0.2.2.json", "torchtitan.toml")):
                f = os.path.join(out_dir, "plan%d_%s" % (pid_par, name))
                p = subprocess.run([sys.executable, check, os.path.join(manifests, mf), f],
                                   capture_output=True, text=True)
                # 3: no errors, values it cannot know (a 2-block model has
                # no torchtitan flavour)
                if p.returncode not in (0, 3):
                    fails.append("%s: check_launch exit %d: %s" % (name, p.returncode,
                                                                  p.stdout + p.stderr))
            ds = json.load(open(os.path.join(out_dir, "plan%d_deepspeed.json" % pid_par)))
            if (ds["train_batch_size"], ds["train_micro_batch_size_per_gpu"],
                    ds["gradient_accumulation_steps"]) != (2, 1, 1) or \
                    not any("global batch of 2, not 1" in x for x in ds["_comment"]):
                fails.append("DeepSpeed's closest plan: %r" % ds)
        # --framework torchtitan at G=1: the twin's sweep holds its cp layouts
        out, err = run([apsolve, "--db", db, "--no-store", "--format", "json",
                        "--framework", "torchtitan", "--global-batch", "1"])
        fw = first_plan(out)
        if fw.get("cp") != 2 or fw["micro_batches"] != 1 or fw["global_batch"] != 1:
            fails.append("--framework torchtitan at G=1: cp %r, %d micro-batches: %s" % (
                fw.get("cp"), fw["micro_batches"], err))
        # refusals: not whole micro-batches of mbs x dp; only the twin swept
        run([approf, "sweep", "--db", db] + MODEL + ["--batch", "4", "--micro-batches", "1"])
        _, err = run([apsolve, "--db", db, "--no-store", "--global-batch", "3", "--parallel",
                      "dp=1,tp=1,pp=1,cp=2,mbs=2"], rc=2)
        if "not a multiple of mbs x dp = 2" not in err:
            fails.append("G=3 at mbs=2: %s" % err)
        _, err = run([apsolve, "--db", only, "--no-store", "--global-batch", "1", "--parallel",
                      CP2], rc=2)
        if "approf sweep --batch 1" not in err:
            fails.append("only the twin swept: %s" % err)
    for f in fails:
        print("FAIL: " + f)
    if fails:
        sys.exit(1)
    print("ok: cp plans at global batches of fewer sequences than the twin's micro-batch")


if __name__ == "__main__":
    main()
