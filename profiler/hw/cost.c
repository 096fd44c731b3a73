/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The analytic cost formulas: ring collectives on the link a mesh axis
 * crosses (docs/alpa-semantics.md, exact formulas in hardware.h) unless the spec carries
 * a measured curve for the collective (comm_curves.c), the roofline time of one
 * kernel (or a GEMM's from the measured rates per shape, gemm_table.c), and
 * interpolation in a measured communication curve. Pure
 * functions of their arguments, evaluated in a fixed order so that equal
 * inputs give bit-identical results.
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "hardware.h"
#include "stage.h"

/* The spec's fabric in costdb's terms: the one price of a collective
 * (costdb/collective.c), which the solver's full estimate uses too. */
static void fabric_of(const ApprofHardwareSpec *hw, CostdbFabric *f)
{
    assert(hw && f);
    memset(f, 0, sizeof *f);
    f->intra_bandwidth = hw->intra_host_bandwidth;
    f->intra_latency = hw->intra_host_latency;
    f->inter_bandwidth = hw->inter_host_bandwidth;
    f->inter_latency = hw->inter_host_latency;
    f->gpus_per_host = hw->gpus_per_host;
    f->nics_per_host = hw->nics_per_host;
    f->nic_bandwidth = hw->nic_bandwidth;
    f->bus_efficiency = hw->bus_efficiency;
    f->memory_bandwidth = hw->memory_bandwidth;
    f->memory_efficiency = hw->memory_efficiency;
    f->scaleup_gpus = hw->scaleup_gpus;
    f->intra_full_mesh = hw->intra_host_full_mesh;
}

double approf_link_bandwidth(const ApprofHardwareSpec *hw, int group_size, int hosts,
                             int crosses_hosts)
{
    CostdbFabric f;
    if (!hw)
        return 0.0;
    fabric_of(hw, &f);
    return costdb_fabric_bandwidth(&f, group_size, hosts, crosses_hosts);
}

double approf_collective_seconds(const ApprofHardwareSpec *hw, ApprofCollKind kind,
                                 double bytes, int group_size, int crosses_hosts)
{
    CostdbFabric f;
    if (!hw || group_size <= 1 || !(bytes > 0))
        return 0.0;
    fabric_of(hw, &f);
    return costdb_collective_seconds(&f, (CostdbCollKind)kind, bytes, group_size, 0,
                                     crosses_hosts);
}

/* The collective on its link: a measured curve for the group's hosts x
 * GPUs, else NCCL's tuning model (costdb_collective_seconds). */
static double link_cost(const ApprofHardwareSpec *hw, const ApprofCollective *c)
{
    CostdbFabric f;
    if (!hw || !c)
        return 0.0;
    if (hw->curves && c->group_size > 1 && c->bytes > 0 && c->hosts > 0 &&
        c->group_size % c->hosts == 0) {
        double t = approf_comm_curves_seconds(hw->curves, c->kind, c->hosts,
                                              c->group_size / c->hosts, c->bytes);
        if (t >= 0)
            return t;
    }
    if (c->group_size <= 1 || !(c->bytes > 0))
        return 0.0;
    fabric_of(hw, &f);
    /* a scale-up domain of several hosts: a strided group is counted by
     * the hosts it spans, not the ones it holds GPUs on */
    if (c->span_hosts > 0 && costdb_fabric_node_gpus(&f) > f.gpus_per_host)
        return costdb_domain_collective_seconds(
            &f, (CostdbCollKind)c->kind, c->bytes, c->group_size,
            costdb_collective_domains(&f, c->group_size, c->hosts, c->span_hosts,
                                      c->crosses_hosts));
    return costdb_collective_seconds(&f, (CostdbCollKind)c->kind, c->bytes, c->group_size,
                                     c->hosts, c->crosses_hosts);
}

/* passes streaming kernels over bytes, each reading and writing them
 * (rw = 2) or writing them only (rw = 1), priced as any copy kernel */
static double memory_passes_seconds(const ApprofHardwareSpec *hw, int op, int passes,
                                    double rw, double bytes)
{
    ApprofKernel k;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_COPY;
    k.op = op;
    k.dtype = APPROF_F32;
    k.bytes = rw * bytes;
    return (double)passes * approf_kernel_seconds(hw, &k);
}

/* The per-rank copies of a ZeRO-3 collective in torch.distributed's list
 * form (hw->zero3_rank_copies): DeepSpeed's stage 3 up to v0.5.0 gathers
 * each parameter with all_gather(list of world_size chunks, ...) and
 * reduce-scatters each gradient with reduce_scatter(out, list of
 * world_size chunks) (deepspeed/runtime/zero/partition_parameters.py
 * _allgather_param, _reduce_scatter_gradient, v0.3.13 to v0.5.0).
 * PyTorch's ProcessGroupNCCL runs those on one flat buffer and copies
 * every rank's chunk out of it after the all-gather (allgather's post
 * hook) or into it before the reduce-scatter (reduce_scatter's pre hook),
 * one copy_ per rank on the NCCL stream (torch/lib/c10d/ProcessGroupNCCL.cpp
 * at pytorch 00f5dfd5). So each such collective also runs group_size
 * copy kernels of bytes / group_size, each read and written once, on the
 * stream the collective runs on: the one term of a ZeRO-3 step that grows
 * with the data-parallel degree at a fixed model. Each copy is priced as
 * any copy kernel (approf_kernel_seconds: the bytes at the memory
 * bandwidth plus the spec's kernel_launch_overhead, at least its
 * host_overhead). Only the collectives an overlapping ZeRO-3 schedule
 * marks (zero3_unit) are ZeRO-3's; 0 for every other. */
static double rank_copies_seconds(const ApprofHardwareSpec *hw, const ApprofCollective *c)
{
    if (!hw->zero3_rank_copies || c->zero3_unit <= 0 || c->group_size <= 1 ||
        !(c->bytes > 0) ||
        (c->kind != APPROF_COLL_ALL_GATHER && c->kind != APPROF_COLL_REDUCE_SCATTER))
        return 0.0;
    return memory_passes_seconds(hw, c->op, c->group_size, 2.0,
                                 c->bytes / (double)c->group_size);
}

/* The device work DeepSpeed's stage 3 of v0.3.13 runs around a ZeRO-3
 * collective, in series with it (docs/validation.md, "ZeRO-3 at scale:
 * NCCL of 2021 and the memory passes around each collective"):
 * - hw->zero3_rank_copies (the list form of _allgather_param, v0.3.13 to
 *   v0.5.0): the gathered buffer is allocated with torch.zeros, a fill of
 *   the whole parameter, before the torch.cuda.synchronize() that precedes
 *   the all-gather (deepspeed/runtime/zero/partition_parameters.py at
 *   v0.3.13, lines 607-611; the same at v0.3.16, v0.4.0, v0.5.0);
 * - hw->zero3_grad_all_reduce (buffered_reduce_fallback,
 *   deepspeed/runtime/zero/stage3.py at v0.3.13, lines 1794-1828):
 *   allreduce_bucket flattens the bucket (torch.cat), divides it by the
 *   world size in place before the all-reduce, and allreduce_and_copy
 *   copies the reduced values back into the gradients, all on the
 *   reduction stream the all-reduce waits on: three passes that read and
 *   write the bucket.
 * Only the collectives an overlapping ZeRO-3 schedule marks (zero3_unit). */
static double zero3_memory_passes_seconds(const ApprofHardwareSpec *hw,
                                          const ApprofCollective *c)
{
    if (c->zero3_unit <= 0 || c->group_size <= 1 || !(c->bytes > 0))
        return 0.0;
    if (hw->zero3_rank_copies && c->kind == APPROF_COLL_ALL_GATHER)
        return memory_passes_seconds(hw, c->op, 1, 1.0, c->bytes);
    if (hw->zero3_grad_all_reduce && c->kind == APPROF_COLL_ALL_REDUCE)
        return memory_passes_seconds(hw, c->op, 3, 2.0, c->bytes);
    return 0.0;
}

/* DeepSpeed's copies after every optimizer step, in series with it (the
 * gather of the persistent parameters, stage3.py _post_step at v0.3.13;
 * sharding/program_zero.c, shard_zero3_post_step): p's
 * zero3_post_step_copies copy kernels, each reading and writing its share
 * of zero3_post_step_bytes, priced as any copy kernel (the bytes at the
 * memory bandwidth plus the spec's kernel_launch_overhead): the spec's
 * kernel-level figures, no constant of its own. 0 without copies. */
static double zero3_post_step_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    double n = p->zero3_post_step_copies;
    if (!(n >= 1.0) || !(p->zero3_post_step_bytes > 0))
        return 0.0;
    return n * memory_passes_seconds(hw, 0, 1, 2.0, p->zero3_post_step_bytes / n);
}

