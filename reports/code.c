/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The framework settings of a uniform plan (docs/reports.md "The plan as
 * code"): LiBai's train.* config and Megatron-LM's arguments, with
 * everything needed to run the plan as it was priced: the parallel sizes,
 * the schedule (interleaved: --num-layers-per-virtual-pipeline-stage),
 * sequence parallelism when the plan records it or its placements split
 * activations on the sequence, each stage's variant (activation
 * recomputation, ZeRO; Megatron takes one setting for all stages, so
 * differing stages get the most conservative one and a comment), the
 * sweep's dtype and the batch sizes (Alpa's micro-batch is the whole
 * pipeline micro-batch that data parallelism splits), all read from the
 * one launch derivation (rep_launch_basics, reports/launch.c) the launch
 * files use. Layer counts are transformer blocks, found here from the
 * parameter names of each stage's placements (a block is the first path
 * segment ending in ".<index>", e.g. "h.3" or "encoder.layer.3", holding an
 * attention parameter: "attn", "attention" or the zoo's query/key/value
 * projections); when they cannot be found the snippet says so in a comment
 * instead of printing approf layers.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_text.h"
#include "launch.h"
#include "launch_megatron_fsdp.h"

#define MAX_KEY COSTDB_BLOCK_KEY_MAX

static const CostdbPlacement *stage_placement(const void *ctx, size_t k, size_t i)
{
    const ApreportReport *r = ctx;
    return i < r->stages[k].n_tensors ? &r->stages[k].tensors[i].pl : NULL;
}

int rep_stage_blocks(const ApreportReport *r, int *blocks, char *why, size_t whylen)
{
    /* the one count (costdb_stage_blocks), as apsolve's verdict counts them */
    return costdb_stage_blocks(stage_placement, r, r->n_stages, blocks, why, whylen) ? -1 : 0;
}

int rep_total_blocks(const ApreportReport *r)
{
    char (*keys)[MAX_KEY] = NULL;
    size_t nk = 0, cap = 0;
    int attention = 0;
    for (size_t k = 0; k < r->n_stages; k++)
        cap += r->stages[k].n_tensors;
    keys = calloc(cap ? cap : 1, sizeof(*keys));
    if (!keys)
        return -1;
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++) {
            const CostdbPlacement *pl = &r->stages[k].tensors[i].pl;
            char key[MAX_KEY];
            size_t j;
            if (strcmp(pl->role, "param"))
                continue;
            costdb_block_key(pl->tensor_name, key, sizeof(key));
            if (!key[0])
                continue;
            attention |= costdb_attention_name(pl->tensor_name);
            for (j = 0; j < nk && strcmp(keys[j], key); j++)
                ;
            if (j == nk)
                snprintf(keys[nk++], MAX_KEY, "%s", key);
        }
    free(keys);
    return attention ? (int)nk : -1;
}

