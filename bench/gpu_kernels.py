#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Kernel-level timings on one GPU through PyTorch (cuBLAS/cuBLASLt, cuDNN,
# the fused-attention kernels): the single-GPU figures the analytic
# hardware specs are calibrated on (docs/validation.md, "Kernel-level
# figures on an H100"; bench/h100_fit.py reads them). Needs a CUDA GPU and
# PyTorch; no part of approf. Writes one TSV per section to OUT (default
# ./gpu-kernels) and progress to stdout; GK_SECTIONS=a,b picks sections:
#   memory      op dtype rows cols bytes seconds gbs: copy, add, GELU,
#               LayerNorm, softmax, dropout (bytes: the fewest each must
#               move, each input read once and each output written once)
#   reduction   op dtype shape pass bytes seconds gbs: LayerNorm, RMSNorm,
#               softmax, bias gradient, batch norm (NCHW f32, NHWC bf16),
#               max pool, global average pool, forward and backward, with
#               the bytes approf counts (forward inputs + output, backward
#               inputs + twice the output)
#   loss        impl tokens vocab pass seconds logit_bytes: the GPT loss
#               over one micro-batch's logits, Megatron-Core's f32
#               cross-entropy and PyTorch's on the bf16 logits
#   attention   backend dtype heads seq head_dim causal pass seconds tflops:
#               scaled_dot_product_attention on the cuDNN, flash and
#               memory-efficient backends
#   layer       case backend hidden tp tokens pass seconds: one
#               Megatron-style GPT layer's per-device program (LayerNorm,
#               QKV, fused attention, projection, LayerNorm, MLP, GELU) at
#               the Megatron-Core r0.8 H100 shapes
#   profile     case hidden tp class us_per_iter calls_per_iter: that
#               layer's kernels by class (GEMM, attention, other) from
#               torch.profiler, then the kernels themselves as # lines
#   gemm_paths  round path M N K seconds tflops sm_clock_mhz: one shape set
#               through four calls (matmul out=, a @ b, F.linear with a
#               bias, with layer-scaled weights), twice, interleaved
#   steady      workload second iter_s sm_mhz power_w: two layers and one
#               GEMM back to back for GK_STEADY_S (8) seconds while
#               nvidia-smi samples the clock and power, then the kernels by
#               class once the clocks have settled
#   gemm        dtype layout M N K seconds tflops: a grid of shapes and the
#               per-device GEMMs of the transformer cases (forward X W^T,
#               data gradient dY W, weight gradient dY^T X)
# Timing: CUDA events around a loop of back-to-back launches long enough
# to last about 2 ms (20 ms for layers), after warm-up; the median of 5
# such batches. Inputs are random normal (never zeros). Each section has a
# time budget and stops early, saying so, when it runs out.
# Usage: python3 bench/gpu_kernels.py [OUT]
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "gpu-kernels"
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "f32": torch.float32}
EL = {"bf16": 2, "f16": 2, "tf32": 4, "f32": 4}


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def timeit(fn, target=2e-3):
    """Median seconds of one call of fn over 5 timed batches."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    one = max(s.elapsed_time(e) * 1e-3, 1e-6)
    n = max(1, min(2000, int(target / one)))
    ts = []
    for _ in range(5):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3 / n)
    ts.sort()
    return ts[2]


def log(msg):
    print(msg, flush=True)


# --- GEMMs -----------------------------------------------------------------
def gemm_case(dtype, layout, M, N, K):
    """C[M,N] = op(A) op(B) with the operand layouts of a Linear layer:
    fwd  Y = X W^T   (X [M,K], W [N,K])
    dgrad dX = dY W  (dY [M,K'], W [K',N]: here written as A[M,K] B[K,N])
    wgrad dW = dY^T X (dY [K,M] read transposed, X [K,N])."""
    t = DT[dtype]
    if layout == "fwd":
        a = torch.randn(M, K, device=dev, dtype=t)
        b = torch.randn(N, K, device=dev, dtype=t)
        c = torch.empty(M, N, device=dev, dtype=t)
        return lambda: torch.matmul(a, b.t(), out=c)
    if layout == "dgrad":
        a = torch.randn(M, K, device=dev, dtype=t)
        b = torch.randn(K, N, device=dev, dtype=t)
        c = torch.empty(M, N, device=dev, dtype=t)
        return lambda: torch.matmul(a, b, out=c)
    a = torch.randn(K, M, device=dev, dtype=t)
    b = torch.randn(K, N, device=dev, dtype=t)
    c = torch.empty(M, N, device=dev, dtype=t)
    return lambda: torch.matmul(a.t(), b, out=c)


# Transformer cases (name, hidden, tp, tokens per micro-batch, vocab):
# Megatron-Core r0.8 H100 weak scaling (seq 4096, mbs 1), GPT-3 1.3B and
# GPT-2 small as approf's CUDA-backend checks sweep them, BERT-large at the
# DeepLearningExamples batch sizes (seq 128 x 64 ... 512 x 16 tokens).
CASES = [
    ("mc08-1.7b", 2048, 1, 4096, 131072), ("mc08-7.1b", 4096, 2, 4096, 131072),
    ("mc08-16b", 6144, 4, 4096, 131072), ("mc08-32b", 7168, 8, 4096, 131072),
    ("mc08-70b", 8192, 8, 4096, 131072), ("mc08-119b", 10240, 8, 4096, 131072),
    ("mc08-177b", 12288, 8, 4096, 131072), ("mc08-314b", 16384, 8, 4096, 131072),
    ("mc08-462b", 18432, 8, 4096, 131072), ("gpt3-1.3b", 2048, 1, 8192, 50257),
    ("gpt2-small", 768, 1, 8192, 50257), ("bert-large-128", 1024, 1, 8192, 30522),
    ("bert-large-512", 1024, 1, 8192, 30522), ("n21-18b", 6144, 8, 2048, 51200),
]


# attention heads of the Megatron-Core cases by hidden size
HEADS = {2048: 16, 4096: 32, 6144: 48, 7168: 56, 8192: 64, 10240: 80, 12288: 96, 16384: 128, 18432: 144}


def case_gemms(h, tp, T, vocab):
    """(M, N, K) of the per-device forward GEMMs of one layer and the head."""
    out = [(T, 3 * h // tp, h), (T, h, h // tp), (T, 4 * h // tp, h), (T, h, 4 * h // tp)]
    out.append((T, (vocab + tp - 1) // tp, h))
    return out


def gemm_section(f, budget):
    t0 = time.time()
    shapes = set()
    for dtype in ("bf16", "tf32", "f16"):
        for M in (256, 512, 1024, 2048, 4096, 8192, 16384):
            for N in (1024, 2048, 3072, 4096, 6144, 8192, 16384):
                for K in (1024, 2048, 4096, 8192):
                    if dtype == "f16" and (M, N, K) not in ((8192, 8192, 8192), (4096, 4096, 4096), (2048, 4096, 1024), (8192, 1024, 1024)):
                        continue
                    shapes.add((1, dtype, "fwd", M, N, K))
        for name, h, tp, T, v in CASES:
            for (M, N, K) in case_gemms(h, tp, T, v):
                if dtype == "f16" and not name.startswith("bert"):
                    continue
                shapes.add((0, dtype, "fwd", M, N, K))
                shapes.add((0, dtype, "dgrad", M, K, N))
                shapes.add((0, dtype, "wgrad", N, K, M))
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 4096, 1024)):
        shapes.add((2, "f32", "fwd", M, N, K))
    f.write("dtype\tlayout\tM\tN\tK\tseconds\ttflops\n")
    done = 0
    # case shapes first, then the grid, then plain f32
    for pri, dtype, layout, M, N, K in sorted(shapes):
        if time.time() - t0 > budget:
            log("gemm: budget spent after %d of %d shapes" % (done, len(shapes)))
            break
        set_tf32(dtype == "tf32")
        try:
            s = timeit(gemm_case(dtype, layout, M, N, K))
        except RuntimeError as ex:
            log("gemm %s %s %dx%dx%d: %s" % (dtype, layout, M, N, K, ex))
            continue
        f.write("%s\t%s\t%d\t%d\t%d\t%.6e\t%.1f\n" % (dtype, layout, M, N, K, s, 2.0 * M * N * K / s / 1e12))
        done += 1
    f.flush()
    torch.cuda.empty_cache()
    log("gemm: %d shapes in %.0f s" % (done, time.time() - t0))


# --- memory-bound kernels --------------------------------------------------
def memory_section(f, budget):
    t0 = time.time()
    f.write("op\tdtype\trows\tcols\tbytes\tseconds\tgbs\n")
    for dtype in ("bf16", "tf32"):
        t, el = DT[dtype], EL[dtype]
        for rows, cols in ((8192, 1024), (4096, 4096), (8192, 8192), (16384, 8192), (4096, 18432)):
            if time.time() - t0 > budget:
                log("memory: budget spent")
                return
            x = torch.randn(rows, cols, device=dev, dtype=t)
            y = torch.randn(rows, cols, device=dev, dtype=t)
            g = torch.randn(rows, cols, device=dev, dtype=t)
            o = torch.empty(rows, cols, device=dev, dtype=t)
            w = torch.randn(cols, device=dev, dtype=t)
            bb = torch.randn(cols, device=dev, dtype=t)
            n = rows * cols * el
            xr = x.detach().requires_grad_(True)
            ln = F.layer_norm(xr, (cols,), w, bb)
            ge = F.gelu(xr, approximate="tanh")
            sm = torch.softmax(xr, dim=-1)
            ops = [
                ("copy", lambda: o.copy_(x), 2 * n),
                ("add", lambda: torch.add(x, y, out=o), 3 * n),
                ("gelu_fwd", lambda: F.gelu(x, approximate="tanh"), 2 * n),
                ("gelu_bwd", lambda: torch.autograd.grad(ge, xr, g, retain_graph=True), 3 * n),
                ("layernorm_fwd", lambda: F.layer_norm(x, (cols,), w, bb), 2 * n),
                ("layernorm_bwd", lambda: torch.autograd.grad(ln, xr, g, retain_graph=True), 3 * n),
                ("softmax_fwd", lambda: torch.softmax(x, dim=-1), 2 * n),
                ("softmax_bwd", lambda: torch.autograd.grad(sm, xr, g, retain_graph=True), 3 * n),
                ("dropout_fwd", lambda: F.dropout(x, 0.1, True), 2 * n + rows * cols),
            ]
            for name, fn, nbytes in ops:
                try:
                    s = timeit(fn)
                except RuntimeError as ex:
                    log("memory %s: %s" % (name, ex))
                    continue
                f.write("%s\t%s\t%d\t%d\t%d\t%.6e\t%.1f\n" % (name, dtype, rows, cols, nbytes, s, nbytes / s / 1e9))
            del x, y, g, o, xr, ln, ge, sm
            torch.cuda.empty_cache()
    f.flush()
    log("memory: %.0f s" % (time.time() - t0))


# --- fused attention -------------------------------------------------------
BACKENDS = ("cudnn", "flash", "efficient")


def sdpa_ctx(name):
    """A context that restricts scaled_dot_product_attention to one backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION}[name])


