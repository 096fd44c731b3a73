/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gradient accumulation in a stage program (program_int.h): the width of
 * the accumulation buffers (the one owner of the rule that sizes them,
 * shard_grad_buffer_ratio), the add kernel that puts each micro-batch's
 * fresh gradients into them, and Megatron's gradient_accumulation_fusion,
 * which moves that add into the weight-gradient GEMM's epilogue. Used by
 * shard_build_program (program.c) and the sharding ILP (sharding.c).
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "grow.h"
#include "sharding/context.h"
#include "sharding/sharding_int.h"
#include "sharding/program_int.h"
#include "sharding/sharding.h"

/* Megatron's gradient_accumulation_fusion for operator o: its weight
 * gradient GEMM (the last GEMM of o in the backward whose C has the size
 * of o's parameters, less a bias) reads and writes the accumulation
 * buffer instead of storing the gradient: extra bytes per element of C
 * in its epilogue. Returns the elements of that C, or 0 when o has no
 * such GEMM (a norm's gradients are added by a kernel of their own, as
 * are a linear layer's bias gradients). */
static double fuse_grad_accum(ApprofStageProgram *p, ApprofHash128 **dig, int o, double elems,
                              double extra_per_elem)
{
    for (size_t i = p->n_kernels[1]; i-- > 0;) {
        ApprofKernel *k = &p->kernels[1][i];
        double c = (double)k->batch * (double)k->m * (double)k->n;
        if (k->op != o || k->kind != APPROF_K_GEMM || k->attention || !(k->store_bytes > 0))
            continue;
        if (c <= elems && c >= 0.9 * elems) {
            k->bytes += extra_per_elem * c;
            k->store_bytes += extra_per_elem * c;
            dig[1][i] = shard_kernel_digest(k);
            return c;
        }
    }
    return 0.0;
}

double shard_grad_buffer_ratio(const ShardStage *st)
{
    assert(st && st->g);
    return costdb_grad_buffer_ratio(st->hw ? st->hw->grad_reduce_bytes : 0.0,
                                    (double)approf_dtype_size(st->g->dtype));
}

double shard_adam_state_bytes(const ShardStage *st, double param_bytes)
{
    CostdbAdamWidths w;
    approf_hardware_adam_widths(st ? st->hw : NULL, &w);
    return costdb_adam_state_bytes(&w, param_bytes);
}

double shard_adam_bytes(const ShardStage *st, double elements, double param_bytes)
{
    CostdbAdamWidths w;
    approf_hardware_adam_widths(st ? st->hw : NULL, &w);
    return costdb_adam_bytes(&w, elements, param_bytes, param_bytes);
}

/* Bytes per element of the accumulation buffer: the width the gradients
 * are reduced in (the spec's grad_reduce_bytes), else the model's. */
static double accum_width(const ShardStage *st)
{
    return (double)approf_dtype_size(st->g->dtype) * shard_grad_buffer_ratio(st);
}

void shard_grad_accum_kernel(const ShardStage *st, double elems, ApprofKernel *k)
{
    double gw = (double)approf_dtype_size(st->g->dtype), aw = accum_width(st);
    memset(k, 0, sizeof *k);
    k->kind = APPROF_K_ELEMENTWISE;
    k->dtype = aw == 4.0 ? APPROF_F32 : st->g->dtype;
    k->batch = 1;
    k->elements = (int64_t)llround(elems);
    k->flops = elems;
    k->bytes = elems * (2.0 * aw + gw);
}

double shard_grad_accum_share(const ShardStage *st, const ApprofStageProgram *p)
{
    /* the buffers are the parameters' elements at the buffers' width */
    return p->param_bytes > 0 ? (double)p->donated_size[1] /
                                    ((double)p->param_bytes * shard_grad_buffer_ratio(st))
                              : 0.0;
}

