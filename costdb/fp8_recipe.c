/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FP8 recipes approf sweep --fp8-recipe prices (docs/fp8.md), named as
 * Megatron-LM core_v0.19.0 (5be9626709af) names its --fp8-recipe choices
 * (megatron/core/transformer/transformer_config.py fp8_recipe), each the
 * Transformer Engine recipe megatron/core/fp8_utils.py get_fp8_recipe
 * builds from it, with TE at d0067d0da6:
 * - delayed: DelayedScaling. One FP32 scale per tensor from the amax
 *   history; the amax is taken inside the cast kernel. A quantized copy
 *   is 1 byte an element.
 * - tensorwise: Float8CurrentScaling. One scale per tensor from the
 *   tensor's own amax: Float8CurrentScalingQuantizer::quantize_impl
 *   (transformer_engine/pytorch/csrc/quantizer.cpp) runs
 *   nvte_compute_amax_with_config over the input, then
 *   nvte_compute_scale_from_amax, then the cast (nvte_quantize_v2): the
 *   amax is a kernel of its own, reading the tensor once more. 1 byte an
 *   element, no amax history.
 * - mxfp8: MXFP8BlockScaling (recipe/__init__.py): one E8M0 scale (1 byte)
 *   per 32 consecutive elements, row-wise and column-wise copies quantized
 *   from the high-precision tensor (not a transpose of each other);
 *   MXFP8Quantizer.get_scale_shape (pytorch/tensor/mxfp8_tensor.py) keeps
 *   a [rows, cols/32] uint8 scale per copy (padded to multiples of
 *   [128, 4], which approf leaves out): 1 + 1/32 bytes an element. TE
 *   runs it on compute capability 10.x only (_compute_mxfp8_support in
 *   pytorch/quantization.py: "Device compute capability 10.0 or higher
 *   required", 12.0+ refused).
 * - blockwise: Float8BlockScaling: 1x128 blocks for inputs and output
 *   gradients (x_block_scaling_dim = grad_block_scaling_dim = 1), 128x128
 *   for weights (w_block_scaling_dim = 2), FP32 scales ("float32
 *   containers"; Float8BlockQuantizer.get_scale_shape in
 *   pytorch/tensor/float8_blockwise_tensor.py): 1 + 4/128 bytes an
 *   element of an input or gradient copy, 1 + 4/16384 of a weight copy.
 *   TE runs it on compute capability 9.0 and up with CUDA 12.9
 *   (_compute_fp8_block_scaling_support).
 */
#include <stdio.h>
#include <string.h>

#include "fp8_recipe.h"

static const CostdbFp8Recipe recipes[] = {
    [COSTDB_FP8_DELAYED] = {"delayed", "DelayedScaling", 1.0, 1.0, 0, 0, 1},
    [COSTDB_FP8_TENSORWISE] = {"tensorwise", "Float8CurrentScaling", 1.0, 1.0, 1, 0, 1},
    [COSTDB_FP8_MXFP8] = {"mxfp8", "MXFP8BlockScaling", 1.0 + 1.0 / 32.0, 1.0 + 1.0 / 32.0, 0,
                          1, 0},
    [COSTDB_FP8_BLOCKWISE] = {"blockwise", "Float8BlockScaling", 1.0 + 4.0 / 128.0,
                              1.0 + 4.0 / (128.0 * 128.0), 0, 0, 0},
};

const CostdbFp8Recipe *costdb_fp8_recipe(int recipe)
{
    if (recipe <= COSTDB_FP8_NONE || recipe > COSTDB_FP8_BLOCKWISE)
        return NULL;
    return &recipes[recipe];
}

int costdb_fp8_recipe_parse(const char *s)
{
    for (int r = COSTDB_FP8_DELAYED; r <= COSTDB_FP8_BLOCKWISE; r++)
        if (s && !strcmp(s, recipes[r].name))
            return r;
    return -1;
}

int costdb_fp8_of_options(const char *options, int *fp8_params)
{
    char key[64];
    int recipe = COSTDB_FP8_DELAYED;
    if (fp8_params)
        *fp8_params = 0;
    if (!options || !strstr(options, "\"precision\":\"fp8\""))
        return COSTDB_FP8_NONE;
    for (int k = COSTDB_FP8_DELAYED; k <= COSTDB_FP8_BLOCKWISE; k++) {
        snprintf(key, sizeof key, "\"fp8_recipe\":\"%s\"", recipes[k].name);
        if (strstr(options, key))
            recipe = k;
    }
    if (fp8_params)
        *fp8_params = strstr(options, "\"fp8_param_gather\":1") != NULL;
    return recipe;
}

int costdb_fp8_weight_copies(int recipe, int non_tn)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    return ri && ri->per_tensor && non_tn ? 1 : 2;
}

double costdb_fp8_weight_extra_bytes(int recipe, int copies, int fp8_params, double es)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    if (!ri)
        return 0.0;
    return copies * ri->weight_copy_bytes - (fp8_params ? es : 0.0);
}

int costdb_fp8_cast_kernels(int recipe)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    return ri ? (ri->amax_pass ? 4 : 1) : 0;
}

int costdb_fp8_cast_scale_kernels(int recipe)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(recipe);
    return ri && ri->amax_pass ? 2 : 0;
}
