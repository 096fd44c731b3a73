/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pieces of the sharding pass below the ILP (sharding_mesh.h): the logical
 * mesh on the cluster (which axis crosses hosts), a tensor's bytes per
 * device under a layout, the collectives of a reshard, which GEMM of a
 * linear layer is which, and the strategies of an operator (a logical mesh
 * axis per loop). sharding.c builds and solves the ILP from them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "hash.h"
#include "sharding/sharding_mesh.h"

/* ---- mesh, layouts, collectives ---------------------------------------- */

/* Hosts spanned by a group of size devices, stride apart, of a logical mesh
 * laid out row-major over hosts of gpus devices (Alpa's logical mesh). */
static int hosts_spanned(int hosts, int gpus, int stride, int size)
{
    int per_host;
    if (hosts <= 1 || gpus <= 0 || size <= 1)
        return 1;
    per_host = stride >= gpus ? 1 : gpus / stride;
    if (per_host > size)
        per_host = size;
    return per_host > 0 && size % per_host == 0 ? size / per_host : 0;
}

void shard_mesh_init(ShardMesh *m, int hosts, int gpus, int a, int b)
{
    m->n[0] = a;
    m->n[1] = b;
    m->cross[0] = a > 1 && hosts > 1;
    m->cross[1] = b > gpus;
    m->cross_both = hosts > 1;
    m->hosts[0] = hosts_spanned(hosts, gpus, b, a);
    m->hosts[1] = hosts_spanned(hosts, gpus, 1, b);
    m->hosts_both = hosts_spanned(hosts, gpus, 1, a * b);
    /* a group over axis 0 has ranks b apart: (a - 1) b + 1 devices from
     * its first to its last; one over axis 1 or both, consecutive ones */
    m->span_hosts[0] = hosts > 1 && gpus > 0 ? ((a - 1) * b + gpus) / gpus : 1;
    m->span_hosts[1] = hosts > 1 && gpus > 0 ? (b + gpus - 1) / gpus : 1;
    m->span_hosts_both = hosts > 1 && gpus > 0 ? (a * b + gpus - 1) / gpus : 1;
}

ShardLayout shard_operand_layout(const ShardStrat *s, const int *map, int ndim)
{
    ShardLayout L = {{-1, -1}};
    for (int x = 0; x < 2; x++) {
        if (s->ax[x] < 0)
            continue;
        for (int d = 0; d < ndim; d++)
            if (map[d] == s->ax[x]) {
                L.d[x] = d;
                break;
            }
    }
    return L;
}

double shard_local_bytes(const ApprofTensor *t, ShardLayout L, const ShardMesh *m)
{
    double b = (double)approf_tensor_bytes(t);
    for (int x = 0; x < 2; x++)
        if (L.d[x] >= 0)
            b /= m->n[x];
    return b;
}

double shard_coll_seconds(const ApprofHardwareSpec *hw, const ApprofCollective *c)
{
    return approf_collective_cost(hw, c);
}

/* Bytes of t in layout L with axis x undone (the group-wide buffer of a
 * collective over x). The layout is made anew, not written at d[x]: a
 * store at a variable index into L's copy, read back whole for the call,
 * stalled on store forwarding (half of shard_reshard's timer samples). */
static double group_bytes(const ApprofTensor *t, ShardLayout L, int x, const ShardMesh *m)
{
    ShardLayout g = {{x == 0 ? -1 : L.d[0], x == 1 ? -1 : L.d[1]}};
    return shard_local_bytes(t, g, m);
}

