#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cp stage's transient memory (solver/cp_memory.c, docs/context-parallel.md,
"The transient's activation-sized part"), on Llama-3-8B's shape with two
blocks at sequence 8192 on 1x2 A100-40GB, global batch 8, ZeRO-3:

- the sweep stores each phase's activation-sized transient
  (stage_cost.temp_activation_size, schema 17) below its temp_buffer_size:
  the rest, ZeRO-3's gathered blocks and the largest fresh parameter
  gradient, is weight-sized;
- the cp=2 stage's peak is its twin's (dp=2) less half the saved
  activations and, per phase, half the activation-sized transient (rounded
  up), the entry's peak its larger phase's: the weight-sized part is not
  divided (dividing the whole transient would cut more);
- with the column NULL (a file before schema 17) the transient is not
  divided, as before; a plan without cp is the same either way.

Usage: cp_transient.py APPROF APSOLVE
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


def up(a, n):
    return (a + n - 1) // n


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "llama.db")
        old = os.path.join(tmp, "old.db")
        run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
             "--num-layers", "2", "--layers", "2", "--seq-len", "8192", "--cluster", "1x2",
             "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2", "--zero", "0,3", "--recompute", "none"])

        def plan(path, par):
            p = run([apsolve, "--db", path, "--no-store", "--format", "json", "--quiet",
                     "--micro-batch-size", "2", "--parallel", par])
            out = json.loads(p.stdout)
            for pl in out["plans"]:
                pl.pop("solve_seconds", None)
            return out

        cp = plan(db, "dp=1,tp=1,pp=1,cp=2,zero=3")["plans"][0]["stages"][0]
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT e.phase, c.peak_memory, c.temp_buffer_size, c.temp_activation_size,"
            " c.intermediate_size FROM stage_entry e JOIN stage_cost c ON c.sweep_id ="
            " e.sweep_id AND c.cost_id = e.cost_id WHERE e.start_layer = 0 AND e.end_layer = 1"
            " AND e.submesh_index = ? AND e.config_index = ? ORDER BY e.phase",
            (cp["submesh_index"], cp["config_index"])).fetchall()
        con.close()
        if len(rows) != 2:
            sys.exit("FAIL: the twin's entry has %d phases" % len(rows))
        for ph, peak, temp, act, inter in rows:
            if not act or not 0 < act < temp:
                fails.append("phase %d: temp_activation_size %r of temp_buffer_size %d "
                             "(ZeRO-3: a weight-sized part)" % (ph, act, temp))
        if fails:
            sys.exit("FAIL:\n" + "\n".join(fails))
        before = max(r[1] for r in rows)
        after = max(peak - (act - up(act, 2)) for _, peak, _, act, _ in rows)
        cut = before - after
        whole = max(temp - up(temp, 2) for _, _, temp, _, _ in rows)
        shutil.copy(db, old)
        con = sqlite3.connect(old)
        con.execute("UPDATE stage_cost SET temp_activation_size = NULL")
        con.commit()
        con.close()
        cp_old = plan(old, "dp=1,tp=1,pp=1,cp=2,zero=3")["plans"][0]["stages"][0]
        moved = cp_old["memory_needed"] - cp["memory_needed"]
        if moved != cut or not 0 < cut < whole:
            fails.append("cp=2: memory %d, %d with no activation-sized part known: %d less, "
                         "by hand %d (the whole transient halved: %d)" % (
                             cp["memory_needed"], cp_old["memory_needed"], moved, cut, whole))
        else:
            print("cp=2: memory %d B, %d B less than with the transient whole (by hand %d; "
                  "halving the whole transient would cut %d)" % (cp["memory_needed"], moved,
                                                                 cut, whole))
        for par in ("dp=2,tp=1,pp=1,zero=3", "dp=2,tp=1,pp=1", "dp=1,tp=2,pp=1"):
            if plan(db, par) != plan(old, par):
                fails.append("%s: the plan without cp moved with the column" % par)
    if fails:
        sys.exit("FAIL:\n" + "\n".join(fails))
    print("ok")


main()
