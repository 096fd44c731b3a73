#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The FSDP family's step outside the kernels (docs/validation.md, "FSDP
family on H100: the step outside the kernels, counted"): every
llm-foundry (Composer) row and every torchtitan row of
bench/plans_cases.tsv carries optimizer_step_bytes equal to its
framework's optimizer kernels plus the gradient clipping both run every
step, counted kernel by kernel below in bytes of one f32 element of the
local shard; no other row sets the field. The spec file plans.sh writes
for one row of each reads the figure back in approf.

Usage: step_bytes_rows.py SOURCE_ROOT APPROF
"""
import csv
import os
import subprocess
import sys
import tempfile

root, approf = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "bench"))
import framework_spec  # noqa: E402

# (kernel, bytes an f32 element: reads + writes)
# Composer v0.17.2 DecoupledAdamW.adamw, weight decay 0 in the yamls
COMPOSER_ADAMW = [("exp_avg.mul_", 8), ("exp_avg.add_", 12), ("exp_avg_sq.mul_", 8),
                  ("exp_avg_sq.addcmul_", 12), ("sqrt", 8), ("/ sqrt(bc2)", 8),
                  ("add_(eps)", 8), ("param.addcdiv_", 16)]
# torch _multi_tensor_adamw (foreach, not capturable), weight decay 0.1
TORCH_FOREACH_ADAMW = [("_foreach_mul_ decay", 8), ("_foreach_lerp_", 12),
                       ("_foreach_mul_", 8), ("_foreach_addcmul_", 12),
                       ("_foreach_sqrt", 8), ("_foreach_div_", 8),
                       ("_foreach_add_", 8), ("_foreach_addcdiv_", 16)]
# clip by the total norm: each local gradient read for its norm, then
# scaled in place by the clamped coefficient (no host sync)
CLIP_NORM = [("norm", 4), ("mul_", 8)]


def total(*tables):
    return sum(b for t in tables for _, b in t)


WANT = {"llm-foundry": total(COMPOSER_ADAMW, CLIP_NORM),
        "torchtitan": total(TORCH_FOREACH_ADAMW, CLIP_NORM)}

failures = []
seen = {k: [] for k in WANT}
with open(os.path.join(root, "bench", "plans_cases.tsv")) as f:
    for c in csv.DictReader(f, delimiter="\t"):
        fields = framework_spec.spec_fields(c)
        src = c["source"]
        fw = ("llm-foundry" if "mosaicml/llm-foundry" in src else
              "torchtitan" if "pytorch/torchtitan" in src else None)
        got = fields.get("optimizer_step_bytes")
        if fw is None:
            if got is not None:
                failures.append("%s: optimizer_step_bytes=%s on a row of neither framework"
                                % (c["id"], got))
            continue
        seen[fw].append((c, fields))
        if got is None or float(got) != WANT[fw]:
            failures.append("%s: optimizer_step_bytes=%s, want %g (%s)" % (c["id"], got, WANT[fw], fw))
for fw, want_rows in (("llm-foundry", 23), ("torchtitan", 18)):
    if len(seen[fw]) != want_rows:
        failures.append("%d %s rows, want %d" % (len(seen[fw]), fw, want_rows))

# the bench's spec file for the first row of each, read back by approf
for fw, rows in seen.items():
    if not rows:
        continue
    c, fields = rows[0]
    fields = dict(framework_spec.overrides(c), **fields)
    with tempfile.TemporaryDirectory() as tmp:
        path = framework_spec.spec_name(tmp, c["hardware"], fields)
        framework_spec.write_spec("step_bytes_rows.py", approf, c["hardware"], fields, path)
        p = subprocess.run([approf, "hardware", "show", path], capture_output=True, text=True)
        shown = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
        v = shown.get("optimizer_step_bytes")
        if v is None or float(v) != WANT[fw]:
            failures.append("%s: the spec file reads optimizer_step_bytes back as %s, want %g"
                            % (c["id"], v, WANT[fw]))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: %s" % ", ".join("%s %d rows at %g" % (k, len(seen[k]), WANT[k]) for k in WANT))