int shard_reshard(const ShardMesh *m, const ApprofTensor *t, ShardLayout lp, ShardLayout lc,
                  const int partial[2], int regather, ApprofCollective *fwd, int *nf,
                  ApprofCollective *bwd, int *nb)
{
    *nf = *nb = 0;
    for (int x = 0; x < 2; x++) {
        /* the same split on x and no partial sum: nothing moves over x
         * (none of the cases below), so the group's bytes are not worked
         * out: most of a build's reshards (docs/performance.md, "The
         * memory levels' builds: where the full space's extra goes") */
        if (shard_reshard_axis_idle(m, lp, lc, partial, x))
            continue;
        int p = lp.d[x], c = lc.d[x];
        double gb = group_bytes(t, lc, x, m);
        /* forward, repeated in the backward when the consumer reads the
         * gathered copy there but only the shard is kept */
        int g0 = *nf;
        if (p >= 0 && c < 0)
            fwd[(*nf)++] = shard_coll(m, APPROF_COLL_ALL_GATHER, x, group_bytes(t, lp, x, m), -1);
        else if (p >= 0 && c >= 0 && p != c)
            fwd[(*nf)++] = shard_coll(m, APPROF_COLL_ALL_TO_ALL, x, gb, -1);
        if (regather && *nf > g0)
            bwd[(*nb)++] = fwd[g0];
        /* backward: the gradient flows from layout lc back to lp (marked
         * async_wgrad: a linear layer's weight gradient can hide it) */
        int g1 = *nb;
        if (partial[x]) {
            bwd[(*nb)++] = shard_coll(m, p >= 0 ? APPROF_COLL_REDUCE_SCATTER : APPROF_COLL_ALL_REDUCE, x,
                                gb, -1);
        } else if (p < 0 && c >= 0) {
            bwd[(*nb)++] = shard_coll(m, APPROF_COLL_ALL_GATHER, x, gb, -1);
        } else if (p >= 0 && c >= 0 && p != c) {
            bwd[(*nb)++] = shard_coll(m, APPROF_COLL_ALL_TO_ALL, x, gb, -1);
        }
        if (*nb > g1)
            bwd[g1].async_wgrad = 1;
    }
    return 0;
}

int shard_linear_weight_slot(const ApprofGraph *g, int o)
{
    const ApprofOp *op = &g->ops[o];
    int w = -1;
    if (op->kind != APPROF_OP_MATMUL)
        return -1;
    for (int i = 0; i < op->n_inputs; i++) {
        const ApprofTensor *t = &g->tensors[op->inputs[i]];
        if (t->role == APPROF_TENSOR_PARAM &&
            (w < 0 || approf_tensor_elements(t) >
                          approf_tensor_elements(&g->tensors[op->inputs[w]])))
            w = i;
    }
    return w;
}

int shard_is_wgrad_gemm(const ApprofKernel *k, double welems)
{
    double c = (double)k->batch * (double)k->m * (double)k->n;
    return c >= 0.9 * welems && c <= 1.1 * welems;
}

/* ---- strategies -------------------------------------------------------- */

static int loop_ok(const ApprofIterSpace *sp, int l, int64_t div)
{
    return sp->kind[l] != APPROF_ITER_FIXED && sp->size[l] % div == 0;
}

int shard_enum_strategies(const ApprofIterSpace *sp, const ShardMesh *m, int force,
                          ShardStrat *out, int max)
{
    int batch = -1, k = 0;
    for (int l = 0; l < sp->n_iter; l++)
        if (sp->is_batch[l])
            batch = l;
    int last0 = m->n[0] > 1 ? sp->n_iter - 1 : -1;
    int last1 = m->n[1] > 1 ? sp->n_iter - 1 : -1;
    for (int a0 = -1; a0 <= last0; a0++) {
        if (a0 >= 0 && !loop_ok(sp, a0, m->n[0]))
            continue;
        for (int a1 = -1; a1 <= last1; a1++) {
            if (a1 >= 0) {
                int64_t div = a1 == a0 ? (int64_t)m->n[0] * m->n[1] : m->n[1];
                if (!loop_ok(sp, a1, div))
                    continue;
            }
            if (force == 0 && batch >= 0) {
                if (m->n[0] > 1 && sp->size[batch] % m->n[0] == 0 &&
                    (a0 != batch || a1 == batch))
                    continue;
                if (m->n[0] <= 1 && a1 == batch)
                    continue;
            }
            if (k == max)
                return APPROF_EUNSUPPORTED;
            out[k].ax[0] = a0;
            out[k].ax[1] = a1;
            k++;
        }
    }
    return k;
}

void shard_local_sizes(const ApprofIterSpace *sp, const ShardStrat *s, const ShardMesh *m,
                       int64_t *local)
{
    for (int l = 0; l < sp->n_iter; l++) {
        local[l] = sp->size[l];
        for (int x = 0; x < 2; x++)
            if (s->ax[x] == l)
                local[l] /= m->n[x];
    }
}