double approf_collective_cost(const ApprofHardwareSpec *hw, const ApprofCollective *c)
{
    if (!hw || !c)
        return 0.0;
    return link_cost(hw, c) + rank_copies_seconds(hw, c) + zero3_memory_passes_seconds(hw, c);
}

ApprofDtype approf_mixed_precision_dtype(const ApprofHardwareSpec *hw)
{
    if (approf_math_class(hw, APPROF_BF16) == APPROF_MATH_F16)
        return APPROF_BF16;
    if (approf_math_class(hw, APPROF_F16) == APPROF_MATH_F16)
        return APPROF_F16;
    return APPROF_F32;
}

ApprofMathClass approf_math_class(const ApprofHardwareSpec *hw, ApprofDtype dt)
{
    if (!hw)
        return APPROF_MATH_FP32;
    switch (dt) {
    case APPROF_F16:
    case APPROF_BF16:
        return hw->peak_flops[dt] > hw->peak_flops[APPROF_F32] ? APPROF_MATH_F16 : APPROF_MATH_FP32;
    default:
        return hw->allow_tf32 && hw->peak_flops_tf32 > 0 ? APPROF_MATH_TF32 : APPROF_MATH_FP32;
    }
}

void approf_kernel_rate(const ApprofHardwareSpec *hw, ApprofKernelKind kind, ApprofDtype dt,
                        double *peak, double *eff)
{
    double p = 0.0, e = 0.0, f;
    ApprofMathClass mc;

    if (!(dt >= APPROF_F32 && dt <= APPROF_BF16))
        dt = APPROF_F32;
    mc = approf_math_class(hw, dt);
    if (hw && (kind == APPROF_K_GEMM || kind == APPROF_K_CONV_FWD ||
               kind == APPROF_K_CONV_BWD_DATA || kind == APPROF_K_CONV_BWD_FILTER)) {
        p = mc == APPROF_MATH_TF32 ? hw->peak_flops_tf32
            : mc == APPROF_MATH_F16 ? hw->peak_flops[dt]
                                    : hw->peak_flops[APPROF_F32];
        if (kind == APPROF_K_GEMM) {
            e = hw->gemm_eff[mc] > 0 ? hw->gemm_eff[mc] : hw->gemm_efficiency;
        } else {
            e = hw->conv_eff[mc] > 0 ? hw->conv_eff[mc] : hw->conv_efficiency;
            f = kind == APPROF_K_CONV_BWD_DATA     ? hw->conv_bwd_data_factor
                : kind == APPROF_K_CONV_BWD_FILTER ? hw->conv_bwd_filter_factor
                                                   : 1.0;
            if (f > 0)
                e *= f;
            if (e > 1.0)
                e = 1.0;
        }
    }
    if (peak)
        *peak = p;
    if (eff)
        *eff = e;
}

