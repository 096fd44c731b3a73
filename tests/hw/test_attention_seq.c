/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fused attention's efficiency by its key length
 * (approf_attention_efficiency, profiler/hw/attention_rate.c): the spec's
 * attention_eff_seq at 2048 .. 32768 keys, interpolated in log2 of the key
 * length between the entries given and clamped at the ends, ahead of the
 * flat attention_efficiency; the Blackwell built-ins carry NVIDIA's cuDNN
 * figures (docs/validation.md, "Fused attention on Blackwell by key
 * length"). Counted by hand on the round spec.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)

/* A causal fused attention's forward S = QK^T on the round spec (bf16 peak
 * 300 TFLOP/s, GEMM efficiency 0.5, no launch overhead): 16 heads of 64
 * over skv keys, sq = skv queries, half the keys (causal); bytes 1 so the
 * time is its FLOPs over the rate. */
static void attention(ApprofHardwareSpec *hw, ApprofKernel *k, int64_t skv)
{
    hw_fixture_round_spec(hw);
    memset(k, 0, sizeof *k);
    k->kind = APPROF_K_GEMM;
    k->dtype = APPROF_BF16;
    k->batch = 16, k->m = skv, k->n = skv / 2, k->k = 64;
    k->flops = 2.0 * 16 * (double)skv * (double)(skv / 2) * 64;
    k->bytes = 1;
    k->attention = 1;
    k->attn_b = 1, k->attn_hq = 16, k->attn_hkv = 16, k->attn_sq = skv, k->attn_skv = skv;
    k->attn_d = 64, k->attn_causal = 1;
}

static void test_by_key_length(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    const double table[5] = {0.2, 0.3, 0.4, 0.5, 0.6};
    attention(&hw, &k, 8192);
    /* no table, no flat figure: the GEMM efficiency, 300e12 x 0.5 */
    CU_ASSERT_EQUAL(approf_attention_efficiency(&hw, &k), 0.0);
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
    /* the flat figure alone */
    hw.attention_efficiency = 0.45;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 135e12));
    /* the table ahead of it: 8192 keys are entry 2, 0.4 x 300e12 */
    memcpy(hw.attention_eff_seq, table, sizeof table);
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.4));
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 120e12));
    /* 6144 keys: log2(6144 / 2048) = log2 3 entries up, between 0.3 and 0.4 */
    attention(&hw, &k, 6144);
    memcpy(hw.attention_eff_seq, table, sizeof table);
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.3 + 0.1 * (log2(3.0) - 1.0)));
    /* below the first entry and above the last: clamped */
    k.attn_skv = 1024;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.2));
    k.attn_skv = 131072;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.6));
    /* only 4096 (0.3) and 16384 (0.5) given: 8192 halfway, 2048 the 4096's */
    memset(hw.attention_eff_seq, 0, sizeof hw.attention_eff_seq);
    hw.attention_eff_seq[1] = 0.3, hw.attention_eff_seq[3] = 0.5;
    k.attn_skv = 8192;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.4));
    k.attn_skv = 2048;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.3));
    /* a plain GEMM keeps the GEMM efficiency */
    attention(&hw, &k, 8192);
    memcpy(hw.attention_eff_seq, table, sizeof table);
    k.attention = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
}

/* The built-ins: B200 and GB200 NVIDIA's cuDNN figures at 2048 .. 32768
 * keys (forward + backward FLOPs over both times, of the BF16 peak:
 * B200 at 8192 keys 1.877 + 5.833 ms for 3.5 x 2.199 TFLOP, 0.444 of
 * 2250 TFLOP/s), Hopper its flat 0.4 at every length. */
static void test_builtins(void)
{
    ApprofHardwareSpec hw, back;
    ApprofKernel k;
    char err[256];
    attention(&hw, &k, 8192);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("b200", &hw), 0);
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.444));
    k.attn_skv = 2048;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.176));
    /* the spec file writes the table and reads it back */
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), 0);
    CU_ASSERT(memcmp(back.attention_eff_seq, hw.attention_eff_seq,
                     sizeof hw.attention_eff_seq) == 0);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &hw), 0);
    k.attn_skv = 8192;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.519));
    /* Hopper: cuDNN 9.19's H200 growth by key length from the 0.4 timed at
     * 4096 keys (profiler/hw/specs.c, ATTN_SEQ_HOPPER) */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.451));
    k.attn_skv = 4096;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.4));
    k.attn_skv = 2048;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.316));
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h200", &hw), 0);
    k.attn_skv = 32768;
    CU_ASSERT(REL(approf_attention_efficiency(&hw, &k), 0.484));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"by key length", test_by_key_length},
        {"built-ins", test_builtins},
    };
    return CUNIT_RUN("hw-attention-seq", tests);
}
