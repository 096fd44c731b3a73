/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PyTorch's ring attention, as torchtitan runs its context parallelism.
 *
 * Read at the library's stored pytorch/pytorch (0123248a and f2127dbd,
 * both 2025; the same code in both; the torchtitan rows ran the nightly
 * 1963fc8 of 2024-12-23, not read), torch/distributed/tensor/experimental/
 * _attention.py:
 *
 * - _templated_ring_attention: each step concatenates the K and V it holds
 *   and hands them to the rotater (_create_rotater: _AllGatherRotater, one
 *   all-gather at the first step, or _AllToAllRotater, permute_tensor to
 *   the next rank every step), runs the SDPA kernel of its section, then
 *   _SDPAMerger.step: with _ContextParallelOptions.convert_to_f32 (True)
 *   the step's output and log-sum-exp converted to f32 and merged into
 *   the running ones (out - sigmoid(block_lse - lse) * (out - block_out));
 *   results() converts back.
 * - _templated_ring_attention_backward: dq, dk and dv accumulated in f32
 *   (accum_dtype, zeros_like), K and V exchanged again by the same rotater,
 *   and the f32 dk and dv passed round the ring every step
 *   (dkv_rotater, _RotateMethod.ALL_TO_ALL whatever the forward's).
 *
 * torchtitan 9dec370 (torchtitan/models/llama/model.py, Attention.forward)
 * repeats K and V to the query heads (repeat_kv) before
 * F.scaled_dot_product_attention, so each K and V the ring moves is as
 * wide as the query; its default rotate method is "allgather"
 * (config_manager.py, --experimental.context_parallel_rotate_method).
 *
 * The messages are hidden under the step kernels they run beside (below),
 * each kernel's time apsolve_cp_ring_step_seconds (cp_attention.c); what
 * is left of them is exposed. The merges are priced as one memory pass each, the element-wise chain
 * fused (the runs compiled each transformer block; eager PyTorch runs it
 * as several kernels, more passes): forward, per step after the first,
 * read the running f32 output and the step's output, write the f32
 * output; backward, per step, the same for each of dq, dk and dv. The log-
 * sum-exps (1 / head size of the output) are left out.
 */
#include <math.h>

#include "cp_torch_ring.h"

void apsolve_cp_torch_ring(const CostdbFabric *f, int all_gather, double q_bytes, double dsize,
                           int n, int stride, int M, double step_fwd, double *fwd_s,
                           double *bwd_s, double *fwd_b, double *bwd_b, double *merge_fwd,
                           double *merge_bwd)
{
    double kv, dkv, sr, sr32, ag, kf, kb, elems, pass;
    if (!f || n <= 1 || !(q_bytes > 0) || !(dsize > 0))
        return;
    kv = 2.0 * q_bytes;      /* K and V, repeated to the query heads */
    dkv = kv * 4.0 / dsize;  /* their gradients, accumulated and sent in f32 */
    sr = costdb_strided_collective_seconds(f, COSTDB_COLL_SEND_RECV, kv, n, stride, M);
    sr32 = costdb_strided_collective_seconds(f, COSTDB_COLL_SEND_RECV, dkv, n, stride, M);
    ag = all_gather ? costdb_strided_collective_seconds(f, COSTDB_COLL_ALL_GATHER, n * kv, n,
                                                        stride, M)
                    : 0.0;
    /* Each exchange is issued before the kernel it can hide under and
     * waited for after it (functional collectives on NCCL's stream): the
     * forward's K and V for step i + 1 under step i's kernel, the
     * all-gather under step 0's; the backward's K and V likewise, and the
     * gradients of step i under step i + 1's kernel, the last waited for
     * after the loop. */
    kf = step_fwd > 0 ? step_fwd : 0.0;
    kb = 2.5 * kf;           /* five GEMMs to the forward's two */
    if (all_gather) {
        *fwd_s += fmax(0.0, ag - kf);
        *bwd_s += fmax(0.0, ag - kb) + (n - 1) * fmax(0.0, sr32 - kb) + sr32;
    } else {
        *fwd_s += (n - 1) * fmax(0.0, sr - kf);
        *bwd_s += (n - 1) * fmax(0.0, sr + sr32 - kb) + sr32;
    }
    *fwd_b += (n - 1) * kv;
    *bwd_b += (n - 1) * kv + n * dkv;
    /* one pass: the f32 accumulator read and written, the step's part read */
    elems = q_bytes / dsize;
    pass = elems * (4.0 + dsize + 4.0);
    *merge_fwd += costdb_memory_seconds(f, (n - 1) * pass);
    *merge_bwd += costdb_memory_seconds(f, 3.0 * n * pass);
}