/* GEMM epilogue (schemas/hardware-spec.md, "GEMM epilogue"): a tiled GEMM
 * kernel streams A and B under its math (the main loop), then stores its C
 * tile once the tile's K loop is done. In the multistage kernels of Volta
 * and Ampere (CUTLASS 2.x, cuBLAS) the threadblock's math waits for that
 * store; only Hopper's warp-specialized ping-pong kernels overlap one
 * tile's epilogue with another's math (CUTLASS media/docs/efficient_gemm.md,
 * "Warp-Specialized Persistent Ping-Pong"). So a GEMM takes
 * max(math, loads) + the exposed part of the store, where the plain
 * roofline took max(math, loads + store). */
static double gemm_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k, double compute_t,
                           double mem_rate, double mem_t)
{
    double store, load_t, store_t, hidden;
    assert(hw && k && k->kind == APPROF_K_GEMM);
    if (!(k->store_bytes > 0) || k->store_bytes > k->bytes || !(mem_rate > 0))
        return compute_t > mem_t ? compute_t : mem_t;
    store = k->store_bytes;
    load_t = (k->bytes - store) / mem_rate;
    store_t = store / mem_rate;
    /* the hidden part of the store runs under the math the loads leave */
    hidden = hw->gemm_store_overlap * store_t;
    if (hidden > compute_t - load_t)
        hidden = compute_t > load_t ? compute_t - load_t : 0.0;
    return (compute_t > load_t ? compute_t : load_t) + store_t - hidden;
}

