#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The kernel-level H100 figures behind the Hopper efficiencies of the
# built-in specs (profiler/hw/specs.c; docs/validation.md, "Kernel-level
# figures on an H100"), recomputed from the timings in bench/h100/ (made by
# bench/gpu_kernels.py on one H100 SXM, 2026-11-26). With --approf, also
# the analytic price of the same per-device GPT layers (approf sweep on a
# copy of h100-sxm whose links are free, so only the kernels count) beside
# the measured layer. Printed, never asserted.
# Usage: bench/h100_fit.py [--data DIR] [--approf PATH] [--hardware NAME]
import argparse
import csv
import os
import statistics as st
import subprocess
import sys
import tempfile

import framework_spec  # bench/, beside this script

PEAK_BF16 = 989.4e12        # H100 SXM dense bf16 (datasheet)
PEAK_TF32 = 494.7e12
HBM = 3350e9                # H100 SXM HBM3 (datasheet)
LAUNCH = 4e-6               # the built-in specs' launch overhead per kernel
SEQ, HEAD_DIM = 4096, 128   # the Megatron-Core cases: tokens per micro-batch, head size
HEADS = {2048: 16, 4096: 32, 6144: 48, 7168: 56, 8192: 64, 10240: 80, 12288: 96, 16384: 128,
         18432: 144}


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader((line for line in f if not line.startswith("#")),
                                          delimiter="\t")]


def gemm_flops(h, tp):
    """Per-device GEMM FLOPs of one GPT layer, forward + backward (QKV,
    projection, two MLP GEMMs; 3x the forward)."""
    return 3 * 2.0 * SEQ * 12 * h * h / tp


