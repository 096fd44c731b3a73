#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""FlashAttention-2 on H100 by key length (docs/validation.md,
"FlashAttention-2 on H100 by key length"): every row of
bench/plans_cases.tsv that prices FlashAttention-2 on H100 (spec_fields
attention_efficiency=0.18, the kernel measured on this project's H100 at
4096 keys) carries one table attention_efficiency_2k .. _32k, the 0.18
times the published chart's growth with the key length, and no other row
sets the table. The spec file plans.sh writes for such a row (its many
fields give a file name past 255 bytes: framework_spec.spec_name takes a
digest then) reads back in approf with the five figures.

Usage: fa2_by_key_length.py SOURCE_ROOT APPROF
"""
import csv
import os
import sys
import tempfile

root, approf = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "bench"))
import framework_spec  # noqa: E402

# flash-attn v2.4.2 README, assets/flash2_h100_fwd_bwd_benchmark.png (H100
# 80GB SXM5, benchmarks/benchmark_flash_attention.py): causal, head 128,
# forward + backward TFLOP/s by sequence length; none past 16k, so 32k
# takes 16k's (the interpolation's clamp).
CHART = {"2k": 265.0, "4k": 294.0, "8k": 308.0, "16k": 328.0, "32k": 328.0}
ANCHOR = 0.18  # bench/h100/attention.tsv: PyTorch's FlashAttention-2 at 4096 keys
WANT = dict(("attention_efficiency_" + k, round(ANCHOR * v / CHART["4k"], 3))
            for k, v in CHART.items())

failures = []
fa2 = []
with open(os.path.join(root, "bench", "plans_cases.tsv")) as f:
    for c in csv.DictReader(f, delimiter="\t"):
        fields = framework_spec.spec_fields(c)
        table = dict((k, float(v)) for k, v in fields.items()
                     if k.startswith("attention_efficiency_"))
        if fields.get("attention_efficiency") == "0.18" and c["hardware"] == "h100-sxm":
            fa2.append((c, fields))
            if table != WANT:
                failures.append("%s: FlashAttention-2 table %s, want %s" % (c["id"], table, WANT))
        elif c["hardware"] == "h100-sxm" and table:
            failures.append("%s: a by-length table on a row that does not run "
                            "FlashAttention-2 at 0.18" % c["id"])
if len(fa2) < 31:
    failures.append("%d FlashAttention-2 rows on H100, want the 31 of the case list" % len(fa2))

# the bench's spec file for the longest-named row, read back by approf
if fa2:
    c, fields = max(fa2, key=lambda cf: len(cf[1]))
    fields = dict(framework_spec.overrides(c), **fields)
    with tempfile.TemporaryDirectory() as tmp:
        path = framework_spec.spec_name(tmp, c["hardware"], fields)
        if len(os.path.basename(path)) > 255:
            failures.append("spec file name of %d bytes" % len(os.path.basename(path)))
        framework_spec.write_spec("fa2_by_key_length.py", approf, c["hardware"], fields, path)
        import subprocess
        p = subprocess.run([approf, "hardware", "show", path], capture_output=True, text=True)
        shown = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
        for k, v in WANT.items():
            if k not in shown or abs(float(shown[k]) - v) > 1e-9:
                failures.append("%s read back as %s, want %g" % (k, shown.get(k), v))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: %d FlashAttention-2 rows, table %s" % (len(fa2), WANT))