/* A tensor-core GEMM whose M, N or K is not a multiple of 16 bytes cannot
 * use the kernels that load its operands 16 bytes at a time (NVIDIA,
 * "Matrix Multiplication Background User's Guide", "Tensor Core
 * Requirements"): 1 when the spec prices that (gemm_unaligned_factor > 0)
 * and this GEMM is one. */
static int gemm_unaligned(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    ApprofMathClass mc;
    int64_t a;
    assert(hw && k);
    if (!(hw->gemm_unaligned_factor > 0))
        return 0;
    mc = k->fp8 ? APPROF_MATH_FP8 : approf_math_class(hw, k->dtype);
    if (mc != APPROF_MATH_F16 && mc != APPROF_MATH_TF32 && mc != APPROF_MATH_FP8)
        return 0;
    /* elements in 16 bytes: f32, f16/bf16, FP8 */
    a = mc == APPROF_MATH_TF32 ? 4 : mc == APPROF_MATH_FP8 ? 16 : 8;
    return (k->m > 0 && k->m % a) || (k->n > 0 && k->n % a) || (k->k > 0 && k->k % a);
}

/* Measured GEMM rates (schemas/hardware-spec.md, "Measured GEMM rates"):
 * a GEMM whose dtype the spec's table holds a complete grid for takes
 * flops / rate, the rate interpolated in the grid (hw/gemm_table.c). The
 * probe timed whole GEMMs back to back, so the rate already holds what
 * gemm_seconds adds to the main loop (the epilogue's store of C) and the
 * gap between launches (kernel_launch_overhead): neither is added again.
 * What the roofline charges the kernel's bytes (memory time plus the
 * launch overhead) stays a floor: it binds off the grid, where a size
 * clamped to the grid's edge would give a skinny or tiny GEMM the rate of
 * a 512^3 one (approf probe's smallest). A fused attention's GEMMs are no
 * cuBLAS GEMMs and keep attention_efficiency; an unaligned GEMM keeps its
 * gemm_unaligned_factor (the grid's sizes are all aligned). Negative: the
 * table does not price k. */
static double gemm_table_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k, double mem_t)
{
    double m, rate, t, floor_t;
    assert(hw && k);
    if (!hw->gemm_table || k->kind != APPROF_K_GEMM || k->attention || !(k->flops > 0) ||
        k->fp8)
        return -1.0; /* an FP8 GEMM: the roofline at the FP8 peak (docs/fp8.md) */
    /* A strided batch of b GEMMs of m x n x k is one kernel over b times
     * one GEMM's tiles: its grid of output tiles, its waves over the SMs
     * and its one launch are those of a (b m) x n x k GEMM, which is what
     * it is priced as. The rate of one m x n x k GEMM would price a kernel
     * that fills a fraction of the GPU and b launches (an attention's
     * 1024 x 1024 x 64 heads, 32 of them per sample). */
    m = (double)(k->batch > 1 ? k->batch : 1) * (double)k->m;
    rate = approf_gemm_table_rate(hw->gemm_table, approf_gemm_table_dtype(hw, k->dtype), m,
                                  (double)k->n, (double)k->k);
    if (!(rate > 0))
        return -1.0;
    if (gemm_unaligned(hw, k))
        rate *= hw->gemm_unaligned_factor;
    t = k->flops / rate;
    floor_t = mem_t + hw->kernel_launch_overhead;
    return t > floor_t ? t : floor_t;
}

