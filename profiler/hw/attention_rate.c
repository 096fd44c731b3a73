/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fused attention kernel's efficiency by its key length.
 *
 * A causal flash attention (cuDNN's, the one Transformer Engine runs) does
 * per query tile work in proportion to its keys, plus a fixed part (the
 * tile's loads of Q, its store of O and the log-sum-exp, the masked
 * diagonal tile, the pipeline's fill); on Blackwell, where the tensor
 * cores doubled and the exponential units and shared memory did not, the
 * fixed part is large and the efficiency grows steeply with the key
 * length. NVIDIA's published cuDNN timings at Llama 3.1's attention
 * (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts,
 * sdpa_bf16_benchmark_results_NVIDIA_{B200,GB200}.csv: batch 1, 128 query
 * and 8 key/value heads of 128, causal, BF16) reach, forward and backward
 * together, 0.18 of B200's BF16 peak at 2048 keys and 0.44 at 8192
 * (docs/validation.md, "Fused attention on Blackwell by key length"). The
 * spec's attention_eff_seq holds such figures at 2048 .. 32768 keys; a key
 * length between two of them takes the figure interpolated linearly in
 * log2 of the length, one outside them the nearest's.
 */
#include <math.h>

#include "hardware.h"

double approf_attention_efficiency(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    double x, lo_x = 0.0, lo_v = 0.0, hi_x = 0.0, hi_v = 0.0;
    int have_lo = 0, have_hi = 0;

    if (!hw || !k)
        return 0.0;
    if (k->attn_skv <= 0)
        return hw->attention_efficiency;
    /* the position of k's key length on the grid, in powers of two */
    x = log2((double)k->attn_skv / (double)APPROF_ATTN_SEQ_MIN);
    for (int i = 0; i < APPROF_ATTN_SEQ_POINTS; i++) {
        double v = hw->attention_eff_seq[i];
        if (!(v > 0))
            continue;
        if ((double)i <= x) { /* the last given point at or below x */
            lo_x = i, lo_v = v, have_lo = 1;
        } else if (!have_hi) { /* the first given point above x */
            hi_x = i, hi_v = v, have_hi = 1;
        }
    }
    if (have_lo && have_hi)
        return lo_v + (hi_v - lo_v) * (x - lo_x) / (hi_x - lo_x);
    if (have_lo)
        return lo_v;
    if (have_hi)
        return hi_v;
    return hw->attention_efficiency;
}
