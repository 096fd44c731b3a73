/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fused attention of a context-parallel stage, as Transformer Engine's
 * ring runs it.
 *
 * Transformer Engine's p2p context parallelism (v2.8,
 * transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py, AttnFuncWithCPAndKVP2P.forward and backward,
 * cp_p2p_fwd_prepare_qkv; the same split in 7d576ed's attention.py) runs
 * cp attention kernels a layer on each rank, each over the keys it holds
 * or has received: step 0 ("diagonal") a causal kernel over the rank's
 * seq / cp tokens; a step i <= rank ("lower-triangle") a kernel without a
 * mask of all the rank's seq / cp queries against the first half, seq /
 * 2cp, of the received keys; a step i > rank ("upper-triangle") the second
 * half of the queries, seq / 2cp, against all seq / cp received keys. The
 * FLOPs add up to 1/cp of the full causal attention, which is what the cp
 * stage's entry / cp prices; the entry priced them at the efficiency of
 * seq keys, and the kernels are shorter.
 *
 * A kernel without a mask over K keys does per query tile the work of a
 * causal one over 2K keys (K against 2K / 2 on average), without its
 * masked diagonal tile; NVIDIA's cuDNN timings at Llama 3.1's attention
 * on a GB200 put the two within 5 %: no mask at 2048 keys 1232 / 1070
 * TFLOP/s forward / backward against causal at 4096 keys 1297 / 1105, no
 * mask at 4096 1569 / 1261 against causal at 8192 1563 / 1279
 * (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/
 * gb200_918_only_cudnn/llama3.1_20260126_110503.csv, cuDNN 9.18). So the
 * diagonal and lower-triangle kernels take the causal table's figure at
 * seq / cp keys, the upper-triangle ones that at 2 seq / cp. The last
 * rank (cp - 1) runs only the diagonal and lower-triangle steps (i <=
 * rank at every step), and each step waits on the previous rank's keys,
 * so the ring goes at its pace: every kernel at seq / cp keys.
 */
#include <math.h>
#include <string.h>

#include "cp_attention.h"
#include "hardware.h"

_Static_assert(APPROF_ATTN_SEQ_POINTS == 5 && APPROF_ATTN_SEQ_MIN == 2048,
               "CostdbFabric.attention_eff_seq holds the profiler's key-length grid");

double apsolve_cp_attention_eff(const CostdbFabric *f, int64_t keys)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    if (!f)
        return 0.0;
    memset(&hw, 0, sizeof hw);
    memset(&k, 0, sizeof k);
    hw.attention_efficiency = f->attention_efficiency;
    memcpy(hw.attention_eff_seq, f->attention_eff_seq, sizeof hw.attention_eff_seq);
    k.attn_skv = keys;
    return approf_attention_efficiency(&hw, &k);
}

void apsolve_cp_ring_attention(const CostdbFabric *f, int64_t seq, int ring_n, int cp,
                               double samples, double q_width, int layers, int rerun,
                               double *fwd, double *bwd)
{
    double e_full, e_ring, gemm, extra;
    *fwd = *bwd = 0.0;
    if (!f || ring_n <= 1 || cp <= 1 || seq <= 0 || layers <= 0 || !(samples > 0) ||
        !(q_width > 0) || !(f->peak_flops16 > 0))
        return;
    e_full = apsolve_cp_attention_eff(f, seq);
    e_ring = apsolve_cp_attention_eff(f, seq / ring_n);
    if (!(e_full > 0) || !(e_ring > 0) || e_ring == e_full)
        return;
    /* one forward GEMM of the entry's fused attention, a GPU and layer:
     * 2 x samples x heads x seq x ceil(seq / 2) x head size */
    gemm = 2.0 * samples * q_width * (double)seq * (double)((seq + 1) / 2);
    /* the stage's share (1/cp), at the ring's rate instead of the entry's */
    extra = layers * gemm / cp / f->peak_flops16 * (1.0 / e_ring - 1.0 / e_full);
    *fwd = 2.0 * extra;          /* S = QK^T, O = PV */
    *bwd = 5.0 * extra;          /* S again, dV, dP, dQ, dK */
    if (rerun)
        *bwd += *fwd;            /* the recomputed forward runs the ring again */
}

