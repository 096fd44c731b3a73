#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Context parallelism under recomputation (solver/context_parallel.c,
docs/context-parallel.md, "Recomputation"), checked by hand on
Llama-3-8B's shape (eager attention: selective needs the softmax) with two
blocks at sequence 4096 on 1x2 A100-40GB,
global batch 8, swept with recompute none, selective and full:

- Megatron-Core core_v0.19.0 reruns the attention's forward in the
  backward under full recomputation (transformer_block.py through
  recompute.py checkpointed_forward) and under selective (attention.py
  _checkpointed_attention_forward around core_attention), and with a cp
  group Transformer Engine's attention runs its cp exchange inside that
  forward: the cp stage's backward pays the forward's exchange again;
- so with the ring at cp 2 (one send-recv of one GPU's K and V per block
  forward, two backward) the backward adds 2 + 1 send-recvs per block
  under full and selective, 2 under none; a2a's backward adds twice the
  forward's all-to-alls; all_gather's backward its own plus the forward's;
- apsolve's notice names the rerun's seconds.

Usage: cp_recompute.py APPROF APSOLVE
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "llama.db")
        run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
             "--num-layers", "2", "--layers", "2", "--seq-len", "4096", "--cluster", "1x2",
             "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--attention", "eager",
             "--micro-batch-sizes", "2", "--recompute", "none,selective,full"])
        con = sqlite3.connect(db)
        bw, lat, caps = con.execute("SELECT intra_host_bandwidth, intra_host_latency, "
                                    "capabilities FROM hardware").fetchone()
        con.close()
        eff = json.loads(caps).get("bus_efficiency", 0) or 1.0

        def plan(par):
            p = run([apsolve, "--db", db, "--no-store", "--format", "json",
                     "--micro-batch-size", "2", "--parallel", par])
            return json.loads(p.stdout)["plans"][0]["stages"][0], p.stderr

        # one GPU's K + V of one block: 4096 / 2 tokens x (K, V) x 1024 x bf16;
        # a send-recv of it on the intra-host link
        kv = 4096 // 2 * 2 * 1024 * 2
        t = kv / (bw * eff) + lat
        q = 4096 // 2 * 4096 * 2
        ta = 2 * ((2 - 1) / 4 * (2 * q) / (bw * eff) + lat) + 2 * ((2 - 1) / 4 * kv / (bw * eff)
                                                                 + lat)
        for r in ("none", "selective", "full"):
            s0, _ = plan("dp=2,tp=1,pp=1,recompute=" + r)
            rerun = r != "none"
            for comm, fwd, bwd in (("p2p", 2 * t, 2 * 2 * t), ("a2a", 2 * ta, 2 * ta),
                                   ("all_gather", None, None)):
                st, err = plan("dp=1,tp=1,pp=1,cp=2,recompute=%s,cp_comm=%s" % (r, comm))
                if st["recompute"] != r:
                    fails.append("%s %s: the stage's recompute is %s" % (r, comm,
                                                                          st["recompute"]))
                dfw = st["fwd_cost"] - s0["fwd_cost"] / 2
                dbw = st["bwd_cost"] - s0["bwd_cost"] / 2
                if comm == "all_gather":
                    # backward: K, V gathered again and their gradients
                    # reduce-scattered (twice the forward), + the rerun
                    fwd, bwd = dfw, 2 * dfw
                want = bwd + (fwd if rerun else 0)
                if not (dfw > 0 and close(dfw, fwd) and close(dbw, want)):
                    fails.append("recompute=%s cp_comm=%s: fwd +%r bwd +%r, by hand +%r +%r" % (
                        r, comm, dfw, dbw, fwd, want))
                said = re.findall(r"of it ([0-9.e+-]+) s the forward's exchange that (\w+) "
                                  r"recomputation reruns", err)
                if (rerun and (len(said) != 1 or said[0][1] != r or
                               not close(float(said[0][0]), fwd, 1e-5))) or \
                        (not rerun and said):
                    fails.append("recompute=%s cp_comm=%s: the notice names the rerun %r "
                                 "(by hand %r s):\n%s" % (r, comm, said, fwd if rerun else 0,
                                                           err))
                if comm == "p2p":
                    print("recompute=%s p2p cp=2: +%.6g s forward, +%.6g s backward (by hand: "
                          "send-recv %.6g s)" % (r, dfw, dbw, t))
    if fails:
        sys.exit("FAIL:\n" + "\n".join(fails))
    print("ok")


main()