double approf_stream_kernel_seconds(const ApprofHardwareSpec *hw, double bytes, double rate)
{
    double s = bytes / rate + hw->kernel_launch_overhead;
    return s > hw->host_overhead ? s : hw->host_overhead;
}

/* A cross-entropy over 16-bit logits computed as Megatron-LM's
 * vocab_parallel_cross_entropy does (megatron/core/tensor_parallel/
 * cross_entropy.py at f2e5db402c): forward an f32 copy of the logits, its
 * maximum, an in-place subtraction, exponential, sum and division (the
 * softmax kept for the backward); backward the softmax times the output
 * gradient in place, then the cast back to 16 bits. Bytes per logit:
 * 2 + 4 | 4 | 8 | 8 | 4 | 8 forward, 8 | 4 + 2 backward; the maximum and
 * the sum are reductions. Each kernel at least the host overhead. */
static double loss_f32_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    static const double fwd[6] = {6, 4, 8, 8, 4, 8}, bwd[2] = {8, 6};
    static const int fwd_red[6] = {0, 1, 0, 0, 1, 0};
    double stream = hw->memory_bandwidth * hw->memory_efficiency, red, t = 0.0, e = (double)k->elements;
    int n = k->loss == 1 ? 6 : 2;
    red = hw->reduction_efficiency > 0 ? hw->memory_bandwidth * hw->reduction_efficiency : stream;
    if (!(stream > 0) || !(red > 0))
        return INFINITY;
    for (int i = 0; i < n; i++) {
        double b = (k->loss == 1 ? fwd[i] : bwd[i]) * e;
        t += approf_stream_kernel_seconds(hw, b, k->loss == 1 && fwd_red[i] ? red : stream);
    }
    return t;
}

static double kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k);

/* A kernel's time, and after a cross-entropy's backward (loss 2) the
 * framework's no-grad metric passes over the logits (hw/loss_metric.c;
 * 0 for every other kernel, added all the same so that the sum's bits do
 * not depend on the test: the call skipped on the sweep's hot path) */
double approf_kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    return kernel_seconds(hw, k) + (k && k->loss == 2 ? approf_loss_metric_seconds(hw, k) : 0.0);
}

static double kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    double mem_rate, mem_t, eff, peak, compute_t, t;

    if (!hw || !k)
        return 0.0;
    if (k->loss && hw->loss_f32 && k->dtype != APPROF_F32 && k->elements > 0)
        return loss_f32_seconds(hw, k);
    mem_rate = hw->memory_bandwidth * hw->memory_efficiency;
    mem_t = k->bytes > 0 ? (mem_rate > 0 ? k->bytes / mem_rate : INFINITY) : 0.0;
    switch (k->kind) {
    case APPROF_K_GEMM:
    case APPROF_K_CONV_FWD:
    case APPROF_K_CONV_BWD_DATA:
    case APPROF_K_CONV_BWD_FILTER:
        if ((t = gemm_table_seconds(hw, k, mem_t)) >= 0)
            break; /* a measured GEMM rate */
        approf_kernel_rate(hw, k->kind, k->dtype, &peak, &eff);
        if (k->fp8 && k->kind == APPROF_K_GEMM && hw->peak_flops_fp8 > 0) {
            /* FP8 tensor cores (Transformer Engine's linear layers,
             * docs/fp8.md): the FP8 peak at the FP8 class's GEMM
             * efficiency, else the spec's one GEMM efficiency, as the
             * 16-bit GEMMs take theirs */
            peak = hw->peak_flops_fp8;
            eff = hw->gemm_eff[APPROF_MATH_FP8] > 0 ? hw->gemm_eff[APPROF_MATH_FP8]
                                                    : hw->gemm_efficiency;
        }
        /* A fused attention kernel (flash / cuDNN) runs its GEMMs between
         * the softmax's exponentials and rescaling on chip: it reaches a
         * lower share of the tensor-core peak than a plain GEMM
         * (schemas/hardware-spec.md, "Fused attention"). */
        if (k->kind == APPROF_K_GEMM && k->attention && approf_attention_efficiency(hw, k) > 0)
            eff = approf_attention_efficiency(hw, k); /* by key length where given */
        else if (k->kind == APPROF_K_GEMM && !k->attention && gemm_unaligned(hw, k))
            eff *= hw->gemm_unaligned_factor;
        peak *= eff;
        compute_t = k->flops > 0 ? (peak > 0 ? k->flops / peak : INFINITY) : 0.0;
        if (k->kind == APPROF_K_GEMM)
            t = gemm_seconds(hw, k, compute_t, mem_rate, mem_t);
        else
            t = compute_t > mem_t ? compute_t : mem_t;
        t += hw->kernel_launch_overhead;
        break;
    case APPROF_K_REDUCTION:
        /* norms, softmax, pooling, losses, bias gradients: block-wide
         * reductions between their loads and stores reach a lower share of
         * the bandwidth than a streaming kernel (schemas/hardware-spec.md,
         * "Reductions") */
        if (hw->reduction_efficiency > 0 && k->bytes > 0)
            mem_t = k->bytes / (hw->memory_bandwidth * hw->reduction_efficiency);
        t = mem_t + hw->kernel_launch_overhead;
        break;
    default:
        /* elementwise, gather, copy: memory bound */
        t = mem_t + hw->kernel_launch_overhead;
        break;
    }
    /* The host issues kernels ahead of the device; a kernel shorter than
     * the framework's per-kernel host work waits for it. */
    return t > hw->host_overhead ? t : hw->host_overhead;
}

