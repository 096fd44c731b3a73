#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A --parallel plan with tp > 1 is priced with the layout tensor parallelism
runs (solver/tp_layout.c): on a sweep that profiled the memory levels
(--variants all), apsolve --parallel dp=2,tp=4,pp=2 picks per stage the
level whose placements split every weight matrix over the tp axis, says
nothing about weights kept whole, and apreport's report.json holds each
weight matrix at a quarter (or less) per device. On a sweep of the default
variants, where no such level exists, apsolve warns and names the sweep
option that adds it, and the Megatron file says Megatron cannot run the plan
as priced (reports/launch.c).

Usage: tp_layout.py APPROF APSOLVE APREPORT
"""
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout + p.stderr


def main():
    approf, apsolve, apreport = sys.argv[1:4]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        sweep = ["--model", "llama", "--preset", "llama-3-8b", "--num-layers", "4", "--layers", "4",
                 "--cluster", "2x8", "--hardware", "h100-sxm", "--quiet"]
        full = os.path.join(tmp, "full.db")
        run([approf, "sweep"] + sweep + ["--variants", "all", "--db", full])
        out = run([apsolve, "--db", full, "--parallel", "dp=2,tp=4,pp=2"])
        if "priced whole" in out:
            fails.append("apsolve still prices weights whole on the tp axis:\n" + out)
        rep = os.path.join(tmp, "rep")
        run([apreport, "--db", full, "--plan", "1", "--out", rep])
        with open(os.path.join(rep, "report.json")) as f:
            r = json.load(f)
        weights = 0
        for st in r["stages"]:
            if st["logical_mesh"][1] != 4:
                fails.append("stage %d: logical mesh %s, not (2, 4)" % (st["index"], st["logical_mesh"]))
            for t in st["tensors"]:
                if t["role"] != "param" or len(t["shape"]) < 2:
                    continue
                weights += 1
                if t["local_bytes"] * 4 > t["bytes"]:
                    fails.append("stage %d: %s holds %d of %d bytes per device, more than a quarter"
                                 % (st["index"], t["name"], t["local_bytes"], t["bytes"]))
        if weights == 0:
            fails.append("report.json lists no weight matrix")
        if any("priced whole" in w or "whole on" in w for w in map(str, r.get("warnings", []))):
            fails.append("report.json still warns of whole weights: %s" % r["warnings"])

        plain = os.path.join(tmp, "plain.db")
        run([approf, "sweep"] + sweep + ["--db", plain])
        out = run([apsolve, "--db", plain, "--parallel", "dp=2,tp=4,pp=2"])
        if "priced whole" not in out or "--memory-levels 3" not in out:
            fails.append("without the memory levels apsolve must warn and name --memory-levels 3:"
                         "\n" + out)
        # and the launch files say the framework does not run it as priced
        rep = os.path.join(tmp, "rep-plain")
        run([apreport, "--db", plain, "--out", rep])
        with open(os.path.join(rep, "plan1_megatron.args")) as f:
            args = f.read()
        if "cannot express this plan as priced" not in args or "weight matrices whole" not in args:
            fails.append("the Megatron file of a plan priced with whole weights claims it runs as "
                         "priced:\n" + "\n".join(args.splitlines()[:6]))
    if fails:
        print("FAIL:\n" + "\n".join(fails))
        return 1
    print("ok: %d weight matrices split over the tp axis in report.json" % weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
