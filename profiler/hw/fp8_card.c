/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a card does with an FP8 recipe (approf sweep --fp8-recipe,
 * docs/fp8.md); the recipes' facts are costdb/fp8_recipe.c's. With
 * Transformer Engine at d0067d0da6:
 * - MXFP8 runs on compute capability 10.x only (_compute_mxfp8_support,
 *   transformer_engine/pytorch/quantization.py);
 * - on a card whose FP8 GEMMs take non-TN layouts (compute capability
 *   10.x-11.x and 13+: is_non_tn_fp8_gemm_supported, pytorch/utils.py)
 *   a per-tensor-scaled FP8 tensor (delayed and current scaling) keeps
 *   its data only, no transposed copy, whatever usages it is asked for
 *   (Float8Quantizer::create_tensor and
 *   Float8CurrentScalingQuantizer::create_tensor in
 *   pytorch/csrc/quantizer.cpp: with_data = rowwise_usage ||
 *   non_tn, with_transpose = columnwise_usage && !non_tn).
 * - Float8BlockScaling (blockwise) runs on compute capability 9.0 and up
 *   (_compute_fp8_block_scaling_support, pytorch/quantization.py line
 *   178): natively on Hopper (cuBLAS's VEC128_32F / BLK128x128_32F
 *   scales, common/gemm/cublaslt_gemm.cu lines 570-600), emulated with
 *   MXFP8 on sm_arch >= 100, "as it is not natively supported by
 *   cublasLt" (pytorch/csrc/extensions/gemm.cpp lines 312-322 for a
 *   GEMM, lines 577-606 for a grouped GEMM, one conversion per expert):
 *   before each GEMM, convert_block_scaling_to_mxfp8_tensor
 *   (pytorch/csrc/extensions/swizzle.cpp lines 303-356) runs one kernel
 *   per operand, nvte_swizzle_block_scaling_to_mxfp8_scaling_factors
 *   (common/swizzle/swizzle_block_scaling.cu lines 138-240), reading the
 *   operand's FP32 block scales and writing GEMM-swizzled E8M0 scales,
 *   one byte per 32 elements ([ceil(rows/128)*128, ceil(cols/128)*4]),
 *   over the same FP8 data; both quantized copies are kept (Float8Block
 *   Quantizer::create_tensor, pytorch/csrc/quantizer.cpp lines 1061-1110,
 *   has no non-TN shortcut);
 * - MXFP8's GEMMs read scales in the GEMM's swizzled layout
 *   (cublaslt_gemm.cu lines 506-510). The quantize kernel writes them so
 *   when the quantizer's optimize_for_gemm is set
 *   (common/cast/mxfp8/quantize_mxfp8.cuh line 275,
 *   WITH_GEMM_SWIZZLED_SCALES), which module/linear.py sets for the input
 *   and the output gradient (lines 2095, 2103; not under sequence
 *   parallelism) and, through _enable_weight_preswizzle (module/base.py
 *   line 1277), for a weight unless the primary weights are FP8: such a
 *   weight's scales are swizzled before each GEMM that reads it
 *   (swizzle_scales_for_gemm, pytorch/csrc/extensions/swizzle.cpp lines
 *   47-142, called from gemm.cpp lines 305-306; a grouped GEMM swizzles
 *   all its experts' scales in one kernel, lines 572-575), one kernel
 *   reading and writing one byte per 32 elements.
 * approf tells Blackwell by the spec's FP4 peak: block-scaled MX tensor
 * cores and non-TN FP8 GEMMs came with Blackwell (b200, gb200-nvl72),
 * Hopper and MI300X give no FP4 peak.
 */
#include <stddef.h>

#include "hardware.h"

const char *approf_fp8_recipe_refusal(const ApprofHardwareSpec *hw, int recipe)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    if (!ri)
        return "unknown FP8 recipe";
    if (!(hw->peak_flops_fp8 > 0))
        return "no FP8 tensor cores (its spec gives no peak_tflops_fp8)";
    /* Transformer Engine's ROCm build (ROCm/TransformerEngine at
     * 030b79214fa6, transformer_engine/pytorch/quantization.py:
     * check_recipe_support asserts each recipe's check):
     * check_fp8_block_scaling_support refuses every ROCm device,
     * check_mxfp8_support takes gfx950 and gfx1250 only (and only with
     * NVTE_ROCM_ENABLE_MXFP8 set), check_fp8_support takes gfx942 (MI300X)
     * for delayed and current scaling */
    if (hw->rocm && recipe == COSTDB_FP8_BLOCKWISE)
        return "a ROCm card: Transformer Engine's ROCm build refuses Float8BlockScaling on every "
               "AMD GPU (check_fp8_block_scaling_support: \"FP8 block scaled gemm not yet "
               "supported for ROCm\")";
    if (hw->rocm && ri->needs_mx_cores && !(hw->peak_flops_fp4 > 0))
        return "no MXFP8 support: Transformer Engine's ROCm build runs MXFP8BlockScaling on gfx950 "
               "and newer only, with NVTE_ROCM_ENABLE_MXFP8 set (check_mxfp8_support: \"Device "
               "arch gfx95x or newer is required for MXFP8 execution\"), and the spec gives no "
               "peak_tflops_fp4";
    if (ri->needs_mx_cores && !(hw->peak_flops_fp4 > 0))
        return "no MXFP8 tensor cores: Transformer Engine runs MXFP8BlockScaling on Blackwell "
               "(compute capability 10.x) only, and the spec gives no peak_tflops_fp4 (e.g. "
               "--hardware b200)";
    return NULL;
}

int approf_fp8_copies(const ApprofHardwareSpec *hw, int recipe)
{
    return costdb_fp8_weight_copies(recipe, hw->peak_flops_fp4 > 0);
}

double approf_fp8_gemm_scale_bytes(const ApprofHardwareSpec *hw, int recipe, int operand)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    /* MXFP8's swizzled E8M0 scales: bytes an element beyond the data */
    double mx = costdb_fp8_recipe(COSTDB_FP8_MXFP8)->act_copy_bytes - 1.0;
    if (!ri || !hw)
        return 0.0;
    if (recipe == COSTDB_FP8_BLOCKWISE && hw->peak_flops_fp4 > 0)
        return (operand == APPROF_FP8_OPERAND_ACT ? ri->act_copy_bytes : ri->weight_copy_bytes) -
               1.0 + mx;
    if (recipe == COSTDB_FP8_MXFP8 && operand == APPROF_FP8_OPERAND_PRIMARY_WEIGHT)
        return 2.0 * mx;
    return 0.0;
}
