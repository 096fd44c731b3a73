/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a card can run an FP8 recipe (approf sweep --fp8-recipe,
 * docs/fp8.md); the recipes' facts are costdb/fp8_recipe.c's. MXFP8:
 * Transformer Engine (d0067d0da6) runs MXFP8BlockScaling on compute
 * capability 10.x only (_compute_mxfp8_support,
 * transformer_engine/pytorch/quantization.py).
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
    /* MX block-scaled tensor cores came with Blackwell, with FP4: a spec
     * with an FP4 peak (b200, gb200-nvl72) has them; Hopper and MI300X
     * give none */
    if (ri->needs_mx_cores && !(hw->peak_flops_fp4 > 0))
        return "no MXFP8 tensor cores: Transformer Engine runs MXFP8BlockScaling on Blackwell "
               "(compute capability 10.x) only, and the spec gives no peak_tflops_fp4 (e.g. "
               "--hardware b200)";
    return NULL;
}
