/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blackwell's GEMM efficiencies from a published B200 kernel table
 * (docs/validation.md, "Blackwell GEMM rates from published B200 kernel
 * figures"): vLLM pull request 19566's bench_fp8_gemm.py run on a B200,
 * M = 16384 tokens, N = 6144, K = 4096 (Llama 3.1 8B's QKV projection):
 * per-tensor-scaled FP8 (E4M3) 2544.7 TFLOP/s without the quantization
 * kernel, torch's BF16 matmul (cuBLAS) 1512.8 TFLOP/s, over HGX B200's dense
 * peaks 4500 and 2250, to two places. gb200-nvl72 takes the same fractions
 * of its own peaks (the same GPU; an assumption, no GB200 GEMM table was
 * found). An FP8 GEMM of that shape prices at the figure's rate.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "hardware.h"

#define TF 1e12
#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)

static const double fp8_b200 = 2544.7, bf16_b200 = 1512.8; /* TFLOP/s */

static void test_builtins(void)
{
    const char *names[] = {"b200", "gb200-nvl72"};
    for (int i = 0; i < 2; i++) {
        ApprofHardwareSpec hw;
        CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin(names[i], &hw), APPROF_OK);
        CU_ASSERT_DOUBLE_EQUAL(hw.gemm_eff[APPROF_MATH_FP8], round(fp8_b200 / 4500 * 100) / 100,
                               1e-12);
        CU_ASSERT_DOUBLE_EQUAL(hw.gemm_eff[APPROF_MATH_F16], round(bf16_b200 / 2250 * 100) / 100,
                               1e-12);
        /* TF32 has no Blackwell figure: it keeps 0.7 */
        CU_ASSERT_DOUBLE_EQUAL(hw.gemm_eff[APPROF_MATH_TF32], 0.7, 1e-12);
    }
}

/* The figure's own GEMM, FP8 on the b200 built-in, compute-bound: its
 * FLOPs at 0.57 of 4500 TFLOP/s plus the launch (within 2.5 % of the
 * published 2544.7). */
static void test_fp8_gemm_rate(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    double m = 16384, n = 6144, kk = 4096, t;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("b200", &hw), APPROF_OK);
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.dtype = APPROF_BF16;
    k.fp8 = 1;
    k.batch = 1;
    k.m = (int64_t)m, k.n = (int64_t)n, k.k = (int64_t)kk;
    k.flops = 2 * m * n * kk;
    k.bytes = m * kk + kk * n + 2 * m * n; /* A, B one byte; C two */
    t = approf_kernel_seconds(&hw, &k);
    CU_ASSERT(REL(t, k.flops / (4500 * TF * 0.57) + hw.kernel_launch_overhead));
    CU_ASSERT(fabs(k.flops / (t - hw.kernel_launch_overhead) / TF - fp8_b200) < 0.025 * fp8_b200);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the Blackwell built-ins' GEMM efficiencies", test_builtins},
        {"an FP8 GEMM at the published B200 shape", test_fp8_gemm_rate},
    };
    return CUNIT_RUN("blackwell_gemm", tests);
}
