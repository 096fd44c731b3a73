/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The training metrics a framework computes over the logits after each
 * micro-batch's backward, outside autograd.
 *
 * Composer v0.17.2 (composer/trainer/trainer.py, `_train_microbatch` and
 * `_eval_train_metrics`) updates every train metric of the model after each
 * micro-batch's backward, under torch.no_grad() and the run's precision
 * context (autocast to bf16 for amp_bf16), on the forward's logits.
 * llm-foundry's ComposerMPTCausalLM (llmfoundry/models/mpt/modeling_mpt.py
 * at 5e85bd62d) has two train metrics unless `use_train_metrics` is false:
 * LanguageCrossEntropy and LanguagePerplexity (composer/metrics/nlp.py),
 * and each update runs torch.nn.CrossEntropyLoss(reduction='sum') over all
 * the logits. Under autocast, cross_entropy runs in f32 (PyTorch's AMP op
 * reference, "CUDA Ops that can autocast to float32"), so each pass is a
 * copy of the 16-bit logits to f32 (2 + 4 bytes a logit) and log_softmax
 * over the copy (4 + 4), then nll_loss's one read a row. Over f32 logits
 * there is no copy. Each kernel is priced at the streaming rate plus the
 * launch overhead, at least the host overhead: a lower bound, since
 * log_softmax over a 50k vocabulary reads its row more than once.
 * docs/validation.md, "FSDP family: Composer's train metrics over the
 * logits".
 */
#include "hardware.h"

double approf_loss_metric_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    double stream, e, t = 0.0;

    if (!hw || !k || k->loss != 2 || hw->loss_metric_passes <= 0 || !(k->elements > 0))
        return 0.0;
    stream = hw->memory_bandwidth * hw->memory_efficiency;
    if (!(stream > 0))
        return 0.0;
    e = (double)k->elements;
    for (int i = 0; i < 2; i++) {
        double bytes = i == 0 ? (k->dtype == APPROF_F32 ? 0.0 : 6.0 * e) : 8.0 * e;
        if (bytes != 0.0)
            t += approf_stream_kernel_seconds(hw, bytes, stream);
    }
    return t * (double)hw->loss_metric_passes;
}