void rep_write_framework_args(const ApreportReport *r, FILE *f)
{
    RepLaunchBasics lb;
    RepLaunch mg;                     /* the Megatron-LM file's recompute_layers and offload */
    rep_launch_basics(r, &lb);
    rep_launch_of(r, REP_RT_MEGATRON, &mg);
    int dp = lb.dp, tp = lb.tp, pp = lb.pp, B = lb.B, v = lb.v;
    int64_t mbs = lb.mbs;
    int *blocks = lb.blocks, known = lb.blocks_known, total = lb.blocks_total;
    int equal = lb.blocks_equal, recompute = lb.variant.recompute, zero = lb.variant.zero;
    int differ = lb.variants_differ, variants = lb.variants_known;
    int sp = lb.sp_knob || (lb.seq_split && tp > 1);
    const char *why = lb.blocks_why, *dt = r->sweep.dtype;
    const char *prec = !lb.prec ? NULL : lb.prec[0] == 'b' ? "--bf16" : "--fp16";
    fputs("\n# The plan is uniform: the same 3-D layout in LiBai's config\n", f);
    fprintf(f, "# train.dist.data_parallel_size = %d\n"
               "# train.dist.tensor_parallel_size = %d\n"
               "# train.dist.pipeline_parallel_size = %d\n", dp, tp, pp);
    if (known)
        fprintf(f, "# train.dist.pipeline_num_layers = %d  (transformer blocks)\n", total);
    else {
        fputs("# train.dist.pipeline_num_layers: unknown (", f);
        rep_py_text(f, why);
        fputs("): set it to the model's number of transformer blocks\n", f);
    }
    fprintf(f, "# train.train_micro_batch_size = %lld\n"
               "# train.num_accumulation_steps = %d\n", (long long)mbs, B);
    if (recompute)
        fputs("# train.activation_checkpoint.enabled = True\n", f);
    if (zero)
        fprintf(f, "# train.zero_optimization.enabled = True\n"
                   "# train.zero_optimization.stage = %d\n", zero);
    if (prec && !strcmp(prec, "--fp16"))
        fputs("# train.amp.enabled = True\n", f);
    if (v > 1)
        fputs("# (LiBai has no interleaved schedule: it runs 1F1B)\n", f);
    fputs("# and as Megatron-LM arguments:\n", f);
    fprintf(f, "# --tensor-model-parallel-size %d --pipeline-model-parallel-size %d "
               "--micro-batch-size %lld --global-batch-size %lld",
            tp, pp, (long long)mbs, (long long)r->global_batch);
    if (known)
        fprintf(f, " --num-layers %d", total);
    if (v > 1 && known && equal && blocks[0] % v == 0)
        fprintf(f, " --num-layers-per-virtual-pipeline-stage %d", blocks[0] / v);
    if (sp)
        fputs(" --sequence-parallel", f);
    if (recompute == COSTDB_RECOMPUTE_SELECTIVE)
        fputs(" --recompute-granularity selective", f);
    else if (recompute == COSTDB_RECOMPUTE_FULL || recompute == COSTDB_RECOMPUTE_OP)
        /* op (torchtitan's per-op policy) has no Megatron-LM form: full,
         * as the launch file (reports/launch.c) */
        fprintf(f, " --recompute-granularity full --recompute-method %s --recompute-num-layers %d",
                mg.recompute_layers > 0 ? "block" : "uniform",
                mg.recompute_layers > 0 ? mg.recompute_layers : 1);
    if (rep_megatron_offload_layers(&mg) > 0) /* activation offload, as the launch file */
        fprintf(f, " --cpu-offloading-num-layers %d", rep_megatron_offload_layers(&mg));
    if (mg.variant.zero >= 1)
        fputs(" --use-distributed-optimizer", f);
    rep_megatron_fsdp_args(&mg, f, 1); /* ZeRO-2/3: Megatron-FSDP, as the launch file */
    if (prec)
        fprintf(f, " %s", prec);
    fputc('\n', f);
    if (!known) {
        fputs("# --num-layers: unknown (", f);
        rep_py_text(f, why);
        fputs("): the model's number of transformer blocks\n", f);
    } else if (!equal) {
        fputs("# Megatron-LM splits the blocks evenly; this plan's stages hold", f);
        for (size_t k = 0; k < r->n_stages; k++)
            fprintf(f, "%s %d", k ? "," : "", blocks[k]);
        fputs(" blocks\n", f);
    }
    if (v > 1 && (!known || !equal || blocks[0] % v))
        fprintf(f, "# --num-layers-per-virtual-pipeline-stage: the blocks of a stage / %d "
                   "(interleaved, %d chunks per stage)%s\n",
                v, v, known && equal ? ": not a whole number for this plan" : "");
    if (differ)
        fprintf(f, "# The stages differ in recomputation or ZeRO, which Megatron-LM cannot set per "
                   "stage: the arguments use the most conservative (recompute %s, ZeRO %d)\n",
                costdb_recompute_name(recompute), zero);
    if (!variants)
        fputs("# (the sweep's configs of some stages are unknown: no recomputation or ZeRO "
              "assumed for them)\n", f);
    if (r->opts.has_layout && r->opts.layout.vpp > 1 && v == 1)
        fprintf(f, "# the plan was priced with vpp=%d: apreport --schedule interleaved "
                   "--virtual-stages %d gives its arguments\n", r->opts.layout.vpp,
                r->opts.layout.vpp);
    if (!prec) {
        fputs("# dtype ", f);
        rep_py_text(f, dt[0] ? dt : "unknown");
        fputs(": no --bf16/--fp16 (fp32)\n", f);
    }
    rep_launch_basics_free(&lb);
}