def attention_flops(h, tp):
    """Per-device causal attention FLOPs, forward (2 GEMMs over half the
    keys) + backward (5): 3.5x the forward."""
    return 3.5 * 4.0 * (HEADS[h] // tp) * SEQ * (SEQ / 2) * HEAD_DIM


def eff(flops, seconds, launches, peak=PEAK_BF16):
    return flops / ((seconds - launches * LAUNCH) * peak)


def summary(xs):
    xs = sorted(xs)
    return "median %.3f, %.3f-%.3f over %d" % (st.median(xs), xs[0], xs[-1], len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "h100"))
    ap.add_argument("--approf", help="approf binary: also price the layers analytically")
    ap.add_argument("--hardware", default="h100-sxm")
    a = ap.parse_args()
    d = a.data

    print("== GEMMs and fused attention inside one GPT layer (torch.profiler, bf16, cuDNN attention)")
    print("efficiency = FLOPs / ((kernel time - %g us per approf kernel) x %.1f TFLOP/s)" % (LAUNCH * 1e6, PEAK_BF16 / 1e12))
    prof = {}
    for r in rows(os.path.join(d, "profile.tsv")):
        prof.setdefault((r["case"], int(r["hidden"]), int(r["tp"])), {})[r["class"]] = float(r["us_per_iter"]) * 1e-6
    ge, ae = [], []
    print("%-10s %6s %3s %9s %9s %9s %6s %6s" % ("case", "hidden", "tp", "gemm us", "attn us", "other us", "gemm", "attn"))
    for (c, h, tp), v in prof.items():
        g = eff(gemm_flops(h, tp), v["gemm"], 12)
        at = eff(attention_flops(h, tp), v["attention"], 7)
        ge.append(g)
        ae.append(at)
        print("%-10s %6d %3d %9.1f %9.1f %9.1f %6.3f %6.3f" % (c, h, tp, v["gemm"] * 1e6, v["attention"] * 1e6,
                                                          v["other"] * 1e6, g, at))
    print("short burst: GEMM %s; attention %s" % (summary(ge), summary(ae)))
    with open(os.path.join(d, "steady.tsv")) as f:
        for line in f:
            if line.startswith("# layer-"):
                name = line.split()[1]
                parts = dict((p.split()[0], float(p.split()[1]) * 1e-6)
                             for p in line.split(":", 1)[1].strip().split(", "))
                h, tp = (2048, 1) if name == "layer-1.7b" else (18432, 8)
                print("settled (%s, after the power limit): GEMM %.3f, attention %.3f" % (
                    name, eff(gemm_flops(h, tp), parts["gemm"], 12), eff(attention_flops(h, tp), parts["attention"], 7)))
    st_rows = rows(os.path.join(d, "steady.tsv"))
    for w in sorted(set(r["workload"] for r in st_rows)):
        its = [float(r["iter_s"]) for r in st_rows if r["workload"] == w and int(r["second"]) >= 1]
        mhz = [float(r["sm_mhz"]) for r in st_rows if r["workload"] == w and int(r["second"]) >= 1]
        print("  %-22s seconds 1..: %.3f-%.3f ms per iteration, SM clock %d-%d MHz" % (
            w, min(its) * 1e3, max(its) * 1e3, min(mhz), max(mhz)))

    print("\n== GEMMs alone, back to back (power-limited clocks)")
    gp = rows(os.path.join(d, "gemm_paths.tsv"))
    for path in sorted(set(r["path"] for r in gp)):
        xs = [float(r["tflops"]) * 1e12 / PEAK_BF16 for r in gp if r["path"] == path and int(r["N"]) % 8 == 0]
        print("  %-20s bf16 %s" % (path, summary(xs)))
    grid = rows(os.path.join(d, "gemm.tsv"))
    ratios = []
    for dt, peak in (("bf16", PEAK_BF16), ("f16", PEAK_BF16), ("tf32", PEAK_TF32)):
        ok = [float(r["tflops"]) * 1e12 / peak for r in grid if r["dtype"] == dt and
              min(int(r["M"]), int(r["N"])) >= 2048 and all(int(r[k]) % 8 == 0 for k in "MNK")]
        bad = [float(r["tflops"]) * 1e12 / peak for r in grid if r["dtype"] == dt and
               any(int(r[k]) % 8 for k in "MNK")]
        if ok:
            print("  grid %-5s M, N >= 2048: %s%s" % (dt, summary(ok), "; a dimension not a multiple of 8: "
                                                      + summary(bad) if bad else ""))
            ratios += [b / st.median(ok) for b in bad]
    print("  misaligned / the dtype's aligned median (gemm_unaligned_factor): %s" % summary(ratios))
    f32 = [float(r["tflops"]) * 1e12 / 67e12 for r in grid if r["dtype"] == "f32"]
    print("  f32 (CUDA cores, 67 TFLOP/s): %s" % summary(f32))

    print("\n== fused attention alone (causal, head 128, 4096 tokens, heads 7..18), forward + backward")
    at = rows(os.path.join(d, "attention.tsv"))
    for be in sorted(set(r["backend"] for r in at)):
        xs = []
        for hh in sorted(set(int(r["heads"]) for r in at if r["backend"] == be and r["seq"] == "4096"
                             and r["causal"] == "1")):
            t = sum(float(r["seconds"]) for r in at if r["backend"] == be and int(r["heads"]) == hh
                    and r["seq"] == "4096" and r["causal"] == "1")
            xs.append(3.5 * 4.0 * hh * SEQ * (SEQ / 2) * HEAD_DIM / (t - 7 * LAUNCH) / PEAK_BF16)
        print("  %-9s %s" % (be, summary(xs)))

    print("\n== memory-bound kernels (bytes each must move / time / %.0f GB/s), tensors of 64 MiB or more" % (HBM / 1e9))
    mem = rows(os.path.join(d, "memory.tsv"))
    for op in ("copy", "add", "gelu_fwd", "gelu_bwd", "dropout_fwd", "layernorm_fwd", "layernorm_bwd",
               "softmax_fwd", "softmax_bwd"):
        xs = [float(r["gbs"]) * 1e9 / HBM for r in mem if r["op"] == op and int(r["bytes"]) >= 64 << 20]
        print("  %-14s %s" % (op, summary(xs)))

    print("\n== reduction kernels (the bytes approf counts / time / %.0f GB/s), 64 MiB or more" % (HBM / 1e9))
    red = rows(os.path.join(d, "reduction.tsv"))
    allv = []
    for op in ("layernorm", "rmsnorm", "softmax", "batchnorm", "maxpool", "avgpool_global", "bias_grad"):
        for dt in ("bf16", "f32"):
            # the backward of a bias gradient (a sum) is a broadcast, not a reduction kernel
            xs = [float(r["gbs"]) * 1e9 / HBM for r in red if r["op"] == op and r["dtype"] == dt
                  and int(r["bytes"]) >= 64 << 20 and not (op == "bias_grad" and r["pass"] == "bwd")]
            if xs:
                allv += xs
                print("  %-14s %-4s %s" % (op, dt, summary(xs)))
    print("  all reductions      %s" % summary(allv))

    print("\n== the GPT loss over one micro-batch's logits, forward + backward")
    loss = rows(os.path.join(d, "loss.tsv"))
    for T, V in sorted(set((int(r["tokens"]), int(r["vocab"])) for r in loss), reverse=True):
        t = {}
        for r in loss:
            if int(r["tokens"]) == T and int(r["vocab"]) == V:
                t[r["impl"]] = t.get(r["impl"], 0.0) + float(r["seconds"])
        print("  %5d tokens x %6d: Megatron's f32 cross-entropy %.2f ms, PyTorch's on bf16 logits %.2f ms" % (
            T, V, t["megatron_f32"] * 1e3, t["torch_bf16"] * 1e3))

    if not a.approf:
        return
    print("\n== one layer per device: analytic (%s, links free) against measured (cuDNN attention)" % a.hardware)
    meas = {r["case"]: float(r["seconds"]) for r in rows(os.path.join(d, "layer.tsv"))
            if r["backend"] == "cudnn" and r["pass"] == "fwd+bwd"}
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "free-links.spec")
        framework_spec.write_spec("h100_fit.py", a.approf, a.hardware,
                                  {"name": a.hardware + "-free-links",
                                   "intra_host_bandwidth_gbs": "100000",
                                   "intra_host_latency_us": "0"}, spec)
        print("%-10s %3s %11s %11s %6s" % ("case", "tp", "analytic ms", "measured ms", "ratio"))
        for c, h, tp in sorted(prof, key=lambda k: k[1]):
            cost = []
            for layers in (2, 3):   # one more block: the difference is one layer
                db = os.path.join(tmp, "l%d.db" % layers)
                subprocess.run([a.approf, "sweep", "--model", "gpt", "--attention", "flash", "--num-layers",
                                str(layers), "--hidden", str(h), "--heads", str(HEADS[h]), "--seq-len", str(SEQ),
                                "--vocab", "131072", "--batch", "1", "--micro-batches", "1", "--cluster", "1x8",
                                "--submesh-space", "manual:1x%d" % tp, "--logical-space", "all", "--layers", "1",
                                "--hardware", spec, "--db", db, "--quiet"], check=True, capture_output=True)
                out = subprocess.run([a.approf, "export", "--db", db], capture_output=True, text=True,
                                     check=True).stdout
                best = {}
                for r in csv.DictReader(out.splitlines()):
                    # one entry a phase: the sweep also stores the ZeRO
                    # stages, recomputation and memory levels of the same
                    # range, which the measured layer does not run
                    if (r["submesh"] == "1x%d" % tp and r.get("zero", "0") in ("", "0") and
                            r.get("recompute", "none") in ("", "none") and
                            r.get("memory_level", "0") in ("", "0")):
                        k = (r["logical_mesh"], r["force_batch_dim"])
                        best[k] = best.get(k, 0.0) + float(r["compute_cost"])
                cost.append(min(best.values()))
            an = cost[1] - cost[0]
            print("%-10s %3d %11.3f %11.3f %6.3f" % (c, tp, an * 1e3, meas[c] * 1e3, an / meas[c]))
    print("measured: PyTorch eager (LayerNorm, QKV, cuDNN attention, projection, MLP); with tp > 1 it\n"
          "also times a concatenation standing in for each all-gather and its gradient's additions,\n"
          "which approf prices as collectives (free here), so its 'other' kernels run long.")


if __name__ == "__main__":
    sys.exit(main())
