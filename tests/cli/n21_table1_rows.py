#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Narayanan et al. 2021 Table 1 rows as the paper's own script ran them
(docs/validation.md, "N21 Table 1 as its script ran it"): every nar21-t1-*
row of bench/plans_cases.tsv carries the micro-batch size, interleaving
(vpp), gradient synchronisation and DDP copies that
NVIDIA/Megatron-LM examples/sc21/run_table_1.sh @de7dc40f88 sets for its
model size (values below read from that script and megatron/arguments.py,
schedules.py and training.py at the same commit), the paper's layout and
global batch, a measured time that follows from the paper's TFLOP/s by its
equation (3), and an `assumed` column that cites the script's lines. The
spec file plans.sh writes for a torch-DDP row reads ddp_grad_copies and
grad_overlap back in approf.

Usage: n21_table1_rows.py SOURCE_ROOT APPROF
"""
import csv
import os
import subprocess
import sys
import tempfile

root, approf = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "bench"))
import framework_spec  # noqa: E402

# size: (script lines, tp, pp, MBS, GBS, layers, hidden, heads, DDP,
#        nodes, --num-layers-per-virtual-pipeline-stage or None)
SCRIPT = {
    "1.7b": ("14-24", 1, 1, 16, 512, 24, 2304, 24, "torch", 4, None),
    "3.6b": ("25-35", 2, 1, 16, 512, 30, 3072, 32, "torch", 8, None),
    "7.5b": ("36-46", 4, 1, 16, 512, 36, 4096, 32, "torch", 16, None),
    "18b": ("47-57", 8, 1, 8, 1024, 40, 6144, 48, "torch", 32, None),
    "39b": ("58-68", 8, 2, 4, 1536, 48, 8192, 64, "local", 64, None),
    "76b": ("69-79", 8, 4, 2, 1792, 60, 10240, 80, "local", 128, 5),
    "145b": ("80-90", 8, 8, 2, 2304, 80, 12288, 96, "local", 192, 5),
    "310b": ("91-101", 8, 16, 1, 2160, 96, 16384, 128, "local", 240, 3),
    "530b": ("102-112", 8, 35, 1, 2520, 105, 20480, 128, "local", 315, 1),
    "1t": ("113-123", 8, 64, 1, 3072, 128, 25600, 160, "local", 384, None),
}


failures, seen, torch_row = [], set(), None
with open(os.path.join(root, "bench", "plans_cases.tsv")) as f:
    for c in csv.DictReader(f, delimiter="\t"):
        if not c["id"].startswith("nar21-t1-"):
            continue
        size = c["id"][len("nar21-t1-"):]
        if size not in SCRIPT:
            failures.append("%s: not a model size of run_table_1.sh" % c["id"])
            continue
        seen.add(size)
        at, tp, pp, mbs, gbs, nl, hs, nah, ddp, nodes, lpv = SCRIPT[size]
        gpus = nodes * 8
        # vpp as megatron/arguments.py parse_args computes it; 1 without the flag
        vpp = (nl // pp) // lpv if lpv else 1
        want = {"tp": tp, "pp": pp, "mbs": mbs, "global_batch": gbs, "layers": nl,
                "hidden": hs, "heads": nah, "gpus": gpus, "dp": gpus // (tp * pp),
                "vpp": vpp, "seq": 2048, "recompute": "full", "dtype": "f16", "sp": 0,
                "dropout": "0.1",
                "grad_sync": "overlapped" if ddp == "torch" else "after-backward"}
        for k, v in want.items():
            if str(c[k]) != str(v):
                failures.append("%s: %s = %s, the script runs %s" % (c["id"], k, c[k], v))
        fields = framework_spec.spec_fields(c)
        copies = int(fields.get("ddp_grad_copies", "0"))
        if copies != (2 if ddp == "torch" else 0):
            failures.append("%s: ddp_grad_copies = %d with --DDP-impl %s" % (c["id"], copies, ddp))
        # micro-batches a replica: a whole number, and a multiple of pp
        # where interleaved (Megatron's interleaved schedule asserts it)
        m, r = divmod(gbs, mbs * (gpus // (tp * pp)))
        if r or (vpp > 1 and m % pp):
            failures.append("%s: %d / (mbs x dp) micro-batches do not fit the schedule" % (c["id"], gbs))
        # Narayanan et al. 2021 eq. (3): F = 96 B s l h^2 (1 + s/6h + V/16lh)
        s, V = int(c["seq"]), int(c["vocab"])
        F = 96.0 * gbs * s * nl * hs * hs * (1 + s / (6.0 * hs) + V / (16.0 * nl * hs))
        t = F / (gpus * float(c["measured_tflops_gpu"]) * 1e12)
        if abs(t - float(c["measured_s_iter"])) > 0.005 * t:
            failures.append("%s: measured_s_iter %s, eq. (3) gives %.3f" % (c["id"], c["measured_s_iter"], t))
        if "run_table_1.sh @de7dc40f88 lines %s" % at not in c["assumed"]:
            failures.append("%s: assumed does not cite run_table_1.sh lines %s" % (c["id"], at))
        if ddp == "torch" and torch_row is None:
            torch_row = (c, fields)
if seen != set(SCRIPT):
    failures.append("rows for %s, want all of %s" % (sorted(seen), sorted(SCRIPT)))

# the bench's spec file for a torch-DDP row, read back by approf
if torch_row:
    c, fields = torch_row
    fields = dict(framework_spec.overrides(c), **fields)
    with tempfile.TemporaryDirectory() as tmp:
        path = framework_spec.spec_name(tmp, c["hardware"], fields)
        framework_spec.write_spec("n21_table1_rows.py", approf, c["hardware"], fields, path)
        p = subprocess.run([approf, "hardware", "show", path], capture_output=True, text=True)
        shown = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
        v = shown.get("ddp_grad_copies")
        if v is None or int(float(v)) != 2:
            failures.append("%s: the spec file reads ddp_grad_copies back as %s, want 2" % (c["id"], v))
        v = shown.get("grad_overlap")
        if v is None or float(v) == 0:
            failures.append("%s: the spec file prices grad_overlap 0 for a torch-DDP row" % c["id"])

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: %d nar21-t1 rows as examples/sc21/run_table_1.sh @de7dc40f88 ran them" % len(seen))
