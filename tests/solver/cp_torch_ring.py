#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's ring attention through apsolve (solver/cp_torch_ring.c,
docs/context-parallel.md, "PyTorch's ring"): Llama-3-8B's shape (32 query
heads, 8 key/value heads of 128) with two blocks at sequence 8192 on 1x2
H100s, swept once on h100-sxm's spec and once on the same spec with
cp_ring_torch = 1, priced at cp 2 (p2p), recompute none:

- the ring sends K and V at the query heads' width: 4 times the bytes
  forward; backward K and V again and their f32 gradients twice (n = 2),
  1 + 2 x 2 blocks against TE's 2 of the key projection's width: 10 times;
- the cp notice names PyTorch's ring and its merges, the stage costs more
  (the merges, the last gradients' send), and without the field nothing
  of it shows.

Usage: cp_torch_ring.py APPROF APSOLVE
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = run([approf, "hardware", "show", "h100-sxm"]).stdout
        if not re.search(r"^cp_ring_torch = 0$", spec, re.M):
            sys.exit("FAIL: h100-sxm's spec has no cp_ring_torch = 0 line")
        out = {}
        for flag in (0, 1):
            path = os.path.join(tmp, "h100-%d.spec" % flag)
            with open(path, "w") as f:
                f.write(re.sub(r"^cp_ring_torch = 0$", "cp_ring_torch = %d" % flag, spec,
                               flags=re.M))
            db = os.path.join(tmp, "llama-%d.db" % flag)
            run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset",
                 "llama-3-8b", "--num-layers", "2", "--layers", "2", "--seq-len", "8192",
                 "--cluster", "1x2", "--hardware", path, "--backend", "model", "--batch", "4",
                 "--micro-batch-sizes", "2", "--recompute", "none"])
            p = run([apsolve, "--db", db, "--no-store", "--format", "json",
                     "--micro-batch-size", "2", "--parallel",
                     "dp=1,tp=1,pp=1,cp=2,recompute=none"])
            st = json.loads(p.stdout)["plans"][0]["stages"][0]
            m = re.search(r"sends ([0-9.]+) MiB forward and ([0-9.]+) MiB backward", p.stderr)
            if not m:
                sys.exit("FAIL: no cp notice with the ring's bytes:\n" + p.stderr)
            out[flag] = (st, float(m.group(1)), float(m.group(2)), p.stderr)
        (s0, f0, b0, e0), (s1, f1, b1, e1) = out[0], out[1]
        if abs(f1 / f0 - 4) > 1e-6:
            fails.append("forward bytes %g MiB against TE's %g: want 4 times" % (f1, f0))
        if abs(b1 / b0 - 10) > 1e-6:
            fails.append("backward bytes %g MiB against TE's %g: want 10 times" % (b1, b0))
        if "PyTorch's ring (cp_ring_torch)" not in e1:
            fails.append("the notice does not name PyTorch's ring:\n" + e1)
        if "PyTorch's ring" in e0:
            fails.append("without the field the notice names PyTorch's ring:\n" + e0)
        if not (s1["fwd_cost"] > s0["fwd_cost"] and s1["bwd_cost"] > s0["bwd_cost"]):
            fails.append("the stage does not cost more: forward %g against %g, backward %g "
                         "against %g" % (s1["fwd_cost"], s0["fwd_cost"], s1["bwd_cost"],
                                         s0["bwd_cost"]))
    if fails:
        print("\n".join("FAIL: " + f for f in fails))
        sys.exit(1)
    print("ok: forward %g / %g MiB, backward %g / %g MiB; stage %g / %g s" %
          (f1, f0, b1, b0, s1["fwd_cost"] + s1["bwd_cost"], s0["fwd_cost"] + s0["bwd_cost"]))


if __name__ == "__main__":
    main()
