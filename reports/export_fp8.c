/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FP8 training in the launch files (docs/fp8.md, "Launch files"): what
 * each framework, at the version its manifest pins, is told of a plan
 * whose sweep priced the linear layers' GEMMs in FP8 as Transformer
 * Engine's delayed-scaling recipe with the HYBRID format runs them
 * (approf sweep --fp8), and what it cannot express of it.
 *
 * - Megatron-LM core_v0.19.0 (5be9626709af): --fp8-format (the
 *   TransformerConfig field fp8, choices e4m3 and hybrid), --fp8-recipe
 *   (fp8_recipe: tensorwise, delayed, mxfp8, blockwise, custom; default
 *   delayed) and --fp8-param-gather (arguments.py, TransformerConfig's
 *   fp8_param through argument_utils.py), which validate_args allows
 *   only with the distributed optimizer, torch FSDP2 or Megatron-FSDP;
 *   megatron/core/fp8_utils.py get_fp8_recipe builds TEDelayedScaling
 *   with Format.HYBRID from them.
 * - torchtitan v0.2.2 (73a0e6979dd1): the model converter
 *   "quantize.linear.float8" (torchtitan/components/quantization/
 *   float8.py: torchao's Float8Linear, dynamic tensorwise scaling when no
 *   recipe_name is set), its [quantize.linear.float8] table
 *   (job_config.py Float8Linear) and [compile] enable (docs/float8.md:
 *   required for competitive performance, it fuses the casts).
 *   torchtitan main (b5bcd76c66d0) sets float8 in the config registry
 *   function, with the rowwise recipes only.
 * - DeepSpeed v0.16.4 (e2dc3eeb1923): no FP8 training key; its
 *   quantized linear layers (deepspeed/linear/quantization.py) take
 *   frozen weights only.
 */
#include <stdio.h>
#include <string.h>

#include "export_fp8.h"
#include "fp8_recipe.h"

/* The recipe's name (Megatron's --fp8-recipe value), delayed for a sweep
 * whose options name none. */
static const char *recipe_name(int fp8)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(fp8 & REP_FP8_RECIPE);
    return ri ? ri->name : "delayed";
}

/* The FP8 format Megatron's --fp8-format gives the recipe: Transformer
 * Engine's own default for it (recipe/__init__.py at d0067d0da6: HYBRID
 * for DelayedScaling and Float8CurrentScaling, E4M3 for
 * MXFP8BlockScaling and Float8BlockScaling; get_fp8_recipe passes the
 * flag's format to each). approf prices one byte an element either way. */
static const char *recipe_format(int fp8)
{
    int r = fp8 & REP_FP8_RECIPE;
    return r == COSTDB_FP8_MXFP8 || r == COSTDB_FP8_BLOCKWISE ? "e4m3" : "hybrid";
}

int rep_fp8_of(const ApreportReport *r)
{
    int params = 0, recipe = r ? costdb_fp8_of_options(r->sweep.options, &params) : 0;
    if (recipe == COSTDB_FP8_NONE)
        return REP_FP8_NONE;
    return recipe | (params ? REP_FP8_PARAMS : REP_FP8_NONE);
}

const char *rep_fp8_context(int fp8)
{
    /* one string per recipe and fp8_params (a static table: the caller
     * appends it) */
    static char ctx[2][COSTDB_FP8_BLOCKWISE + 1][80];
    int r = fp8 & REP_FP8_RECIPE, pg = (fp8 & REP_FP8_PARAMS) != 0;
    if (!fp8 || r > COSTDB_FP8_BLOCKWISE)
        return "";
    snprintf(ctx[pg][r], sizeof ctx[pg][r], " precision=fp8 fp8_params=%d priced_recipe=%s", pg,
             recipe_name(fp8));
    return ctx[pg][r];
}

void rep_fp8_nemo(int fp8, FILE *f)
{
    /* NeMo 1's megatron_gpt_config.yaml (NeMo at 8cfedd7203): fp8,
     * fp8_hybrid (HYBRID is its default format), fp8_params (docs/fp8.md);
     * its keys are delayed scaling's (fp8_margin, fp8_amax_history_len,
     * reduce_amax): another recipe gets no NeMo key (NeMo 2 sets
     * MixedPrecision's fp8_recipe in Python, not written) */
    if ((fp8 & REP_FP8_RECIPE) != REP_FP8_DELAYED)
        return;
    fputs(" model.fp8=True model.fp8_hybrid=True", f);
    if (fp8 & REP_FP8_PARAMS)
        fputs(" model.fp8_params=True", f);
}

