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
 * approf tells both by the spec's FP4 peak: block-scaled MX tensor cores
 * and non-TN FP8 GEMMs came with Blackwell (b200, gb200-nvl72), Hopper
 * and MI300X give no FP4 peak.
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
    if (ri->needs_mx_cores && !(hw->peak_flops_fp4 > 0))
        return "no MXFP8 tensor cores: Transformer Engine runs MXFP8BlockScaling on Blackwell "
               "(compute capability 10.x) only, and the spec gives no peak_tflops_fp4 (e.g. "
               "--hardware b200)";
    return NULL;
}

int approf_fp8_copies(const ApprofHardwareSpec *hw, int recipe)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    return ri && ri->per_tensor && hw->peak_flops_fp4 > 0 ? 1 : 2;
}
