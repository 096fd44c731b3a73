#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Context parallelism of a --parallel plan (solver/context_parallel.c,
docs/context-parallel.md), checked by hand on Llama-3-8B's shape with two
blocks at sequence 4096 on 1x2 A100-40GB, global batch 8:

- cp=2 (dp=1) runs on the entry of dp=2 at the sweep of micro-batch 2: per
  micro-batch its forward and backward times are half that entry's plus the
  ring's send-recvs of one GPU's K and V (2048 tokens x 2 x 1024 x 2 bytes
  = 8 MiB per block: one per block forward, two backward), each priced as
  costdb/collective.c prices a send-recv on the intra-host link; twice the
  micro-batches (8 of 4 samples... of 1 sample each, dp 1);
- its memory need is the dp=2 plan's less half the saved activations
  (intermediate), less what halving each phase's activation-sized
  transient takes off the larger phase peak, plus the ring's receive
  buffers (4 x K/V);
- the gradient all-reduce (apply) is the dp=2 entry's (dp x cp = 2);
- a2a prices all-to-alls instead, all_gather all-gathers and
  reduce-scatters; the stored plan records cp, and apreport's
  headline says "cp 2";
- refusals: a sequence 2 x cp does not divide, a2a with heads per tp rank
  cp does not divide (6 heads, tp=2, cp=2; llama-3-8b's run), a model
  without attention,
  cp_comm without cp, a cluster dp x tp x pp x cp does not fill.

Usage: context_parallel.py APPROF APSOLVE APREPORT
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile


def run(cmd, rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit("FAIL: %s exited %d (not %d)\n%s%s" % (" ".join(cmd), p.returncode, rc,
                                                        p.stdout, p.stderr))
    return p.stdout + p.stderr


def plan(apsolve, db, par, *extra):
    out = run([apsolve, "--db", db, "--no-store", "--format", "json", "--quiet",
               "--micro-batch-size", "2", "--parallel", par] + list(extra))
    return json.loads(out)["plans"][0]


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def main():
    approf, apsolve, apreport = sys.argv[1:4]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "llama.db")
        run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
             "--num-layers", "2", "--layers", "2", "--seq-len", "4096", "--cluster", "1x2",
             "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2,4"])
        dp2 = plan(apsolve, db, "dp=2,tp=1,pp=1")
        cp2 = plan(apsolve, db, "dp=1,tp=1,pp=1,cp=2")
        a2a = plan(apsolve, db, "dp=1,tp=1,pp=1,cp=2,cp_comm=a2a")
        con = sqlite3.connect(db)
        bw, lat, caps = con.execute("SELECT intra_host_bandwidth, intra_host_latency, "
                                    "capabilities FROM hardware").fetchone()
        eff = json.loads(caps).get("bus_efficiency", 0) or 1.0
        s0 = dp2["stages"][0]
        inter = con.execute("SELECT max(intermediate_size) FROM stage_profile p JOIN sweep s "
                            "ON s.id = p.sweep_id WHERE s.global_batch / s.micro_batches = 2 "
                            "AND start_layer = 0 AND end_layer = 1 AND submesh_index = ? AND "
                            "config_index = ?", (s0["submesh_index"], s0["config_index"])
                            ).fetchone()[0]
        # each phase's peak and the activation-sized part of its transient
        # (schema 17): a cp GPU holds 1/cp of that part (solver/cp_memory.c,
        # docs/context-parallel.md "The transient's activation-sized part")
        phases = con.execute("SELECT e.phase, c.peak_memory, c.temp_activation_size FROM "
                             "stage_entry e JOIN stage_cost c ON c.sweep_id = e.sweep_id AND "
                             "c.cost_id = e.cost_id JOIN sweep s ON s.id = e.sweep_id WHERE "
                             "s.global_batch / s.micro_batches = 2 AND e.start_layer = 0 AND "
                             "e.end_layer = 1 AND e.submesh_index = ? AND e.config_index = ?",
                             (s0["submesh_index"], s0["config_index"])).fetchall()
        con.close()
        peaks = [pk for _, pk, _ in phases]
        cut_peaks = [pk - ((a or 0) - ((a or 0) + 1) // 2) for _, pk, a in phases]
        transient_cut = max(peaks) - max(cut_peaks) if phases else 0
        if len(phases) != 2 or not any(a for _, _, a in phases):
            fails.append("the dp=2 entry's phases: %r (two, with an activation-sized "
                         "transient)" % (phases,))
        # one GPU's K + V of one block: mbs 1 x 4096 / 2 tokens x (K, V) x 8 heads x 128 x bf16
        kv = 1 * 4096 // 2 * 2 * 1024 * 2
        t = kv / (bw * eff) + lat
        c = cp2["stages"][0]
        want_fwd = s0["fwd_cost"] / 2 + 2 * 1 * t
        want_bwd = s0["bwd_cost"] / 2 + 2 * 2 * t
        if not (close(c["fwd_cost"], want_fwd) and close(c["bwd_cost"], want_bwd)):
            fails.append("cp=2 stage: fwd %r bwd %r, by hand %r %r" % (
                c["fwd_cost"], c["bwd_cost"], want_fwd, want_bwd))
        if cp2["micro_batches"] != 2 * dp2["micro_batches"]:
            fails.append("cp=2: %d micro-batches, not 2 x %d" % (cp2["micro_batches"],
                                                                  dp2["micro_batches"]))
        want_need = (s0["memory_needed"] - (inter - (inter + 1) // 2) - transient_cut
                     + 4 * kv)
        if c["memory_needed"] != want_need or not inter:
            fails.append("cp=2 memory need %d, by hand %d (intermediate %d)" % (
                c["memory_needed"], want_need, inter))
        if not close(c["apply_cost"], s0["apply_cost"]):
            fails.append("cp=2 apply %r is not the dp x cp entry's %r" % (c["apply_cost"],
                                                                          s0["apply_cost"]))
        # Ulysses: one all-to-all each for Q (4096 wide), K, V and the output,
        # both directions; the formula's bytes are the whole tensor (2 GPUs' shares)
        q = 1 * 4096 // 2 * 4096 * 2
        ta = 2 * ((2 - 1) / 4 * (2 * q) / (bw * eff) + lat) + 2 * ((2 - 1) / 4 * kv / (bw * eff)
                                                                 + lat)
        ca = a2a["stages"][0]
        if not close(ca["fwd_cost"], s0["fwd_cost"] / 2 + 2 * ta):
            fails.append("cp=2 a2a fwd %r, by hand %r" % (ca["fwd_cost"],
                                                           s0["fwd_cost"] / 2 + 2 * ta))
        # all_gather (Transformer Engine's AttnFuncWithCPAndKVAllGather):
        # per block the forward all-gathers K and V, the backward gathers
        # them again and reduce-scatters their gradients (an all-gather and
        # a reduce-scatter of equal bytes cost alike), so the backward adds
        # twice the forward; its buffers, the gathered K, V and their full
        # gradients (2 x cp x K/V), are the ring's 4 x K/V at cp 2
        ag = plan(apsolve, db, "dp=1,tp=1,pp=1,cp=2,cp_comm=all_gather")
        cg = ag["stages"][0]
        dfw, dbw = cg["fwd_cost"] - s0["fwd_cost"] / 2, cg["bwd_cost"] - s0["bwd_cost"] / 2
        if not (dfw > 0 and close(dbw, 2 * dfw) and not close(dfw, 2 * 1 * t)):
            fails.append("cp=2 all_gather: fwd +%r bwd +%r (the ring's fwd +%r)" % (
                dfw, dbw, 2 * t))
        if cg["memory_needed"] != c["memory_needed"]:
            fails.append("cp=2 all_gather memory %d, not the ring's %d at cp 2" % (
                cg["memory_needed"], c["memory_needed"]))
        if ag.get("frameworks", {}).get("runs") != ["megatron", "torchtitan"]:
            fails.append("cp=2 all_gather frameworks: %r" % ag.get("frameworks"))
        # which frameworks run it as priced: not DeepSpeed (no cp in its
        # config), torchtitan only the ring
        if cp2.get("frameworks", {}).get("runs") != ["megatron", "torchtitan"]:
            fails.append("cp=2 p2p frameworks: %r" % cp2.get("frameworks"))
        if a2a.get("frameworks", {}).get("runs") != ["megatron"]:
            fails.append("cp=2 a2a frameworks: %r" % a2a.get("frameworks"))
        # stored: the options and apreport's headline
        out = run([apsolve, "--db", db, "--quiet", "--micro-batch-size", "2", "--parallel",
                   "dp=1,tp=1,pp=1,cp=2"])
        con = sqlite3.connect(db)
        pid, opts = con.execute("SELECT id, options FROM plan ORDER BY id DESC LIMIT 1").fetchone()
        con.close()
        par = json.loads(opts).get("parallel", {})
        if par.get("cp") != 2 or par.get("cp_comm") != "p2p":
            fails.append("stored options lack cp 2 p2p: " + opts)
        # --plan re-prices it through the cp step, to the same figures
        again = json.loads(run([apsolve, "--db", db, "--quiet", "--plan", str(pid),
                                "--format", "json"]))
        if (not close(again["total_cost"], cp2["total_cost"]) or
                [x["memory_needed"] for x in again["stages"]] !=
                [x["memory_needed"] for x in cp2["stages"]]):
            fails.append("--plan of a cp plan: %r, not %r" % (again, cp2))
        rep = os.path.join(tmp, "rep")
        run([apreport, "--db", db, "--plan", str(pid), "--out", rep, "--quiet"])
        with open(os.path.join(rep, "report.json")) as f:
            text = f.read()
        if "cp 2" not in text:
            fails.append("report.json's layout does not say cp 2")
        out = run([apsolve, "--db", db, "--quiet", "--micro-batch-size", "2", "--parallel",
                   "dp=1,tp=1,pp=1,cp=2,cp_comm=a2a"])
        con = sqlite3.connect(db)
        pid2 = con.execute("SELECT max(id) FROM plan").fetchone()[0]
        con.close()
        rep2 = os.path.join(tmp, "rep2")
        run([apreport, "--db", db, "--plan", str(pid2), "--out", rep2, "--quiet"])
        with open(os.path.join(rep2, "plan%d_torchtitan.toml" % pid2)) as f:
            tt = f.read()
        if "torchtitan's context parallelism is ring attention" not in tt or \
                "context_parallel_degree = 2" not in tt:
            fails.append("a2a plan's torchtitan file does not say it runs the ring:\n" + tt)
        # one figure everywhere: a 2-stage cp plan (each stage keeps more than
        # one micro-batch in flight) has the same memory need in apsolve's
        # output and apreport's report.json
        four = os.path.join(tmp, "four.db")
        run([approf, "sweep", "--db", four, "--quiet", "--model", "llama", "--preset",
             "llama-3-8b", "--num-layers", "2", "--layers", "2", "--seq-len", "4096",
             "--cluster", "1x4", "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2"])
        out = run([apsolve, "--db", four, "--quiet", "--format", "json", "--parallel",
                   "dp=1,tp=1,pp=2,cp=2"])
        pl = json.loads(out)["plans"][0]
        rep4 = os.path.join(tmp, "rep4")
        run([apreport, "--db", four, "--plan", str(pl["plan_id"]), "--out", rep4, "--quiet"])
        with open(os.path.join(rep4, "report.json")) as f:
            rj = json.load(f)
        got = [st["memory_needed"] for st in rj["stages"]]
        want = [st["memory_needed"] for st in pl["stages"]]
        if got != want or pl["stages"][0]["in_flight"] < 2:
            fails.append("2-stage cp plan: apreport's memory %r, apsolve's %r" % (got, want))
        # what each stage adds, said: 2 blocks x 8 MiB forward, x 16 backward
        out = run([apsolve, "--db", db, "--no-store", "--micro-batch-size", "2", "--parallel",
                   "dp=1,tp=1,pp=1,cp=2"])
        if "2 attention layers; per micro-batch and GPU the p2p sends 16.0 MiB forward and " \
                "32.0 MiB backward" not in out or "receive buffers 32.0 MiB" not in out:
            fails.append("cp=2: the stage notice:\n" + out)
        # refusals
        for par_text, says in [
                ("dp=1,tp=1,pp=1,cp=2,cp_comm=ring", "cp_comm must be p2p, a2a, a2a+p2p or all_gather"),
                ("dp=2,tp=1,pp=1,cp_comm=a2a", "cp_comm needs context parallelism"),
                ("dp=2,tp=1,pp=1,cp=2", "dp x tp x pp x cp must be 2")]:
            out = run([apsolve, "--db", db, "--no-store", "--micro-batch-size", "2",
                       "--parallel", par_text], rc=2)
            if says not in out:
                fails.append("%s: %s" % (par_text, out))
        odd = os.path.join(tmp, "odd.db")
        run([approf, "sweep", "--db", odd, "--quiet", "--model", "llama", "--preset",
             "llama-3-8b", "--num-layers", "2", "--layers", "2", "--seq-len", "4094",
             "--cluster", "1x2", "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2"])
        out = run([apsolve, "--db", odd, "--no-store", "--parallel", "dp=1,tp=1,pp=1,cp=2"], rc=2)
        if "sequence length 4094 does not divide by 2 x cp = 4" not in out:
            fails.append("seq 4094: " + out)
        # Ulysses splits each tp rank's heads over cp: llama-3-8b's 32 query
        # and 8 key/value heads run tp=2, cp=2 (16 and 4 per rank); 6 heads
        # (--heads 6) over tp=2 are 3 per rank, which cp=2 does not divide:
        # refused for a2a, the ring takes them
        run([apsolve, "--db", four, "--no-store", "--parallel", "dp=1,tp=2,pp=1,cp=2,cp_comm=a2a"])
        six = os.path.join(tmp, "six.db")
        run([approf, "sweep", "--db", six, "--quiet", "--model", "llama", "--preset",
             "llama-3-8b", "--num-layers", "2", "--layers", "2", "--hidden", "384", "--heads", "6",
             "--seq-len", "4096", "--cluster", "1x4", "--hardware", "a100-40g", "--backend",
             "model", "--batch", "8", "--micro-batch-sizes", "2"])
        out = run([apsolve, "--db", six, "--no-store", "--parallel",
                   "dp=1,tp=2,pp=1,cp=2,cp_comm=a2a"], rc=2)
        if "the model's 6 query heads over tp = 2 are 3 per rank, which 2 does not divide" \
                not in out:
            fails.append("6 heads, tp=2, cp=2, a2a: " + out)
        run([apsolve, "--db", six, "--no-store", "--parallel", "dp=1,tp=2,pp=1,cp=2"])
        mlp = os.path.join(tmp, "mlp.db")
        run([approf, "sweep", "--db", mlp, "--quiet", "--model", "resnet50", "--cluster", "1x2",
             "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2"])
        out = run([apsolve, "--db", mlp, "--no-store", "--parallel", "dp=1,tp=1,pp=1,cp=2"], rc=2)
        if "no stage of the plan holds an attention layer" not in out:
            fails.append("resnet50: " + out)
    for f in fails:
        print("FAIL:", f)
    if fails:
        sys.exit(1)
    print("ok: cp=2 ring and a2a by hand, memory, apply, stored options, refusals")


if __name__ == "__main__":
    main()
