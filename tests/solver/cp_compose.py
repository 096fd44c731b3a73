#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The activation-sized transient of entries composed from single layers
(profile mode individual; profiler/sweep/compose.c, docs/context-parallel.md,
"The transient's activation-sized part"), on Llama-3-8B's shape with two
blocks at sequence 8192 on 1x2 A100-40GB, global batch 8, ZeRO 0 and 3:

- every row of both sweeps keeps schema 17's CHECK (NULL or
  0 < temp_activation_size <= temp_buffer_size);
- the composed range's activation-sized part is, per phase, the largest of
  its layers' (as its temp_buffer_size is the largest of theirs);
- a cp=2 plan priced from the individual-mode sweep cuts as much memory
  against its column NULL as the same plan from the composition-mode sweep
  (here the range's part is its largest layer's: equal); before, the
  composed rows were NULL and cut nothing.

Usage: cp_compose.py APPROF APSOLVE
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


ROWS = ("SELECT e.start_layer, e.end_layer, e.submesh_index, e.config_index, e.phase,"
        " c.temp_buffer_size, c.temp_activation_size FROM stage_entry e JOIN stage_cost c"
        " ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id")


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        moved = {}
        for mode in ("composition", "individual"):
            db = os.path.join(tmp, mode + ".db")
            old = os.path.join(tmp, mode + "-null.db")
            run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset",
                 "llama-3-8b", "--num-layers", "2", "--layers", "2", "--seq-len", "8192",
                 "--cluster", "1x2", "--hardware", "a100-40g", "--backend", "model", "--batch",
                 "8", "--micro-batch-sizes", "2", "--zero", "0,3", "--recompute", "none",
                 "--profile-mode", mode])
            con = sqlite3.connect(db)
            rows = con.execute(ROWS).fetchall()
            con.close()
            bad = [r for r in rows if r[6] is not None and not 0 < r[6] <= r[5]]
            if bad:
                fails.append("%s: rows outside schema 17's CHECK: %r" % (mode, bad))
            if mode == "individual":
                single = {(r[0], r[2], r[3], r[4]): (r[5], r[6] or 0) for r in rows
                          if r[0] == r[1]}
                for r in rows:
                    if r[0] == r[1]:
                        continue
                    layers = [single[(l, r[2], r[3], r[4])] for l in range(r[0], r[1] + 1)]
                    want = max(a for _, a in layers) or None
                    if r[6] != want or r[5] != max(t for t, _ in layers):
                        fails.append("composed %r: temp_activation_size %r, the largest of "
                                     "its layers' %r" % (r[:5], r[6], want))
            shutil.copy(db, old)
            con = sqlite3.connect(old)
            con.execute("UPDATE stage_cost SET temp_activation_size = NULL")
            con.commit()
            con.close()

            def mem(path):
                p = run([apsolve, "--db", path, "--no-store", "--format", "json", "--quiet",
                         "--micro-batch-size", "2", "--parallel", "dp=1,tp=1,pp=1,cp=2,zero=3"])
                return json.loads(p.stdout)["plans"][0]["stages"][0]["memory_needed"]

            moved[mode] = mem(old) - mem(db)
        if not 0 < moved["individual"] == moved["composition"]:
            fails.append("cp=2: the activation-sized transient cuts %d bytes from the "
                         "individual-mode sweep's plan, %d from the composition-mode one's"
                         % (moved["individual"], moved["composition"]))
        else:
            print("cp=2: both sweeps' plans %d B below the whole transient's" % moved["individual"])
    if fails:
        sys.exit("FAIL:\n" + "\n".join(fails))
    print("ok")


main()