double approf_collective_seconds_curve(const CostdbCommPoint *pts, size_t n, double bytes)
{
    const CostdbCommPoint *a, *b;
    double t;
    size_t i, j;

    if (!pts || n == 0 || !(bytes > 0))
        return 0.0;
    if (bytes <= (double)pts[0].bytes)
        return pts[0].seconds; /* below the smallest size: latency floor */
    for (i = 1; i < n; i++) {
        if (bytes <= (double)pts[i].bytes) {
            a = &pts[i - 1];
            b = &pts[i];
            /* a->bytes < bytes <= b->bytes, so the span is not empty */
            return a->seconds + (b->seconds - a->seconds) * (bytes - (double)a->bytes) /
                                    (double)(b->bytes - a->bytes);
        }
    }
    /* Above the largest size: the slope of the last two distinct sizes. */
    b = &pts[n - 1];
    for (j = n - 1; j > 0 && pts[j - 1].bytes >= b->bytes; j--)
        ;
    if (j == 0) {
        /* a single size: proportional to bytes (bandwidth bound) */
        return b->bytes > 0 ? b->seconds * bytes / (double)b->bytes : b->seconds;
    }
    a = &pts[j - 1];
    t = b->seconds + (b->seconds - a->seconds) * (bytes - (double)b->bytes) /
                         (double)(b->bytes - a->bytes);
    /* A noisy curve can fall at its end; never extrapolate below the last
     * point's time. */
    return t > b->seconds ? t : b->seconds;
}

/* Compute beside a collective: the GEMM slowdown `approf probe` measures
 * with two streams on >= 2 GPUs (profiler/cuda/probe_overlap.c; the CUDA
 * Programming Guide's stream semantics let kernels of two streams share
 * the SMs, so an NCCL kernel's CTAs take SMs and memory bandwidth from the
 * GEMM's). The overlapped part advances at 1 - s of its rate: hidden is
 * min((1 - s) comm, window) (hardware.h). */
double approf_overlap_hidden_at(double s, double comm, double window)
{
    double h;
    if (!(comm > 0.0) || !(window > 0.0) || s >= 1.0)
        return 0.0;
    h = s > 0.0 ? (1.0 - s) * comm : comm; /* exactly comm without a slowdown */
    return h < window ? h : window;
}

/* NCCL launches one CTA per channel (src/enqueue.cc at v2.21.5-1,
 * grid = plan->channelCount) of up to NCCL_MAX_NTHREADS = 640 threads and
 * ~80 KiB of dynamic shared memory on sm_80+ (ncclShmemDynamicSize); a
 * large cuBLAS/CUTLASS GEMM CTA holds 144 KiB (A100) to 192 KiB (H100) of
 * mainloop stages, so the two never share an SM and the GEMM runs on the
 * SMs the collective leaves (docs/hardware.md "NCCL's channels"). A
 * measured figure (approf probe) wins. */
