/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NeMo comment line of the Megatron-LM launch file: the plan as NeMo 1's
 * Hydra overrides of examples/nlp/language_modeling/conf/
 * megatron_gpt_config.yaml (NeMo 8cfedd7203; docs/export-megatron.md).
 */
#include "export_fp8.h"
#include "export_nemo.h"

/* NeMo 1's data parallelism of the plan's ZeRO stage:
 * - ZeRO-1: Apex's distributed_fused_adam (model.optim.name);
 * - ZeRO-2 and ZeRO-3: torch FSDP (model.fsdp=True with
 *   model.fsdp_sharding_strategy grad or full: nlp_overrides.py,
 *   NLPFSDPStrategy, maps 'grad' to SHARD_GRAD_OP and 'full' to FULL_SHARD,
 *   each transformer layer one unit), which NeMo refuses with pipeline
 *   parallelism (setup_environment: "FSDP does not support pipeline
 *   parallelism"), with FP8 (megatron_base_model.py: "Torch FSDP does not
 *   support FP8.") and with hybrid sharding ("Hybrid sharding is currrently
 *   not supported."). Returns the reason it cannot, else NULL. */
static const char *nemo_zero(const RepLaunch *L, int fp8, FILE *f)
{
    if (L->variant.zero == 1) {
        fputs(" model.optim.name=distributed_fused_adam", f);
        return NULL;
    }
    if (L->variant.zero < 2)
        return NULL;
    if (L->pp > 1)
        return "its torch FSDP does not support pipeline parallelism";
    if (fp8)
        return "its torch FSDP does not support FP8";
    if (L->dp_shard > 0)
        return "its torch FSDP has no hybrid sharding";
    fprintf(f, " model.fsdp=True model.fsdp_sharding_strategy=%s",
            L->variant.zero == 2 ? "grad" : "full");
    return NULL;
}

void rep_nemo_comment(const RepLaunch *L, int fp8, FILE *f)
{
    const char *no_zero;
    fprintf(f, "# NeMo: trainer.num_nodes=%d trainer.devices=%d "
               "model.tensor_model_parallel_size=%d model.pipeline_model_parallel_size=%d",
            L->hosts, L->gpus, L->tp, L->pp);
    if (L->v > 1)
        fprintf(f, " model.virtual_pipeline_model_parallel_size=%d", L->v);
    fprintf(f, " model.micro_batch_size=%lld model.global_batch_size=%lld", (long long)L->mbs,
            (long long)L->global);
    if (L->sp)
        fputs(" model.sequence_parallel=True", f);
    if (L->variant.recompute == COSTDB_RECOMPUTE_SELECTIVE)
        fputs(" model.activations_checkpoint_granularity=selective", f);
    else if (L->variant.recompute == COSTDB_RECOMPUTE_FULL)
        fprintf(f, " model.activations_checkpoint_granularity=full "
                   "model.activations_checkpoint_method=%s model.activations_checkpoint_num_layers=%d",
                L->recompute_layers > 0 ? "block" : "uniform",
                L->recompute_layers > 0 ? L->recompute_layers : 1);
    no_zero = nemo_zero(L, fp8, f);
    if (L->cp > 1)
        fprintf(f, " model.context_parallel_size=%d", L->cp);
    if (L->ep > 0)
        fprintf(f, " model.expert_model_parallel_size=%d model.expert_tensor_parallel_size=%d",
                L->ep, L->etp);
    if (L->prec)
        fprintf(f, " trainer.precision=%s-mixed", L->prec[0] == 'b' ? "bf16" : "16");
    rep_fp8_nemo(fp8, f);
    fputc('\n', f);
    if (no_zero)
        fprintf(f, "# NeMo: ZeRO-%d is not written: %s (NeMo 8cfedd7203)\n", L->variant.zero,
                no_zero);
}