def attention_section(f, budget):
    t0 = time.time()
    f.write("backend\tdtype\theads\tseq\thead_dim\tcausal\tpass\tseconds\ttflops\n")
    shapes = [(h, 4096, 128, 1) for h in (7, 8, 10, 12, 16, 18)]
    shapes += [(16, 2048, 128, 1), (32, 2048, 64, 1), (16, 4096, 128, 0), (16, 512, 64, 0), (16, 128, 64, 0)]
    for backend in BACKENDS:
        for heads, seq, d, causal in shapes:
            if time.time() - t0 > budget:
                log("attention: budget spent")
                return
            bsz = max(1, 4096 // seq) if seq >= 1024 else 64 * 128 // seq
            q, k, v = (torch.randn(bsz, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            g = torch.randn(bsz, heads, seq, d, device=dev, dtype=torch.bfloat16)
            flops = 4.0 * bsz * heads * seq * seq * d * (0.5 if causal else 1.0)
            try:
                with sdpa_ctx(backend):
                    fw = timeit(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                    bw = timeit(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
            except RuntimeError as ex:
                log("attention %s %d %d: %s" % (backend, heads, seq, str(ex).splitlines()[0]))
                continue
            for ps, t, fl in (("fwd", fw, flops), ("bwd", bw, 2.5 * flops)):
                f.write("%s\tbf16\t%d\t%d\t%d\t%d\t%s\t%.6e\t%.1f\n" % (backend, heads * bsz, seq, d, causal, ps, t,
                                                                     fl / t / 1e12))
    f.flush()
    torch.cuda.empty_cache()
    log("attention: %.0f s" % (time.time() - t0))


# --- one GPT layer's per-device program ------------------------------------
class Layer(torch.nn.Module):
    def __init__(self, h, heads, tp, sp):
        super().__init__()
        self.h, self.tp, self.sp, self.hd = h, tp, sp, h // heads
        self.heads = heads // tp
        self.ln1 = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h // tp)
        self.proj = torch.nn.Linear(h // tp, h)
        self.ln2 = torch.nn.LayerNorm(h)
        self.fc1 = torch.nn.Linear(h, 4 * h // tp)
        self.fc2 = torch.nn.Linear(4 * h // tp, h)

    def gather(self, x):
        # sequence parallel: the all-gather's output written (its transfer is not timed)
        return torch.cat([x] * self.tp, 0) if self.sp and self.tp > 1 else x

    def shard(self, x):
        return x[: x.shape[0] // self.tp] if self.sp and self.tp > 1 else x

    def forward(self, x):
        T = x.shape[0] * (self.tp if self.sp and self.tp > 1 else 1)
        a = self.qkv(self.gather(self.ln1(x)))
        q, k, v = a.view(T, 3, self.heads, self.hd).permute(1, 2, 0, 3).unbind(0)
        o = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=True)
        o = o.squeeze(0).permute(1, 0, 2).reshape(T, self.heads * self.hd)
        x = x + self.shard(self.proj(o))
        m = self.fc2(F.gelu(self.fc1(self.gather(self.ln2(x))), approximate="tanh"))
        return x + self.shard(m)


def layer_section(f, budget):
    t0 = time.time()
    f.write("case\tbackend\thidden\ttp\ttokens\tpass\tseconds\n")
    for name, h, tp, T, v, backend in [c + (b,) for c in CASES for b in BACKENDS]:
        if not name.startswith("mc08"):
            continue
        if time.time() - t0 > budget:
            log("layer: budget spent")
            break
        sp = tp > 1
        try:
            m = Layer(h, HEADS[h], tp, sp).to(dev, torch.bfloat16)
            x = torch.randn(T // tp if sp else T, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
            g = torch.randn_like(x)
            with torch.no_grad(), sdpa_ctx(backend):
                fw = timeit(lambda: m(x), target=20e-3)
            y = m(x)

            def fb():
                with sdpa_ctx(backend):
                    y = m(x)
                    y.backward(g)
            fbt = timeit(fb, target=20e-3)
        except RuntimeError as ex:
            log("layer %s %s: %s" % (name, backend, str(ex).splitlines()[0]))
            continue
        for ps, t in (("fwd", fw), ("fwd+bwd", fbt)):
            f.write("%s\t%s\t%d\t%d\t%d\t%s\t%.6e\n" % (name, backend, h, tp, T, ps, t))
        del m, x, g, y
        torch.cuda.empty_cache()
    f.flush()
    log("layer: %.0f s" % (time.time() - t0))


def kernel_class(name):
    n = name.lower()
    if "sdpa" in n or "flash" in n or "fmha" in n or "cudnn::fusion" in n:
        return "attention"
    if "nvjet" in n or "gemm" in n or "xmma" in n or "cutlass" in n:
        return "gemm"
    return "other"


def class_times(prof, iters, detail=None, name=""):
    """{class: [us per iteration, calls per iteration]} of a torch.profiler
    run over iters iterations; each kernel also appended to detail as a
    "name class us calls kernel" line when detail is a list."""
    agg = {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us <= 0:
            continue
        c = kernel_class(e.key)
        a = agg.setdefault(c, [0.0, 0.0])
        a[0] += us / iters
        a[1] += e.count / iters
        if detail is not None:
            detail.append("%s\t%s\t%.1f\t%.1f\t%s" % (name, c, us / iters, e.count / iters, e.key[:120]))
    return agg


def profile_section(f, budget):
    """The kernels of each Megatron-Core case's layer forward + backward
    (cuDNN attention), from torch.profiler over 5 iterations: CUDA time per
    iteration by class (GEMM, attention, other) and the heaviest kernels."""
    from torch.profiler import ProfilerActivity, profile
    t0 = time.time()
    f.write("case\thidden\ttp\tclass\tus_per_iter\tcalls_per_iter\n")
    detail = []
    for name, h, tp, T, v in CASES:
        if not name.startswith("mc08") or time.time() - t0 > budget:
            continue
        sp = tp > 1
        m = Layer(h, HEADS[h], tp, sp).to(dev, torch.bfloat16)
        x = torch.randn(T // tp if sp else T, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn_like(x)

        def fb():
            with sdpa_ctx("cudnn"):
                m(x).backward(g)
        for _ in range(3):
            fb()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                fb()
            torch.cuda.synchronize()
        agg = class_times(prof, 5, detail, name)
        for c in ("gemm", "attention", "other"):
            a = agg.get(c, [0.0, 0])
            f.write("%s\t%d\t%d\t%s\t%.1f\t%.1f\n" % (name, h, tp, c, a[0], a[1]))
        del m, x, g
        torch.cuda.empty_cache()
    f.write("# kernels: case class us_per_iter calls_per_iter name\n")
    for d in detail:
        f.write("# " + d + "\n")
    log("profile: %.0f s" % (time.time() - t0))


def gemm_paths_section(f, budget):
    """One shape set timed four ways, interleaved, to tell API paths and
    input data apart: matmul(out=), a @ b, F.linear with a bias (cuBLASLt
    bias epilogue), each on N(0,1) inputs; and F.linear on inputs scaled
    like a layer's (weights U(-1/sqrt(K), 1/sqrt(K)))."""
    t0 = time.time()
    f.write("round\tpath\tM\tN\tK\tseconds\ttflops\tsm_clock_mhz\n")
    shapes = [(4096, 6144, 2048), (4096, 8192, 2048), (4096, 2048, 8192), (8192, 8192, 8192),
              (4096, 6912, 18432), (4096, 18432, 2304), (4096, 9216, 18432), (4096, 18432, 9216),
              (4096, 4096, 4096), (4096, 1536, 6144), (8192, 1024, 4096), (8192, 30528, 1024)]

    def clock():
        try:
            import subprocess
            return int(subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                                      capture_output=True, text=True, timeout=5).stdout.split()[0])
        except Exception:
            return -1
    for rnd in range(2):
        for M, N, K in shapes:
            if time.time() - t0 > budget:
                log("gemm_paths: budget spent")
                return
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
            ws = (torch.rand(N, K, device=dev, dtype=torch.bfloat16) * 2 - 1) / math.sqrt(K)
            b = torch.randn(N, device=dev, dtype=torch.bfloat16)
            c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            for path, fn in (("matmul_out", lambda: torch.matmul(x, w.t(), out=c)),
                             ("matmul", lambda: x @ w.t()),
                             ("linear_bias", lambda: F.linear(x, w, b)),
                             ("linear_bias_scaled", lambda: F.linear(x, ws, b))):
                s = timeit(fn, target=20e-3)
                f.write("%d\t%s\t%d\t%d\t%d\t%.6e\t%.1f\t%d\n" % (rnd, path, M, N, K, s, 2.0 * M * N * K / s / 1e12,
                                                                clock()))
            del x, w, ws, b, c
    torch.cuda.empty_cache()
    log("gemm_paths: %.0f s" % (time.time() - t0))


def steady_section(f, budget):
    """Steady state under the power limit: each workload runs back to back
    for GK_STEADY_S seconds (default 8) while nvidia-smi samples the SM
    clock and power every 200 ms; the mean time per iteration of each
    second is written, then the kernels of 5 more iterations by class
    (the in-context GEMM and attention rates once the clocks have settled)."""
    import subprocess
    from torch.profiler import ProfilerActivity, profile
    dur = float(os.environ.get("GK_STEADY_S", 8))
    f.write("workload\tsecond\titer_s\tsm_mhz\tpower_w\n")
    loads = []
    for name, h, tp in (("layer-1.7b", 2048, 1), ("layer-462b", 18432, 8)):
        m = Layer(h, HEADS[h], tp, tp > 1).to(dev, torch.bfloat16)
        x = torch.randn(4096 // tp, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn_like(x)

        def fb(m=m, x=x, g=g):
            with sdpa_ctx("cudnn"):
                m(x).backward(g)
        loads.append((name, fb))
    a = torch.randn(4096, 9216, device=dev, dtype=torch.bfloat16)
    b = torch.randn(18432, 9216, device=dev, dtype=torch.bfloat16)
    loads.append(("gemm-4096x18432x9216", lambda: a @ b.t()))
    for name, fn in loads:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                                "--format=csv,noheader,nounits", "-lms", "200"],
                               stdout=subprocess.PIPE, text=True)
        t0 = time.time()
        sec, n, ev = 0, 0, []
        s0 = torch.cuda.Event(enable_timing=True)
        s0.record()
        while time.time() - t0 < dur:
            fn()
            n += 1
            if n % 4 == 0:
                torch.cuda.synchronize()
                if time.time() - t0 >= sec + 1:
                    e = torch.cuda.Event(enable_timing=True)
                    e.record()
                    e.synchronize()
                    ev.append((sec, s0.elapsed_time(e) * 1e-3 / n))
                    sec += 1
                    n = 0
                    s0 = torch.cuda.Event(enable_timing=True)
                    s0.record()
        torch.cuda.synchronize()
        # keep it busy while the profiler runs, then stop sampling
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
        smi.terminate()
        out = smi.communicate(timeout=5)[0].strip().splitlines()
        samples = []
        for line in out:
            parts = [p.strip() for p in line.split(",")]
            try:
                samples.append((int(parts[1]), float(parts[2])))
            except (IndexError, ValueError):
                pass
        per = max(1, len(samples) // max(1, len(ev)))
        for i, (sc, it) in enumerate(ev):
            chunk = samples[i * per:(i + 1) * per] or [(-1, -1.0)]
            f.write("%s\t%d\t%.6e\t%.0f\t%.0f\n" % (name, sc, it, sum(c for c, _ in chunk) / len(chunk),
                                                      sum(p for _, p in chunk) / len(chunk)))
        agg = class_times(prof, 5)
        f.write("# %s after %g s: %s\n" % (name, dur, ", ".join("%s %.1f us/iter" % (c, a[0])
                                                                  for c, a in sorted(agg.items()))))
        f.flush()
    log("steady: done")


def reduction_section(f, budget):
    """The kernels approf's reduction class prices (norms, softmax, pooling,
    bias gradients), forward and backward, in bf16 and f32, with the bytes
    approf counts for them: forward inputs + output, backward inputs + twice
    the output (norms and softmax: 2 and 3 passes of the tensor)."""
    t0 = time.time()
    f.write("op\tdtype\tshape\tpass\tbytes\tseconds\tgbs\n")
    for dtype in ("bf16", "f32"):
        t = torch.bfloat16 if dtype == "bf16" else torch.float32
        el = 2 if dtype == "bf16" else 4
        cases = []
        for rows, cols in ((8192, 1024), (4096, 4096), (8192, 8192), (4096, 18432)):
            cases.append(("layernorm", (rows, cols)))
            cases.append(("rmsnorm", (rows, cols)))
            cases.append(("softmax", (rows, cols)))
            cases.append(("bias_grad", (rows, cols)))
        for shp in ((256, 64, 112, 112), (256, 256, 56, 56), (256, 512, 28, 28), (256, 1024, 14, 14),
                    (256, 2048, 7, 7)):
            cases.append(("batchnorm", shp))
        cases.append(("maxpool", (256, 64, 112, 112)))
        cases.append(("avgpool_global", (256, 2048, 7, 7)))
        for op, shp in cases:
            if time.time() - t0 > budget:
                log("reduction: budget spent")
                return
            try:
                E = 1
                for d in shp:
                    E *= d
                cl = torch.channels_last if len(shp) == 4 and dtype == "bf16" else torch.contiguous_format
                x = torch.randn(*shp, device=dev, dtype=t).contiguous(memory_format=cl).requires_grad_(True)
                if op == "layernorm":
                    w = torch.randn(shp[-1], device=dev, dtype=t)
                    fn = lambda: F.layer_norm(x, (shp[-1],), w, w)
                    out_e = E
                elif op == "rmsnorm":
                    w = torch.randn(shp[-1], device=dev, dtype=t)
                    fn = lambda: F.rms_norm(x, (shp[-1],), w)
                    out_e = E
                elif op == "softmax":
                    fn = lambda: torch.softmax(x, dim=-1)
                    out_e = E
                elif op == "bias_grad":
                    fn = lambda: x.sum(0)
                    out_e = shp[-1]
                elif op == "batchnorm":
                    c = shp[1]
                    w = torch.ones(c, device=dev, dtype=torch.float32)   # f32 parameters, as AMP keeps them
                    rm = torch.zeros(c, device=dev, dtype=torch.float32)
                    rv = torch.ones_like(rm)
                    fn = lambda: F.batch_norm(x, rm, rv, w, w, training=True)
                    out_e = E
                elif op == "maxpool":
                    fn = lambda: F.max_pool2d(x, 3, 2, 1)
                    out_e = E // 4
                else:
                    fn = lambda: x.mean((2, 3))
                    out_e = E // (shp[2] * shp[3])
                fw = timeit(lambda: fn())
                y = fn()
                g = torch.randn_like(y)
                bw = timeit(lambda: torch.autograd.grad(y, x, g, retain_graph=True))
                for ps, sec, nb in (("fwd", fw, (E + out_e) * el), ("bwd", bw, (E + 2 * out_e) * el)):
                    f.write("%s\t%s\t%s\t%s\t%d\t%.6e\t%.1f\n" % (op, dtype, "x".join(map(str, shp)), ps, nb, sec,
                                                                 nb / sec / 1e9))
                del x, y, g
            except RuntimeError as ex:
                log("reduction %s %s: %s" % (op, dtype, str(ex).splitlines()[0]))
            torch.cuda.empty_cache()
    f.flush()
    log("reduction: %.0f s" % (time.time() - t0))


class _MegatronCE(torch.autograd.Function):
    """Megatron-Core's unfused vocab_parallel_cross_entropy on one rank
    (megatron/core/tensor_parallel/cross_entropy.py at f2e5db402c): an f32
    copy of the logits, max, in-place subtraction, exp, sum, division (the
    softmax kept for the backward), then grad = softmax - onehot times the
    output gradient, cast back by autograd."""
    @staticmethod
    def forward(ctx, logits, target):
        x = logits.float()
        mx = torch.max(x, dim=-1)[0]
        x -= mx.unsqueeze(-1)
        pred = x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        torch.exp(x, out=x)
        s = x.sum(dim=-1)
        loss = torch.log(s) - pred
        x.div_(s.unsqueeze(-1))
        ctx.sm, ctx.target = x, target   # no version check: the backward updates it in place
        return loss

    @staticmethod
    def backward(ctx, g):
        sm, target = ctx.sm, ctx.target
        grad = sm           # in place on the saved softmax, as Megatron does
        grad.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(target, dtype=grad.dtype).unsqueeze(-1))
        grad.mul_(g.unsqueeze(-1))
        return grad, None


def loss_section(f, budget):
    """The GPT loss over the logits of one micro-batch: Megatron's f32
    cross-entropy and PyTorch's F.cross_entropy on the 16-bit logits,
    forward and backward (the backward includes the cast back to bf16)."""
    t0 = time.time()
    f.write("impl\ttokens\tvocab\tpass\tseconds\tlogit_bytes\n")
    for T, V in ((4096, 131072), (4096, 65536), (4096, 32768), (2048, 51200)):
        if time.time() - t0 > budget:
            break
        logits = torch.randn(T, V, device=dev, dtype=torch.bfloat16, requires_grad=True)
        target = torch.randint(0, V, (T,), device=dev)
        g = torch.randn(T, device=dev)
        for impl, fn in (("megatron_f32", lambda: _MegatronCE.apply(logits, target)),
                         ("torch_bf16", lambda: F.cross_entropy(logits, target, reduction="none"))):
            fw = timeit(fn)
            y = fn()
            fb = timeit(lambda: torch.autograd.grad(y, logits, g.to(y.dtype), retain_graph=True))
            f.write("%s\t%d\t%d\tfwd\t%.6e\t%d\n%s\t%d\t%d\tbwd\t%.6e\t%d\n" % (impl, T, V, fw, T * V * 2, impl, T, V,
                                                                                fb, T * V * 2))
            del y
        del logits, target, g
        torch.cuda.empty_cache()
    f.flush()
    log("loss: %.0f s" % (time.time() - t0))


def main():
    p = torch.cuda.get_device_properties(0)
    log("device: %s, %d SMs, %.1f GiB, torch %s, cuda %s, cudnn %s" % (
        p.name, p.multi_processor_count, p.total_memory / 2**30, torch.__version__,
        torch.version.cuda, torch.backends.cudnn.version()))
    torch.manual_seed(0)
    budgets = {"gemm": float(os.environ.get("GK_GEMM_S", 150)), "memory": 30, "attention": 60, "layer": 90, "profile": 60, "gemm_paths": 90, "steady": 60, "reduction": 60, "loss": 40}
    only = os.environ.get("GK_SECTIONS", "memory,reduction,loss,attention,layer,profile,gemm_paths,steady,gemm").split(",")
    for sec, fn in (("memory", memory_section), ("reduction", reduction_section), ("loss", loss_section),
                    ("attention", attention_section),
                    ("layer", layer_section), ("profile", profile_section),
                    ("gemm_paths", gemm_paths_section), ("steady", steady_section), ("gemm", gemm_section)):
        if sec not in only:
            continue
        with open(os.path.join(OUT, sec + ".tsv"), "w") as f:
            try:
                fn(f, budgets[sec])
            except Exception as ex:  # keep the other sections' figures
                log("%s: failed: %r" % (sec, ex))
    set_tf32(False)


if __name__ == "__main__":
    main()