double approf_overlap_slowdown(const ApprofHardwareSpec *hw)
{
    if (!hw)
        return 0.0;
    if (hw->overlap_gemm_slowdown > 0.0)
        return hw->overlap_gemm_slowdown;
    if (hw->nccl_channels > 0 && hw->sm_count > hw->nccl_channels)
        return (double)hw->nccl_channels / (double)hw->sm_count;
    return 0.0;
}

double approf_overlap_hidden(const ApprofHardwareSpec *hw, double comm, double window)
{
    return approf_overlap_hidden_at(approf_overlap_slowdown(hw), comm, window);
}

double approf_overlap_stretch(const ApprofHardwareSpec *hw, double compute, double comm)
{
    double s = approf_overlap_slowdown(hw), beside;
    if (!(s > 0.0) || !(comm > 0.0) || !(compute > 0.0) || !isfinite(comm) || !isfinite(compute))
        return 0.0;
    if (s >= 1.0)
        return comm; /* nothing advances beside the collective */
    /* the compute runs beside the collective for comm seconds, or until it
     * is done at 1 - s of its rate */
    beside = compute / (1.0 - s);
    return s * (comm < beside ? comm : beside);
}

double approf_async_hidden(const ApprofHardwareSpec *hw, double seconds, double *window)
{
    double h = hw->tp_async_grad * seconds;
    if (!(h > 0.0) || !(*window > 0.0))
        return 0.0;
    h = approf_overlap_hidden(hw, h, *window);
    *window -= h;
    return h;
}

double approf_stage_apply_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    return approf_stage_apply_seconds_of(hw, p, NULL);
}

/* Elements of the input embedding table's gradient on one device: the
 * scatter-add an embedding's backward lowers to (model/opsem.c; its table's
 * local rows x columns in the kernel's extent x cols, model/kernel_op.c). */
static double embedding_grad_elements(const ApprofStageProgram *p)
{
    double e = 0.0;
    for (size_t i = 0, nk = approf_phase_kernel_count(p, 1); i < nk; i++) {
        const ApprofKernel *k = approf_phase_kernel(p, 1, i);
        if (approf_kernel_is_embedding_grad(k))
            e += (double)k->extent * (double)k->cols;
    }
    return e;
}

/* Seconds of the part of apply collective w (at the width it moves) that
 * starts only once the backward is done (gradients) or that the first
 * forward waits for (ZeRO's all-gather of parameters); ratio is the bytes of
 * a reduced gradient per byte of parameter, emb_elems the stage's embedding
 * table (embedding_grad_elements, which reads the operator fields of the
 * table's backward kernel to find it). The framework reduces gradients in
 * buckets of grad_bucket_bytes bytes as reduced (PyTorch DDP's
 * bucket_cap_mb; Apex DistributedFusedAdam's bucket_cap_mb of its
 * grad_sync_dtype, apex/contrib/optimizers/distributed_fused_adam.py
 * @f3f04924 lines 710-712; Megatron-Core's bucket_size elements x the
 * reduce width, megatron/core/distributed/distributed_data_parallel.py
 * core_r0.8.0 lines 51-54: max(40M, 1M x dp) by default). The buckets fill in
 * the reverse order of the parameters, and the input embedding's gradient is
 * complete only after the backward's last operator, its lookup: so the last
 * bucket holds at least the whole embedding table (Megatron-Core never splits
 * a parameter between buckets, param_and_grad_buffer.py core_r0.8.0; Apex
 * splits it, but every bucket it spans fills only then). The all-gather of
 * the updated parameters (--overlap-param-gather, Apex overlap_param_sync)
 * moves the same buckets in the forward's order, the embedding's first, at
 * the parameters' width. 0 without buckets (all of it may hide). */
