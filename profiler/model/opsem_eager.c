/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forward kernels of torchtitan's eager element-wise operations
 * (ApprofOpAttrs.eager), counted from torchtitan 9dec370:
 *
 * - RMSNorm (torchtitan/models/norms.py, class RMSNorm):
 *   (x.float() * rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps))
 *   .type_as(x) * weight, one kernel an operation: the upcast (read 16-bit,
 *   write f32), pow (f32 in and out), mean (f32 in, one f32 a row out),
 *   + eps and rsqrt (a row each: folded into the mean's kernel, their two
 *   launches not priced), the multiply (f32 in and out, the row's scale
 *   broadcast), the cast back (f32 in, 16-bit out) and the weight's
 *   multiply (16-bit in and out), which is the fused kernel opsem.c prices.
 * - apply_rotary_emb (torchtitan/models/llama/model.py): x.float(), viewed
 *   as complex (a view), multiplied by freqs_cis (complex64, seq x
 *   head_dim / 2, broadcast), viewed as real and type_as(x): the upcast,
 *   the complex multiply (f32 in and out; the fused kernel's slot) and the
 *   cast back.
 * - repeat_kv (same file): unsqueeze, expand, reshape of k and v to the
 *   query heads, a copy each (read once, write n_rep times); SDPA then
 *   reads k and v at the query heads.
 *
 * The added kernels carry no FLOPs: the fused kernel's count stands for the
 * operation's arithmetic, so a model's FLOPs do not depend on the option.
 *
 * Backward: autograd's formulas for these (PyTorch's
 * tools/autograd/derivatives.yaml at torch 1963fc8) were not read, so the
 * backward stays the fused kernel's count (docs/validation.md, "torchtitan's
 * eager element-wise ops").
 */
#include <string.h>

#include "graph_int.h"
#include "opsem_eager.h"

static void ew(ApprofKernel *k, ApprofKernelKind kind, int op, ApprofDtype dt, int64_t elems,
               double flops, double bytes)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->op = op;
    k->dtype = dt;
    k->batch = 1;
    k->elements = elems;
    k->flops = flops;
    k->bytes = bytes;
}

int approf_eager_kernels(const ApprofGraph *g, int opi, const ApprofIterSpace *sp,
                         const int64_t *loc, ApprofKernel *ks, int nk, int max)
{
    const ApprofOp *op = &g->ops[opi];
    const ApprofTensor *x = &g->tensors[op->inputs[0]];
    ApprofDtype dt = x->dtype;
    double es = (double)approf_dtype_size(dt), f32 = 4.0;

    if (!op->attrs.eager || nk < 1)
        return nk;
    switch (op->kind) {
    case APPROF_OP_RMS_NORM: {
        int64_t e = approf_local_elems(x, sp->in_map[0], sp, loc);
        int64_t h = approf_local_dim(x, sp->in_map[0], sp, loc, x->ndim - 1);
        double r = h > 0 ? (double)e / (double)h : 0;
        if (nk + 5 > max)
            return APPROF_EINVAL;
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0, (double)e * (es + f32));      /* x.float() */
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0, (double)e * 2 * f32);         /* pow(2) */
        ew(&ks[nk++], APPROF_K_REDUCTION, opi, dt, e, 0,                              /* mean, + eps, rsqrt */
           (double)e * f32 + r * 5 * f32);
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0,                             /* x * rsqrt */
           (double)e * 2 * f32 + r * f32);
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0, (double)e * (f32 + es));      /* type_as(x) */
        break;
    }
    case APPROF_OP_ROPE: {
        int64_t e = approf_local_elems(x, sp->in_map[0], sp, loc);
        int64_t s = approf_local_dim(x, sp->in_map[0], sp, loc, 1);
        int64_t d = approf_local_dim(x, sp->in_map[0], sp, loc, x->ndim - 1);
        if (nk + 2 > max)
            return APPROF_EINVAL;
        /* the fused kernel's slot: the complex multiply, f32 in and out,
         * freqs_cis's s x d / 2 complex64 read once */
        ks[0].bytes = (double)e * 2 * f32 + (double)s * (double)d * f32;
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0, (double)e * (es + f32));      /* x.float() */
        ew(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, e, 0, (double)e * (f32 + es));      /* type_as(x) */
        break;
    }
    case APPROF_OP_ATTENTION: {
        /* loc: batch, query positions, kv heads, query heads per kv head,
         * key positions, head dim (opsem.c) */
        double ekv = (double)loc[0] * loc[4] * loc[2] * loc[5], rep = (double)loc[3];
        if (rep <= 1)
            return nk;
        if (nk + 2 > max)
            return APPROF_EINVAL;
        ks[0].bytes += 2.0 * es * ekv * (rep - 1);   /* SDPA reads k and v at the query heads */
        for (int i = 0; i < 2; i++)                  /* repeat_kv(xk), repeat_kv(xv) */
            ew(&ks[nk++], APPROF_K_COPY, opi, dt, (int64_t)(ekv * rep), 0, es * ekv * (1 + rep));
        break;
    }
    default:
        break;
    }
    return nk;
}
