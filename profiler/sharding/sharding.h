/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Intra-op sharding of a stage (docs/alpa-semantics.md "Intra-op sharding"): for a layer
 * range of a graph on a logical mesh (a, b) of a physical submesh (n, m),
 * choose one strategy per operator (which loop dimensions of its iteration
 * space split over logical axes 0 and 1) minimising per-device compute, the
 * collectives each strategy implies and the resharding between producer and
 * consumer layouts, with the strategy ILP (ilp.h, CBC), and turn the choice
 * into the stage's per-device program (stage.h): kernels per phase,
 * collectives per phase, the gradient all-reduce, memory and placements.
 *
 * Rules (documented choices, see also the README section on sharding):
 * - Strategies: each logical axis of size > 1 goes to one loop that is not
 *   FIXED and whose size it divides, or to none (replicated); both axes may
 *   go to the same loop (2-D split, axis 0 major) when a*b divides it.
 *   force_batch_dim 0: when the op has a batch loop and axis 0 (size > 1)
 *   divides it, only strategies with the batch loop on axis 0 alone; when
 *   axis 0 has size 1 the batch loop must not be split (Alpa's
 *   FilterStrategy). force_batch_dim -1: no filter.
 * - Forward: a REDUCE loop split on an axis all-reduces the outputs over it.
 *   Resharding an edge per axis: same -> nothing; producer split, consumer
 *   replicated -> all-gather; producer replicated, consumer split -> local
 *   slice; different dims -> all-to-all.
 * - Backward (transposed): when the consumer splits work on an axis over
 *   which its input is replicated, the input gradient is a partial sum:
 *   reduce-scatter to a producer split on that axis, all-reduce to a
 *   replicated one. Otherwise all-gather transposes to a slice, a slice to an
 *   all-gather, an all-to-all to an all-to-all. Parameter gradients that are
 *   partial sums are the once-per-iteration grad_sync (excluded from
 *   compute_cost; in the ILP at 1/num_micro_batches of its cost, as Alpa).
 *   Stage-input activations with partial gradients all-reduce them in the
 *   backward module. Graph inputs (data, labels) have no gradient.
 * - Parameters and stage inputs take the layout their first consumer's
 *   strategy needs (no resharding cost inside the stage).
 * - Hosts: devices are numbered host-major and the logical mesh row-major,
 *   so an axis-1 group is b consecutive devices (crosses hosts iff b > m) and
 *   an axis-0 group has stride b (crosses hosts iff a > 1 and n > 1); a group
 *   over both axes crosses iff n > 1.
 * - Memory (bytes per device): see approf_shard_stage.
 */
#ifndef APPROF_SHARDING_H
#define APPROF_SHARDING_H

#include <stddef.h>

#include "graph.h"
#include "hardware.h"
#include "sharding/ilp.h"
#include "stage.h"

typedef struct ApprofShardContext ApprofShardContext;

typedef struct ApprofShardRequest {
    int start_layer, end_layer;   /* inclusive layer range */
    int mesh_hosts, mesh_gpus;    /* physical submesh (n, m) */
    int logical_a, logical_b;     /* logical mesh, a * b == n * m */
    int force_batch_dim;          /* -1 ({}) or 0 (force_batch_dim_to_mesh_dim: 0) */
    ApprofIlpMethod method;       /* APPROF_ILP_ELIMINATE_TREES_THEN_CBC normally */
    /* The variant (docs/variants.md). memory_levels K >= 1 (0 reads as 1)
     * is how many points of the time-versus-memory Pareto set the sweep
     * keeps; variant.memory_level < K picks one (0: the fastest = Alpa's
     * ILP optimum). */
    CostdbVariant variant;
    int memory_levels;
    /* ZeRO stages (bit z, z > zero) the caller will ask for next for this
     * same stage (the sweep's variants, zero innermost): the program of
     * this request is built once and theirs derived from it, since ZeRO
     * changes only what program_zero.c adds (docs/performance.md, "ZeRO
     * variants derived"). The context keeps them until they are asked for;
     * 0: none (the result is the same either way). */
    unsigned zero_family;
    /* 1: the caller reads a program's kernels through approf_phase_kernel
     * (stage.h), so a derived ZeRO program may begin its backward with
     * the build's, read in place (a head: kernel_head) instead of a copy
     * of it (docs/performance.md, "The derived backwards read in place");
     * 0: every program's kernels are one array of its own or shared. The
     * programs are the same either way. */
    int kernel_views;
} ApprofShardRequest;