void rep_fp8_megatron(const RepLaunch *L, int fp8, FILE *f)
{
    if (!fp8)
        return;
    /* the recipe priced; --fp8-recipe's default is delayed, written so
     * that the file says what it runs. get_fp8_recipe (fp8_utils.py)
     * builds the others only from a Transformer Engine version on */
    int r = fp8 & REP_FP8_RECIPE;
    if (r == COSTDB_FP8_TENSORWISE || r == COSTDB_FP8_BLOCKWISE || r == COSTDB_FP8_MXFP8)
        fprintf(f, "# --fp8-recipe %s needs Transformer Engine >= %s (get_fp8_recipe, "
                   "megatron/core/fp8_utils.py)\n",
                recipe_name(fp8), r == COSTDB_FP8_TENSORWISE  ? "2.2.0.dev0"
                                  : r == COSTDB_FP8_BLOCKWISE ? "2.3.0.dev0"
                                                              : "2.1.0");
    fprintf(f, "--fp8-format %s\n--fp8-recipe %s\n", recipe_format(fp8), recipe_name(fp8));
    if (!(fp8 & REP_FP8_PARAMS))
        return;
    if (L->variant.zero)
        fputs("--fp8-param-gather\n", f);
    else
        fputs("# Megatron-LM core_v0.19.0 cannot express FP8 primary weights without the "
              "distributed optimizer (--fp8-param-gather needs --use-distributed-optimizer, "
              "torch FSDP2 or Megatron-FSDP: validate_args); the plan was priced with them\n",
              f);
}

void rep_fp8_deepspeed_notes(RepLaunch *L, int fp8)
{
    if (!fp8)
        return;
    rep_launch_line(L, "FP8: DeepSpeed v0.16.4 cannot express FP8 training in its config (no "
                       "FP8 key; its quantized linear layers, deepspeed/linear, take frozen "
                       "weights only): run the linear layers under Transformer Engine's "
                       "fp8_autocast with %s(fp8_format=Format.%s) in the training script, the "
                       "recipe the plan was priced with, the LM head%s outside it",
                    costdb_fp8_recipe((fp8 & REP_FP8_RECIPE))
                        ? costdb_fp8_recipe((fp8 & REP_FP8_RECIPE))->te_recipe
                        : "DelayedScaling",
                    strcmp(recipe_format(fp8), "e4m3") ? "HYBRID" : "E4M3",
                    L->experts > 0 ? " and the router" : "");
    if (fp8 & REP_FP8_PARAMS)
        rep_launch_line(L, "FP8: the plan was priced with FP8 primary weights (no 16-bit copy "
                           "of the FP8 layers' weights), which the config cannot express "
                           "either (Transformer Engine's fp8_model_init in the script)");
}

void rep_fp8_torchtitan_notes(RepLaunch *L, int fp8)
{
    if (!fp8)
        return;
    const char *left_out = L->experts > 0 ? " and the router gate (router.gate)" : "";
    int r = fp8 & REP_FP8_RECIPE;
    if (r == COSTDB_FP8_TENSORWISE)
        rep_launch_line(L, "FP8: the current (tensorwise) scaling the plan was priced with is "
                           "torchtitan v0.2.2's float8 converter (quantize.linear.float8, "
                           "torchao's Float8Linear) without a recipe_name: a scale per tensor "
                           "from its own amax; the LM head (output)%s is left out as priced",
                        left_out);
    else if (r == COSTDB_FP8_MXFP8)
        rep_launch_line(L, "FP8: the MXFP8 the plan was priced with is torchtitan v0.2.2's mx "
                           "converter (quantize.linear.mx, torchao's MXLinear, recipe "
                           "mxfp8_cublas: E8M0 scales per 32 elements; SM100 or later); the "
                           "LM head (output)%s is left out as priced%s",
                        left_out,
                        L->tp > 1 ? "; torch.compile is left off: v0.2.2 refuses it with "
                                    "tensor parallelism for mxfp8 (MXLinearConverter), so "
                                    "the casts run unfused"
                                  : "");
    else if (r == COSTDB_FP8_BLOCKWISE)
        rep_launch_line(L, "FP8: torchtitan v0.2.2 cannot express the block scaling the plan "
                           "was priced with (Transformer Engine's Float8BlockScaling, 1x128 "
                           "and 128x128 blocks): torchao's float8 recipes are tensorwise and "
                           "rowwise; the float8 converter is written with its tensorwise "
                           "default (recipe_name = \"rowwise\" scales per row, without the "
                           "FSDP float8 all-gather); the LM head (output)%s is left out as "
                           "priced",
                        left_out);
    else
        rep_launch_line(L, "FP8: torchtitan v0.2.2 cannot express the delayed scaling the plan "
                           "was priced with (Transformer Engine, HYBRID format): its float8 "
                           "converter (quantize.linear.float8, torchao's Float8Linear) scales "
                           "each tensor dynamically (tensorwise, no recipe_name), the closest; "
                           "the LM head (output)%s is left out as priced",
                        left_out);
    if (L->experts > 0)
        rep_launch_line(L, "FP8: the experts are no nn.Linear: quantize.linear.float8 leaves "
                           "their grouped GEMMs in bfloat16 (quantize.grouped_mm.float8, a "
                           "prototype for pipeline and context parallel degree 1, is not "
                           "written), where the plan priced them in FP8 as Transformer "
                           "Engine's GroupedLinear runs them: the experts run slower and "
                           "keep their 16-bit inputs");
    if ((fp8 & REP_FP8_PARAMS) && r == COSTDB_FP8_MXFP8)
        rep_launch_line(L, "FP8: torchtitan cannot express FP8 primary weights (torchao keeps "
                           "the high-precision weight), nor gather them in MXFP8 (the FSDP "
                           "float8 all-gather is the float8 converter's)");
    else if ((fp8 & REP_FP8_PARAMS) && L->variant.zero == 3)
        rep_launch_line(L, "FP8: FSDP gathers the float8 weights as priced "
                           "(enable_fsdp_float8_all_gather: each rank casts its high-precision "
                           "shard, which stays the parameter, and the gather moves 1 byte an "
                           "element; precompute_float8_dynamic_scale_for_fsdp: one all-reduce "
                           "of the weights' amaxes per step)");
    else if (fp8 & REP_FP8_PARAMS)
        rep_launch_line(L, "FP8: torchtitan cannot express FP8 primary weights (torchao keeps "
                           "the high-precision weight); with FSDP under ZeRO-1/2 its weights "
                           "are gathered in float8 (enable_fsdp_float8_all_gather), as priced");
}