double apsolve_cp_ring_step_seconds(const CostdbFabric *f, int64_t seq, int ring_n, int cp,
                                    double samples, double q_width)
{
    double e, gemm;
    if (!f || ring_n <= 1 || cp <= 1 || seq <= 0 || !(samples > 0) || !(q_width > 0) ||
        !(f->peak_flops16 > 0))
        return 0.0;
    e = apsolve_cp_attention_eff(f, seq / ring_n);
    if (!(e > 0))
        return 0.0;
    /* the stage's forward (two GEMMs of 1/cp of the entry's) in ring_n
     * kernels of equal work */
    gemm = 2.0 * samples * q_width * (double)seq * (double)((seq + 1) / 2);
    return 2.0 * gemm / cp / ring_n / (f->peak_flops16 * e);
}

/*
 * Transformer Engine's all-gather layout (v2.8, context_parallel.py,
 * AttnFuncWithCPAndKVAllGather.forward and backward): K and V all-gathered
 * and reordered to the sequence's order, then on each rank two kernels,
 * one per local query chunk of c = seq / 2cp tokens (chunk ids rank and
 * 2cp - 1 - rank), each over the keys up to its chunk's end
 * (get_kv_seq_info_after_all_gather), causal with the mask at the bottom
 * right. Chunk j's query tiles each hold between j c and (j + 1) c keys,
 * (j + 1/2) c on average: the per-tile work of a causal kernel over
 * (2j + 1) c keys (the rule the ring's kernels take, above), and its
 * flops are (j + 1/2) c^2 of the rank's 2 cp c^2. The ranks do equal
 * work; the slowest mix of rates paces the stage.
 */
void apsolve_cp_allgather_attention(const CostdbFabric *f, int64_t seq, int cp, double samples,
                                    double q_width, int layers, int rerun, double *fwd,
                                    double *bwd, int64_t *keys_min, int64_t *keys_max)
{
    double e_full, gemm, worst = 0.0, extra;
    int64_t c;
    *fwd = *bwd = 0.0;
    if (keys_min)
        *keys_min = 0;
    if (keys_max)
        *keys_max = 0;
    if (!f || cp <= 1 || seq <= 0 || layers <= 0 || !(samples > 0) || !(q_width > 0) ||
        !(f->peak_flops16 > 0))
        return;
    c = seq / (2 * (int64_t)cp);
    e_full = apsolve_cp_attention_eff(f, seq);
    if (c <= 0 || !(e_full > 0))
        return;
    for (int r = 0; r < cp; r++) {
        int j[2] = {r, 2 * cp - 1 - r};
        double t = 0.0;
        for (int k = 0; k < 2; k++) {
            double e = apsolve_cp_attention_eff(f, (2 * (int64_t)j[k] + 1) * c);
            if (!(e > 0))
                return;
            t += (j[k] + 0.5) / (2.0 * cp) / e;
        }
        if (t > worst)
            worst = t;
    }
    if (keys_min)
        *keys_min = c;
    if (keys_max)
        *keys_max = (4 * (int64_t)cp - 1) * c;
    if (fabs(worst * e_full - 1.0) < 1e-12) /* one figure at every length */
        return;
    /* as apsolve_cp_ring_attention: the stage's 1/cp of the entry's
     * forward GEMM, at the slowest rank's rate instead of the entry's */
    gemm = 2.0 * samples * q_width * (double)seq * (double)((seq + 1) / 2);
    extra = layers * gemm / cp / f->peak_flops16 * (worst - 1.0 / e_full);
    *fwd = 2.0 * extra;
    *bwd = 5.0 * extra;
    if (rerun)
        *bwd += *fwd;
}
