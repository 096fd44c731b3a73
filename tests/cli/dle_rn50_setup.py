#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DeepLearningExamples' ResNet-50 rows as the runs were set up
(docs/validation.md, "DeepLearningExamples' multi-GPU rows: what eight
GPUs add"):

- every ResNet-50 row of bench/validation_cases.tsv accumulates
  optimizer_batch_size / (GPUs x per-GPU batch) micro-batches
  (configs.yml at 7bdfc81d: 2048 for AMP and TF32, 896 for FP32; main.py's
  batch_size_multiplier): 8 on one GPU, 1 on eight;
- its AMP rows reduce f32 gradients (grad_dtype f32: autocast keeps the
  parameters in f32) and every row steps torch.optim.SGD (optimizer sgd);
- bench/validation.sh refuses an optimizer value it does not know, naming
  the file, line and field;
- the sgd step is priced at 56 bytes a parameter under AMP (the spec's
  optimizer_step_bytes) where fused Adam's count for an f16 model is 26,
  and at 707 kernels (param_step_kernels x 161 tensors), a launch each:
  the eight-GPU A100 AMP row's prediction grows by 30 bytes x ResNet-50's
  25,557,032 parameters at the spec's streaming rate plus 707 launches;
- DDP's copies (ddp copies: ddp_grad_copies 2) add, on eight GPUs, two
  copy kernels a tensor that read and write its f32 gradient, and
  nothing on one GPU.

Usage: dle_rn50_setup.py SOURCE_ROOT BUILD_ROOT
"""
import csv
import os
import subprocess
import sys
import tempfile

root, build = sys.argv[1:3]
cases_path = os.path.join(root, "bench", "validation_cases.tsv")
failures = []

OPT_BATCH = {"AMP": 2048, "TF32": 2048, "FP32": 896}
with open(cases_path) as f:
    cases = list(csv.DictReader(f, delimiter="\t"))
header = list(cases[0].keys())
rn50 = [c for c in cases if c["model"] == "resnet50"]
if len(rn50) != 12:
    failures.append("%d ResNet-50 rows, want 12" % len(rn50))
for c in rn50:
    gpus = int(c["hosts"]) * int(c["gpus_per_host"])
    want = OPT_BATCH[c["precision"]] // (gpus * int(c["mbs"]))
    if int(c["accum"]) != want:
        failures.append("%s: accum %s, want %d" % (c["id"], c["accum"], want))
    gd = "f32" if c["precision"] == "AMP" else "-"
    if c.get("grad_dtype") != gd:
        failures.append("%s: grad_dtype %s, want %s" % (c["id"], c.get("grad_dtype"), gd))
    if c.get("optimizer") != "sgd":
        failures.append("%s: optimizer %s, want sgd" % (c["id"], c.get("optimizer")))
    if c.get("ddp") != "copies":
        failures.append("%s: ddp %s, want copies" % (c["id"], c.get("ddp")))


def validation(path, only):
    p = subprocess.run([os.path.join(root, "bench", "validation.sh"), "--build", build,
                        "--no-plans", "--cases", path, "--only", only],
                       capture_output=True, text=True, timeout=600, cwd=root)
    return p.returncode, p.stdout, p.stderr


def write_cases(path, rows):
    with open(path, "w") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(r[k] for k in header) + "\n")


def predicted(out, case_id):
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == case_id and len(f) > 10:
            return float(f[10])
    return None


with tempfile.TemporaryDirectory() as tmp:
    # a bad value: refused naming the file, line and field
    bad = [dict(c) for c in cases]
    bad[0]["optimizer"] = "adam"
    path = os.path.join(tmp, "bad.tsv")
    write_cases(path, bad)
    rc, out, err = validation(path, "^none$")
    if rc == 0 or ("%s:2: field 'optimizer'" % path) not in err:
        failures.append("optimizer adam: exit %d, stderr %r" % (rc, err.strip()))

    # the sgd step's bytes and kernels, DDP's copies (on eight GPUs only)
    p = subprocess.run([os.path.join(build, "profiler", "cli", "approf"), "hardware", "show",
                        "a100-80g"], capture_output=True, text=True)
    spec = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
    rate = float(spec["memory_bandwidth_gbs"]) * 1e9 * float(spec["memory_efficiency"])
    launch = float(spec["kernel_launch_overhead_us"]) * 1e-6
    params, tensors, kernels = 25557032, 161, 63 * 5 + 98 * 4
    checks = [  # row, column, the two values, the difference wanted
        ("rn50-a100-8-amp", "optimizer", "-", "sgd",
         (56 - 26) * params / rate + kernels * launch),
        ("rn50-a100-8-amp", "ddp", "-", "copies",
         2 * (tensors * launch + 2 * 4 * params / rate)),
        ("rn50-a100-1-amp", "ddp", "-", "copies", 0.0)]
    for n, (case_id, col, off, on, want) in enumerate(checks):
        preds = {}
        for v in (off, on):
            r = dict([c for c in cases if c["id"] == case_id][0])
            r[col] = v
            path = os.path.join(tmp, "c%d%s.tsv" % (n, v == on))
            write_cases(path, [r])
            rc, out, err = validation(path, ".")
            preds[v] = predicted(out, case_id)
            if rc or preds[v] is None:
                failures.append("%s %s %s: exit %d, %s" % (case_id, col, v, rc,
                                                          (err or out).strip()[:300]))
        if None in preds.values():
            continue
        got = preds[on] - preds[off]
        # the table prints four significant digits: its last either side
        tol = 2e-5 if preds[on] < 1.0 else 2e-3
        if abs(got - want) > tol:
            failures.append("%s %s %s: %+.6f s, want %+.6f s" % (case_id, col, on, got, want))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: 12 ResNet-50 rows as set up; the sgd step and DDP's copies priced as counted")
