/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The passes a framework makes over its gradient buffer on the compute
 * stream before the data-parallel reduction.
 *
 * Megatron-Core r0.8 (megatron/core/distributed/param_and_grad_buffer.py
 * at core_r0.8.0 and at f2e5db402c, the commit of the MC08 runs: the
 * directory is the same), `Bucket.start_grad_sync`, called once a step
 * for each bucket as its last gradient arrives in the last micro-batch's
 * backward (or for all of them after it), does, before it launches the
 * bucket's reduce-scatter or all-reduce:
 *   - with `ddp_config.check_for_nan_in_grad`, `self.grad_data.norm(p=2)`
 *     and an assert on `norm.isnan()`: one read of the bucket;
 *   - with `gradient_scaling_factor != 1.0`, `self.grad_data *= factor`:
 *     one read and one write of it.
 * Megatron-LM's training loop sets `check_for_nan_in_grad` from
 * `--check-for-nan-in-loss-and-grad`, on by default and turned off only for
 * fp16 with a dynamic loss scale (megatron/training/arguments.py,
 * training.py), and the factor is 1 / dp unless `--ddp-average-in-collective`
 * (distributed_data_parallel.py `__init__`). So a bf16 run makes 3 passes
 * over its buffer at the width it reduces in (f32 there), on the stream the
 * backward runs on. A spec says how many with grad_presync_passes.
 *
 * Priced as that many streaming kernels over the gradients of the stage's
 * gradient reduction (the apply step's all-reduce or ZeRO-1
 * reduce-scatter, at its reduce width: costdb_grad_buffer_ratio), at the
 * spec's memory rate (approf_stream_kernel_seconds), once a step. The
 * buckets' extra launches (two kernels a bucket) and the host's wait on
 * the assert are not priced: no figure. ZeRO-2 and 3 reduce in the graph,
 * not in the apply step: nothing here. Under an ep layout apsolve's ep
 * stage moves the passes with the expert elements a GPU holds
 * (solver/ep_stage_price.c). docs/validation.md, "The gradient buffer's
 * passes before the data-parallel reduction" and "... by the version each
 * Megatron run used".
 */
#include "collective.h"
#include "hardware.h"
#include "stage.h"

double approf_grad_presync_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    double stream, ratio, bytes = 0.0;

    if (!hw || !p || hw->grad_presync_passes <= 0)
        return 0.0;
    ratio = costdb_grad_buffer_ratio(hw->grad_reduce_bytes, p->dtype == APPROF_F32 ? 4.0 : 2.0);
    for (size_t i = 0; i < p->n_apply_colls && i < 2; i++) {
        const ApprofCollective *c = &p->apply_colls[i];
        if (c->kind != APPROF_COLL_ALL_GATHER && c->group_size > 1 && c->bytes > 0)
            bytes += c->bytes * ratio;
    }
    stream = hw->memory_bandwidth * (hw->memory_efficiency > 0 ? hw->memory_efficiency : 1.0);
    if (!(bytes > 0) || !(stream > 0))
        return 0.0;
    return (double)hw->grad_presync_passes * approf_stream_kernel_seconds(hw, bytes, stream);
}
