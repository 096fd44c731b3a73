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
#include <string.h>

#include "export_fp8.h"

int rep_fp8_of(const ApreportReport *r)
{
    if (!r || !strstr(r->sweep.options, "\"precision\":\"fp8\""))
        return REP_FP8_NONE;
    return strstr(r->sweep.options, "\"fp8_param_gather\":1") ? REP_FP8_PARAMS : REP_FP8_DELAYED;
}

const char *rep_fp8_context(int fp8)
{
    return fp8 == REP_FP8_PARAMS    ? " precision=fp8 fp8_params=1"
           : fp8 == REP_FP8_DELAYED ? " precision=fp8 fp8_params=0"
                                    : "";
}

void rep_fp8_nemo(int fp8, FILE *f)
{
    /* NeMo 1's megatron_gpt_config.yaml: fp8, fp8_hybrid (HYBRID is
     * its default format), fp8_params (docs/fp8.md) */
    if (fp8)
        fputs(" model.fp8=True model.fp8_hybrid=True", f);
    if (fp8 == REP_FP8_PARAMS)
        fputs(" model.fp8_params=True", f);
}

void rep_fp8_megatron(const RepLaunch *L, int fp8, FILE *f)
{
    if (!fp8)
        return;
    /* the recipe priced; --fp8-recipe's default is delayed, written so
     * that the file says what it runs */
    fputs("--fp8-format hybrid\n--fp8-recipe delayed\n", f);
    if (fp8 != REP_FP8_PARAMS)
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
                       "fp8_autocast with DelayedScaling(fp8_format=Format.HYBRID) in the "
                       "training script, the recipe the plan was priced with, the LM head%s "
                       "outside it",
                    L->experts > 0 ? " and the router" : "");
    if (fp8 == REP_FP8_PARAMS)
        rep_launch_line(L, "FP8: the plan was priced with FP8 primary weights (no 16-bit copy "
                           "of the FP8 layers' weights), which the config cannot express "
                           "either (Transformer Engine's fp8_model_init in the script)");
}

void rep_fp8_torchtitan_notes(RepLaunch *L, int fp8)
{
    if (!fp8)
        return;
    rep_launch_line(L, "FP8: torchtitan v0.2.2 cannot express the delayed scaling the plan "
                       "was priced with (Transformer Engine, HYBRID format): its float8 "
                       "converter (quantize.linear.float8, torchao's Float8Linear) scales "
                       "each tensor dynamically (tensorwise, no recipe_name), the closest; "
                       "the LM head (output)%s is left out as priced",
                    L->experts > 0 ? " and the router gate (router.gate)" : "");
    if (L->experts > 0)
        rep_launch_line(L, "FP8: the experts are no nn.Linear: quantize.linear.float8 leaves "
                           "their grouped GEMMs in bfloat16 (quantize.grouped_mm.float8, a "
                           "prototype for pipeline and context parallel degree 1, is not "
                           "written)");
    if (fp8 == REP_FP8_PARAMS)
        rep_launch_line(L, "FP8: torchtitan cannot express FP8 primary weights (torchao keeps "
                           "the high-precision weight); with FSDP under ZeRO-1/2 its weights "
                           "are gathered in float8 (enable_fsdp_float8_all_gather), as priced");
}

void rep_fp8_torchtitan_converters(int fp8, FILE *f)
{
    if (fp8)
        fputs("converters = [\"quantize.linear.float8\"]\n", f);
}

void rep_fp8_torchtitan_tables(const RepLaunch *L, int fp8, int fsdp_shards, FILE *f)
{
    if (!fp8)
        return;
    fputs("\n[compile]\nenable = true\n", f);
    fputs("\n[quantize.linear.float8]\n", f);
    fputs(L->experts > 0 ? "filter_fqns = [\"output\", \"router.gate\"]\n"
                         : "filter_fqns = [\"output\"]\n",
          f);
    /* FP8 primary weights are priced with ZeRO-1/2's parameter
     * all-gather in one byte (profiler/sharding/program_fp8.c), which is
     * FSDP's float8 all-gather of torchtitan's ZeRO-2 */
    if (fp8 == REP_FP8_PARAMS && L->variant.zero >= 1 && L->variant.zero <= 2 && fsdp_shards > 1)
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
