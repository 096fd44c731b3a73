/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The train metrics' states synchronized across the ranks once a step.
 *
 * Composer v0.17.2 (composer/trainer/trainer.py, `_train_loop`) calls
 * `_compute_and_log_metrics('train', ...)` after every batch, and it runs
 * `metric.compute()` on a copy of each train metric. torchmetrics (Composer
 * v0.17.2's setup.py pins torchmetrics>=0.10.0,<1.1; read at v1.0.3)
 * synchronizes a metric's states in `compute` by default
 * (`sync_on_compute` True, `Metric._sync_dist`): for each state
 * `gather_all_tensors` (torchmetrics/utilities/distributed.py) calls
 * `torch.distributed.barrier` and then, a scalar state,
 * `_simple_gather_all_tensors`: world-size `torch.zeros_like` tensors, one
 * at a time in a Python loop, and `torch.distributed.all_gather` of the
 * list; then `torch.stack` of the gathered list and the state's reduction
 * (`dim_zero_sum`). PyTorch's NCCL process group runs a barrier as an
 * all-reduce of a one-element f32 tensor it zero-fills, which the caller
 * waits for on the host, and a list all-gather as one NCCL all-gather into
 * a flat buffer followed by one `copy_` per rank on the NCCL stream
 * (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, `barrier`,
 * `allgather`; docs/nccl-tuning.md for the list form at pytorch 00f5dfd5).
 * llm-foundry's MPT (llmfoundry/models/mpt/modeling_mpt.py at 5e85bd62d)
 * has two train metrics, LanguageCrossEntropy and LanguagePerplexity, two
 * scalar states each (`sum_loss`, `total_items`, composer/metrics/nlp.py at
 * v0.17.2): 4 states a step.
 *
 * So a synchronized state costs, in series (the barrier drains the device
 * before the host goes on): the barrier's fill and all-reduce, n fills, one
 * all-gather of n scalars, n copies, the stack and the sum, with n the
 * stage's devices (Composer's runs are data parallel: the world). Each
 * kernel is priced as any streaming kernel (approf_stream_kernel_seconds:
 * its bytes at the memory rate plus the spec's kernel_launch_overhead, at
 * least its host_overhead), each collective as any collective
 * (approf_collective_cost). A scalar is priced at 8 bytes (`total_items`
 * is int64, `sum_loss` f32): the collectives are latency-bound. No constant
 * of its own: the term grows with n through the launches and NCCL's ring
 * latency. docs/validation.md, "FSDP family: what grows from 8 to 512
 * H100s".
 */
#include <string.h>

#include "hardware.h"
#include "stage.h"

#define METRIC_SCALAR_BYTES 8.0

double approf_metric_sync_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    ApprofCollective c;
    double stream, n, kernel, t;
    int devices;

    if (!hw || !p || hw->metric_sync_states <= 0 || p->mesh_hosts < 1 || p->mesh_gpus < 1)
        return 0.0;
    devices = p->mesh_hosts * p->mesh_gpus;
    if (devices <= 1)
        return 0.0;
    stream = hw->memory_bandwidth * (hw->memory_efficiency > 0 ? hw->memory_efficiency : 1.0);
    if (!(stream > 0))
        return 0.0;
    n = (double)devices;
    kernel = approf_stream_kernel_seconds(hw, METRIC_SCALAR_BYTES, stream);
    memset(&c, 0, sizeof c);
    c.op = -1;
    c.group_size = devices;
    c.hosts = p->mesh_hosts;
    c.crosses_hosts = p->mesh_hosts > 1;
    /* the barrier: a zero-filled f32 element, all-reduced */
    c.kind = APPROF_COLL_ALL_REDUCE;
    c.bytes = 4.0;
    t = approf_stream_kernel_seconds(hw, 4.0, stream) + approf_collective_cost(hw, &c);
    /* n fills, the all-gather of n scalars, n copies out of its buffer */
    c.kind = APPROF_COLL_ALL_GATHER;
    c.bytes = n * METRIC_SCALAR_BYTES;
    t += n * kernel + approf_collective_cost(hw, &c) +
         n * approf_stream_kernel_seconds(hw, 2.0 * METRIC_SCALAR_BYTES, stream);
    /* torch.stack of the list and the sum over it */
    t += approf_stream_kernel_seconds(hw, 2.0 * n * METRIC_SCALAR_BYTES, stream) +
         approf_stream_kernel_seconds(hw, n * METRIC_SCALAR_BYTES, stream);
    return t * (double)hw->metric_sync_states;
}