/* Gradient accumulation (docs/alpa-semantics.md, "The backward module"):
 * every micro-batch's backward adds each parameter's fresh gradient into
 * its accumulation buffer. PyTorch's autograd (AccumulateGrad) and
 * Megatron-LM's DDP hook (`main_grad.add_(grad)`) run it as an add kernel
 * per parameter: priced as one elementwise kernel per operator that holds
 * parameters, reading the buffer and the gradient and writing the buffer.
 * The buffer is in the width the gradients are reduced in (the spec's
 * grad_reduce_bytes: Megatron's f32 main_grad for 16-bit models), else
 * the model's; under ZeRO-2/3 it is the device's partition
 * (donated_size[1] of the param_bytes). With the spec's grad_accum_fusion
 * the add runs inside the weight-gradient GEMM instead (Megatron's
 * gradient_accumulation_fusion): that GEMM's epilogue reads and writes the
 * buffer where it stored the gradient, priced as its store (hw/cost.c,
 * "GEMM epilogue"; fuse_grad_accum), and no kernel is added for it. */
int shard_push_grad_accum(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                          size_t *cap, ApprofHash128 **dig)
{
    const ApprofHardwareSpec *hw = st->hw;
    double gw = (double)approf_dtype_size(st->g->dtype);
    double aw = accum_width(st);
    double share = shard_grad_accum_share(st, p);
    int rc = 0, fuse = hw && hw->grad_accum_fusion;
    /* the add kernel is a function of its elements (the stage's dtype
     * and spec fixed): a stage's layers repeat a few sizes, so each is
     * made and digested once per call (ACCUM_SEEN of them, the last
     * made replacing the oldest) */
    enum { ACCUM_SEEN = 8 };
    ApprofKernel seen_k[ACCUM_SEEN];
    ApprofHash128 seen_d[ACCUM_SEEN];
    uint64_t seen_e[ACCUM_SEEN]; /* the elements' bits */
    int n_seen = 0, next = 0;
    /* with the build's table, only its ops with parameters
     * (shard_param_ops_index): any other's add has 0 elements, none */
    const double *tab = shard_op_param_table(st, ti);
    int n = tab ? st->n_param_ops : st->op_end - st->op_begin;
    if (!(share > 0.0))
        return 0;
    /* room for an add per op made once (what the pushes below would
     * grow to at most; one capacity for both arrays, as
     * shard_push_kernels keeps it) */
    if (n > 0 && (rc = shard_reserve_kernels(p, 1, cap, dig, (size_t)n)))
        return rc;
    /* the count and the arrays in locals: stored through p each add, the
     * compiler reloaded them after every kernel's copy (which may alias
     * p); stored back before fuse_grad_accum, which scans the backward
     * to its end, adds included, as it did */
    size_t at = p->n_kernels[1];
    ApprofKernel *kto = p->kernels[1];
    ApprofHash128 *dto = dig[1];
    for (int j = 0; j < n; j++) {
        int o = tab ? st->param_ops[j] : st->op_begin + j;
        double elems = (tab ? tab[o - st->op_begin] : shard_op_param_bytes_of(st, ti, o)) / gw *
                       share;
        if (!(elems >= 1.0))
            continue;
        if (fuse) {
            p->n_kernels[1] = at;
            elems -= fuse_grad_accum(p, dig, o, elems, 2.0 * aw - gw);
        }
        if (!(elems >= 1.0))
            continue;
        uint64_t bits;
        memcpy(&bits, &elems, sizeof bits);
        int i = 0;
        while (i < n_seen && seen_e[i] != bits)
            i++;
        if (i == n_seen) {
            i = n_seen < ACCUM_SEEN ? n_seen++ : next;
            next = (i + 1) % ACCUM_SEEN;
            seen_e[i] = bits;
            shard_grad_accum_kernel(st, elems, &seen_k[i]);
            seen_d[i] = shard_kernel_digest(&seen_k[i]);
        }
        /* pushed as shard_push_kernels pushes a run of one (op set, not
         * async), written in the room reserved above: no call, no test
         * of the room per add; the copy is shard_copy_kernels' memcpy of
         * every byte (padding too), at a size the compiler knows, so
         * inlined (a call and libc's memcpy dispatch per add before) */
        ApprofKernel *to = &kto[at];
        memcpy(to, &seen_k[i], sizeof *to);
        to->op = o;
        to->async_group = to->async_wgrad = 0;
        dto[at++] = seen_d[i];
    }
    p->n_kernels[1] = at;
    return 0;
}