void rep_fp8_torchtitan_converters(int fp8, FILE *f)
{
    /* torchtitan v0.2.2's registered converters (model_converter.py):
     * MXFP8 is the mx one (components/quantization/mx.py) */
    if ((fp8 & REP_FP8_RECIPE) == COSTDB_FP8_MXFP8)
        fputs("converters = [\"quantize.linear.mx\"]\n", f);
    else if (fp8)
        fputs("converters = [\"quantize.linear.float8\"]\n", f);
}

void rep_fp8_torchtitan_tables(const RepLaunch *L, int fp8, int fsdp_shards, FILE *f)
{
    if (!fp8)
        return;
    if ((fp8 & REP_FP8_RECIPE) == COSTDB_FP8_MXFP8) {
        /* MXLinearConverter (v0.2.2) asserts no torch.compile of the
         * model with tensor parallelism; its filter_fqns defaults to
         * ["output"], written so that the file says it */
        if (L->tp <= 1)
            fputs("\n[compile]\nenable = true\n", f);
        fputs("\n[quantize.linear.mx]\n", f);
        fputs(L->experts > 0 ? "filter_fqns = [\"output\", \"router.gate\"]\n"
                             : "filter_fqns = [\"output\"]\n",
              f);
        return;
    }
    fputs("\n[compile]\nenable = true\n", f);
    fputs("\n[quantize.linear.float8]\n", f);
    fputs(L->experts > 0 ? "filter_fqns = [\"output\", \"router.gate\"]\n"
                         : "filter_fqns = [\"output\"]\n",
          f);
    /* FP8 primary weights are priced with ZeRO-1/2's parameter
     * all-gather in one byte, and under ZeRO-3 with FSDP's float8
     * all-gathers and one amax all-reduce per step
     * (profiler/sharding/program_fp8.c): torchtitan v0.2.2's float8
     * all-gather and precomputed scales, both only where FSDP shards
     * (components/quantization/float8.py lines 87-99) */
    if ((fp8 & REP_FP8_PARAMS) && L->variant.zero >= 1 && fsdp_shards > 1)
        fputs("enable_fsdp_float8_all_gather = true\n"
              "precompute_float8_dynamic_scale_for_fsdp = true\n",
              f);
}

void rep_fp8_torchtitan_main(int fp8, FILE *f)
{
    if (fp8)
        fprintf(f, "# %s: FP8 is set in the config registry function, not by an override: "
                   "quantization=[Float8LinearConverter.Config(recipe_name=..., "
                   "filter_fqns=[\"output\"], model_compile_enabled=True)], whose recipes are "
                   "rowwise and rowwise_with_gw_hp (no tensorwise, no delayed scaling)\n",
                REP_TORCHTITAN_MAIN);
}
