/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pieces of the sharding pass below the ILP (sharding_mesh.c): the
 * logical mesh on the cluster, an operator's strategies over it (a mesh
 * axis per loop) and the layouts they give its operands, a tensor's bytes
 * per device under a layout, the collectives of a reshard, and which GEMM
 * of a linear layer is which.
 */
#ifndef APPROF_SHARDING_MESH_H
#define APPROF_SHARDING_MESH_H

#include <stdint.h>
#include <string.h>

#include "graph.h"
#include "hardware.h"
#include "stage.h"

/* (n_iter + 1)^2 with n_iter <= APPROF_MAX_ITER, rounded up. */
#define SHARD_MAX_STRATS 96

typedef struct ShardMesh {
    int n[2];          /* logical axis sizes */
    int cross[2];      /* a group over the axis spans hosts */
    int cross_both;
    int hosts[2];      /* hosts one group over the axis spans */
    int hosts_both;
    int span_hosts[2]; /* hosts from a group's first rank to its last (ApprofCollective) */
    int span_hosts_both;
} ShardMesh;

/* Loop of the iteration space each logical axis splits (-1: none). */
typedef struct ShardStrat {
    int ax[2];
} ShardStrat;

/* Tensor dimension each logical axis splits (-1: replicated over it). */
typedef struct ShardLayout {
    int d[2];
} ShardLayout;

void shard_mesh_init(ShardMesh *m, int hosts, int gpus, int a, int b);
ShardLayout shard_operand_layout(const ShardStrat *s, const int *map, int ndim);
double shard_local_bytes(const ApprofTensor *t, ShardLayout L, const ShardMesh *m);
double shard_coll_seconds(const ApprofHardwareSpec *hw, const ApprofCollective *c);
/* Forward and backward collectives that turn producer layout lp into
 * consumer layout lc (partial[x]: the consumer's input gradient is a partial
 * sum over axis x). regather: the consumer's backward reads this input, and
 * what is kept is the producer's shard, so the backward repeats the forward
 * gather (Megatron's sequence parallelism: docs/variants.md). At most 2
 * forward and 4 backward collectives; the backward ones that move the
 * gradient have async_wgrad set, the re-gathers not (their async_group is
 * 0: the stage program sets it under the spec's tp_async_grad). */
int shard_reshard(const ShardMesh *m, const ApprofTensor *t, ShardLayout lp, ShardLayout lc,
                  const int partial[2], int regather, ApprofCollective *fwd, int *nf,
                  ApprofCollective *bwd, int *nb);
/* 1 when shard_reshard moves nothing over axis x: the axis has one rank,
 * or both layouts split the same dimension on it (or none) and the
 * gradient is no partial sum over it. */
static inline int shard_reshard_axis_idle(const ShardMesh *m, ShardLayout lp, ShardLayout lc,
                                          const int partial[2], int x)
{
    return m->n[x] <= 1 || (lp.d[x] == lc.d[x] && !partial[x]);
}
/* Megatron-LM's asynchronous backward collectives of a linear layer (the
 * spec's tp_async_grad; schemas/hardware-spec.md). The input slot of
 * operator o's weight when o is a linear layer (a MATMUL with a parameter
 * operand: its largest), else -1. */
int shard_linear_weight_slot(const ApprofGraph *g, int o);
/* 1 when backward GEMM k of a linear layer computes the weight gradient:
 * its C holds the weight's local elements (welems), else 0. */
int shard_is_wgrad_gemm(const ApprofKernel *k, double welems);
/* A collective of kind over logical axis x of mesh m (its group size,
 * hosts and whether it crosses them), bytes per device, for operator op
 * (-1: resharding). Inline: out of line, the compiler built the value on
 * the stack field by field and read it back 16 bytes at a time, each
 * read waiting for the narrower stores it spans (store forwarding fails:
 * 90 % of its timer samples, 2 % of the 80-layer llama-3-70b full
 * sweep's producer); here it is written where the caller keeps it. */
static inline ApprofCollective shard_coll(const ShardMesh *m, ApprofCollKind kind, int x,
                                          double bytes, int op)
{
    ApprofCollective c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    c.axes = x == 0 ? APPROF_AXIS0 : APPROF_AXIS1;
    c.group_size = m->n[x];
    c.crosses_hosts = m->cross[x];
    c.bytes = bytes;
    c.op = op;
    c.hosts = m->hosts[x];
    c.span_hosts = m->span_hosts[x];
    return c;
}
/* Strategies of an op (see sharding.h); the count or a negative error. */
int shard_enum_strategies(const ApprofIterSpace *sp, const ShardMesh *m, int force,
                          ShardStrat *out, int max);
void shard_local_sizes(const ApprofIterSpace *sp, const ShardStrat *s, const ShardMesh *m,
                       int64_t *local);

#endif
