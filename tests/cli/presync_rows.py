#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gradient buffer's passes around the data-parallel reduction, row by
row (docs/validation.md, "The gradient buffer's passes, by the version each
Megatron run used"): every Megatron-LM, Megatron-Core, NeMo and
Megatron-Bridge row of bench/plans_cases.tsv carries grad_presync_passes
as its framework's code ran them at the version of the run, by one rule
below; no other row sets the field. The spec file plans.sh writes for one
row of each nonzero kind reads the figure back in approf.

Usage: presync_rows.py SOURCE_ROOT APPROF
"""
import csv
import os
import subprocess
import sys
import tempfile

root, approf = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "bench"))
import framework_spec  # noqa: E402


def mcore(check_for_nan, average_in_collective, moe):
    """Megatron-Core's start_grad_sync (param_and_grad_buffer.py at
    core_r0.8.0, core_r0.11.0, core_r0.12.0 and 92c8482e6d): the bucket's
    norm with check_for_nan_in_grad (a read), grad_data *= factor where the
    factor is not 1 (a read and a write): 1/dp without
    average_in_collective; with it 1 for dense buffers and not 1 for expert
    ones (1/ep at r0.11, edp/dp after), so MoE rows scale."""
    return (1 if check_for_nan else 0) + (2 if (not average_in_collective or moe) else 0)


# Megatron-LM 2021 (6fd781891c) DistributedDataParallel.allreduce_gradients
# without contiguous buffers: flatten (read + write), /= dp (read + write),
# copy back (read + write). PyTorch DDP divides inside its bucket copy.
# Megatron-LM 2022 (2e90a342f5), contiguous buffers by default: /= dp.
LOCAL_DDP_2021, TORCH_DDP, LOCAL_DDP_2022 = 6, 0, 2
# examples/sc21/run_table_1.sh @de7dc40f88: DDP=torch for these sizes
SC21_TORCH = {"nar21-t1-1.7b", "nar21-t1-3.6b", "nar21-t1-7.5b", "nar21-t1-18b"}


def want(c):
    """(expected passes, reason) for row c, or None: not a Megatron row."""
    i, moe = c["id"], c.get("ep", "-") not in ("-", "", "1")
    if i.startswith("nar21-"):
        return (TORCH_DDP, "torch DDP") if i in SC21_TORCH else (LOCAL_DDP_2021, "local DDP 2021")
    if i.startswith("kor22-"):
        return LOCAL_DDP_2022, "local DDP 2022"
    if i.startswith("mcore08-"):   # Megatron-LM training defaults, bf16
        return mcore(True, False, moe), "Megatron-Core r0.8"
    if i.startswith("nemo2407-"):  # apex DistributedFusedAdam: ReduceOp.AVG, no norm
        return 0, "NeMo 24.07 apex"
    if i.startswith(("nemo2502-", "nemo2504-")):  # NeMo 2 recipes: True, True
        return mcore(True, True, moe), "NeMo 2 recipe"
    if i.startswith("mb2511-"):    # perf overrides: check off; recipes average
        if c["zero"] == "3":       # Megatron-FSDP: reduces in the backward
            return 0, "Megatron-FSDP"
        return mcore(False, True, moe), "Megatron-Bridge perf"
    return None


failures, seen, kinds = [], 0, {}
with open(os.path.join(root, "bench", "plans_cases.tsv")) as f:
    for c in csv.DictReader(f, delimiter="\t"):
        fields, w = framework_spec.spec_fields(c), want(c)
        got = int(fields.get("grad_presync_passes", "0"))
        if w is None:
            if "grad_presync_passes" in fields:
                failures.append("%s: grad_presync_passes on a row of no Megatron framework" % c["id"])
            continue
        seen += 1
        if got != w[0]:
            failures.append("%s: grad_presync_passes=%d, want %d (%s)" % (c["id"], got, w[0], w[1]))
        if "grad_presync_passes" not in c["assumed"]:
            failures.append("%s: assumed gives no reason for grad_presync_passes" % c["id"])
        if got:
            kinds.setdefault(w, (c, fields))
if seen != 71:
    failures.append("%d Megatron rows, want 71" % seen)

# the bench's spec file for one row of each nonzero kind, read back by approf
for w, (c, fields) in sorted(kinds.items()):
    fields = dict(framework_spec.overrides(c), **fields)
    with tempfile.TemporaryDirectory() as tmp:
        path = framework_spec.spec_name(tmp, c["hardware"], fields)
        framework_spec.write_spec("presync_rows.py", approf, c["hardware"], fields, path)
        p = subprocess.run([approf, "hardware", "show", path], capture_output=True, text=True)
        shown = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
        v = shown.get("grad_presync_passes")
        if v is None or int(float(v)) != w[0]:
            failures.append("%s: the spec file reads grad_presync_passes back as %s, want %d"
                            % (c["id"], v, w[0]))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: %d Megatron rows; %s" % (seen, ", ".join("%s %d" % (r, n) for n, r in sorted(kinds))))