static double exposed_tail(const ApprofHardwareSpec *hw, ApprofPriceMemo *m,
                           const ApprofStageProgram *p, const ApprofCollective *w, double ratio,
                           double emb_elems)
{
    ApprofCollective b = *w;
    double param_bytes = p->dtype == APPROF_F32 ? 4.0 : 2.0, cap, emb;
    if (!(hw->grad_bucket_bytes > 0))
        return 0.0;
    if (w->kind == APPROF_COLL_ALL_GATHER) {
        cap = hw->grad_bucket_bytes / ratio;
        emb = emb_elems * param_bytes;
    } else {
        cap = hw->grad_bucket_bytes;
        emb = emb_elems * param_bytes * ratio;
    }
    if (emb > cap)
        cap = emb;
    if (b.bytes > cap)
        b.bytes = cap;
    return approf_price_memo_collective(m, hw, &b);
}

/* approf_stage_apply_seconds with the phases' seconds (NULL: priced here),
 * the backward's embedding gradient elements (emb_known 0: read here) and
 * the collectives priced through m (NULL: not kept) */
static double apply_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                            const double *phase, int emb_known, double emb_elems,
                            ApprofPriceMemo *m)
{
    double t = 0.0, hide[2] = {0.0, 0.0}, ratio, emb;
    int any = 0;
    if (!hw || !p)
        return 0.0;
    for (size_t i = 0; i < p->n_apply_colls && i < 2; i++)
        any |= p->apply_colls[i].group_size > 1 && p->apply_colls[i].bytes > 0;
    if (any && hw->grad_overlap > 0) {
        /* DDP / Megatron --overlap-grad-reduce: gradient buckets are reduced
         * while the last micro-batch's backward still runs; the ZeRO
         * all-gather of updated parameters (--overlap-param-gather) runs
         * under the next forward. */
        hide[0] = hw->grad_overlap * (phase ? phase[0] : approf_phase_seconds(hw, p, 0));
        hide[1] = hw->grad_overlap * (phase ? phase[1] : approf_phase_seconds(hw, p, 1));
    }
    /* gradients reduced in another width than the model's dtype (Megatron
     * reduces bf16 models' gradients in f32); ZeRO's all-gather moves
     * parameters, in the model's dtype */
    ratio = costdb_grad_buffer_ratio(hw->grad_reduce_bytes, p->dtype == APPROF_F32 ? 4.0 : 2.0);
    emb = !(any && hw->grad_overlap > 0) ? 0.0 : emb_known ? emb_elems : embedding_grad_elements(p);
    for (size_t i = 0; i < p->n_apply_colls && i < 2; i++) {
        const ApprofCollective *c = &p->apply_colls[i];
        ApprofCollective w;
        double full, last, h;
        if (c->group_size <= 1 || !(c->bytes > 0))
            continue;
        w = *c;
        if (c->kind != APPROF_COLL_ALL_GATHER)
            w.bytes *= ratio;
        full = approf_price_memo_collective(m, hw, &w);
        h = c->kind == APPROF_COLL_ALL_GATHER ? hide[0] : hide[1];
        if (h > 0) {
            last = exposed_tail(hw, m, p, &w, ratio, emb);
            if (full > last) {
                double hid = approf_overlap_hidden(hw, full - last, h);
                full = hid >= full - last ? last : full - hid;
            } else {
                full = last;
            }
        }
        t += full;
    }
    if (p->optimizer_bytes > 0) {
        CostdbFabric f;
        fabric_of(hw, &f);
        t += costdb_memory_seconds(&f, p->optimizer_bytes);
    }
    return t + zero3_post_step_seconds(hw, p) + approf_metric_sync_seconds(hw, p) +
           approf_grad_presync_seconds(hw, p) +
           approf_param_loop_seconds(hw, p);
}

double approf_stage_apply_seconds_of(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                                     const double *phase)
{
    return apply_seconds(hw, p, phase, 0, 0.0, NULL);
}

double approf_stage_apply_seconds_priced(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                                         const ApprofPhasePrice *phase, ApprofPriceMemo *m)
{
    double s[2];
    if (!phase)
        return apply_seconds(hw, p, NULL, 0, 0.0, m);
    s[0] = phase[0].seconds;
    s[1] = phase[1].seconds;
    return apply_seconds(hw, p, s, 1, phase[1].embedding_elements, m);
}
