/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-parameter kernels of an eager PyTorch step.
 *
 * DeepLearningExamples' ResNet-50 (PyTorch/Classification/ConvNets at
 * 7bdfc81d, the commit of the README's figures) steps torch.optim.SGD
 * (image_classification/optimizers.py, get_sgd_optimizer: momentum, weight
 * decay except on the parameters named "bn"), whose step is a Python loop
 * over the parameters (torch/optim/_functional.py, sgd): `grad + wd * p`
 * where the weight decay is not 0, `buf.mul_`, `buf.add_`, `p.add_`; then
 * the trainer calls `optimizer.zero_grad()`, one `zero_` a gradient
 * (PyTorch 1.9's Optimizer.zero_grad). Under AMP, GradScaler.step reads
 * the overflow flag with `.item()` before the loop (a host sync), so the
 * loop's kernels reach an idle device. Each of those kernels costs at
 * least the spec's kernel_launch_overhead (the gap between kernels); their
 * bytes are the optimizer step's (optimizer_step_bytes), priced apart.
 * param_step_kernels is the kernels a parameter tensor, on average: 707 /
 * 161 for that ResNet-50 (63 tensors with weight decay, 5 kernels each;
 * 98 batch-norm tensors without, 4).
 *
 * PyTorch DDP without gradient_as_bucket_view (the default; the runs'
 * ModelAndLoss.distributed wraps the model as DDP(model, device_ids=[gpu]))
 * copies each gradient into its bucket with the 1 / world-size divide
 * (reducer.cpp, mark_variable_ready_dense: at::mul_out(bucket_view, grad,
 * 1 / div_factor)) and back after the all-reduce (finalize_bucket_dense,
 * copy_bucket_to_grad): ddp_grad_copies (2) copy kernels a parameter
 * tensor, each reading and writing the gradient (at grad_reduce_bytes'
 * width when set), on the compute stream, only where the stage's gradients
 * are all-reduced over more than one device.
 *
 * The parameter tensors are the stage program's placements of role
 * APPROF_ROLE_PARAM (one a tensor, its local bytes). No constant of its
 * own: the spec's launch overhead and memory rate price every kernel
 * (approf_stream_kernel_seconds). docs/validation.md,
 * "DeepLearningExamples' multi-GPU rows: what eight GPUs add".
 */
#include "hardware.h"
#include "stage.h"

#include "collective.h"

/* 1: p's gradients are all-reduced over more than one device. */
static int data_parallel(const ApprofStageProgram *p)
{
    for (size_t i = 0; i < p->n_apply_colls && i < 2; i++)
        if (p->apply_colls[i].kind == APPROF_COLL_ALL_REDUCE &&
            p->apply_colls[i].group_size > 1 && p->apply_colls[i].bytes > 0)
            return 1;
    return 0;
}

double approf_param_loop_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    double stream, n = 0.0, t = 0.0, ratio, launch;
    int copies;
    if (!hw || !p || !(hw->param_step_kernels > 0 || hw->ddp_grad_copies > 0))
        return 0.0;
    stream = hw->memory_bandwidth * (hw->memory_efficiency > 0 ? hw->memory_efficiency : 1.0);
    if (!(stream > 0))
        return 0.0;
    copies = hw->ddp_grad_copies > 0 && data_parallel(p) ? hw->ddp_grad_copies : 0;
    ratio = costdb_grad_buffer_ratio(hw->grad_reduce_bytes, p->dtype == APPROF_F32 ? 4.0 : 2.0);
    for (size_t i = 0; i < p->n_placements; i++) {
        const ApprofPlacement *pl = &p->placements[i];
        if (pl->role != APPROF_ROLE_PARAM)
            continue;
        n += 1.0;
        if (copies)
            t += copies * approf_stream_kernel_seconds(hw, 2.0 * (double)pl->local_bytes * ratio,
                                                       stream);
    }
    launch = approf_stream_kernel_seconds(hw, 0.0, stream);
    if (hw->param_step_kernels > 0)
        t += n * hw->param_step_kernels * launch;
    return t;
}