typedef struct ApprofShardStats {
    size_t solved;                /* ILPs solved */
    size_t cached;                /* answered from the ILP cache */
    size_t cbc_runs;              /* solves that reached CBC */
} ApprofShardStats;

/* Creates a sharding context for graph g (built for one micro-batch),
 * layering l and hardware hw (all borrowed; they must outlive the context).
 * num_micro_batches >= 1 scales the gradient all-reduce inside the ILP. */
int approf_shard_context_new(const ApprofGraph *g, const ApprofLayering *l,
                             const ApprofHardwareSpec *hw, int num_micro_batches,
                             ApprofShardContext **out);
void approf_shard_context_free(ApprofShardContext **ctx);
/* Forgets the sharding ILP's stored solutions (approf_ilp_cache_clear):
 * the ILP is a function of its problem, so a stage solved again gets the
 * answer it got before; a sweep calls it when no later tuple has the
 * submesh shape it solved for, to bound its memory. */
void approf_shard_context_forget_solutions(ApprofShardContext *ctx);
void approf_shard_context_stats(const ApprofShardContext *ctx, ApprofShardStats *out);

/* A 128-bit key of what determines the stage program of req up to the
 * names of its tensors: two requests with equal keys give programs (kernels,
 * collectives, memory, status, placements) that are equal once the k-th
 * tensor of one stage's order is read as the k-th of the other's. *tensors
 * (malloc'd, n_tensors entries) receives that order: the tensors of the
 * stage's ops, inputs then outputs, in first-touch order. The key covers the
 * ops, shapes, in-stage edges and boundary facts (what the sharding ILP
 * sees), the checkpoint blocks, the mesh and the variant. */
int approf_shard_program_key(ApprofShardContext *ctx, const ApprofShardRequest *req,
                             uint64_t key[2], int **tensors, int *n_tensors);
/* approf_shard_program_key without the copy: *tensors is ctx's own array,
 * valid until the next program key asked of ctx (a stage's build does not
 * touch it); the sweep asks for one key per tuple. */
int approf_shard_program_key_view(ApprofShardContext *ctx, const ApprofShardRequest *req,
                                  uint64_t key[2], const int **tensors, int *n_tensors);
/* Counts one stage answered without approf_shard_stage (its program came
 * from a stage of equal key) as a reused ILP in the context's stats. */
void approf_shard_note_reuse(ApprofShardContext *ctx);

/* Shards layers req->start_layer..end_layer and fills *out (cleared first
 * by the caller or zeroed; the caller frees it with
 * approf_stage_program_clear). Memory per device: invar = stage inputs +
 * parameters (backward: + saved activations + gradients of the stage
 * outputs); outvar = stage outputs + saved activations (backward: input and
 * parameter gradients); temp = peak of the transient tensors; peak = the
 * sum; intermediate = saved activations; initial = Adam state: two f32
 * moments per local parameter plus an f32 master copy for f16/bf16.
 * The memory each strategy keeps resident (parameters with their gradient
 * and optimizer state, saved activations) is the ILP's node memory; the
 * Pareto set over it is computed once per (range, mesh, config) and kept
 * for the variants that follow. Recomputation and ZeRO transform the
 * program of the chosen solution (docs/variants.md).
 * Returns 0, APPROF_EINFEASIBLE (no strategy combination), APPROF_ENOVARIANT
 * (the variant does not exist for this stage: fewer Pareto points than
 * memory_level + 1, ZeRO without data-parallel replicas, selective
 * recomputation without attention; err says which), APPROF_EINVAL,
 * APPROF_ENOMEM or APPROF_EUNSUPPORTED, with a message in err. */
int approf_shard_stage(ApprofShardContext *ctx, const ApprofShardRequest *req,
                       ApprofStageProgram *out, char *err, size_t errlen);

#endif
