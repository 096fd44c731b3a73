/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stage's per-device program: what intra-op sharding of a layer range on a
 * logical mesh produces, and what a backend (analytic or CUDA) costs. Holds
 * the kernels each device runs forward and backward with per-device shapes,
 * the collectives the sharding needs, the memory accounting that becomes the
 * ModuleProfileResult fields, and the placement of every parameter, input and
 * output as an Alpa ShardingSpec.
 */
#ifndef APPROF_STAGE_H
#define APPROF_STAGE_H

#include <stdint.h>

#include "graph.h"
#include "variant.h"        /* costdb/: header-only, as the CUDA module reads it */

typedef enum {
    APPROF_COLL_ALL_REDUCE = 0,
    APPROF_COLL_ALL_GATHER,
    APPROF_COLL_REDUCE_SCATTER,
    APPROF_COLL_ALL_TO_ALL,
    APPROF_COLL_SEND_RECV,
    APPROF_COLL_KIND_COUNT
} ApprofCollKind;

/* Which logical mesh axes a collective runs over. */
#define APPROF_AXIS0 0x1
#define APPROF_AXIS1 0x2

typedef struct ApprofCollective {
    ApprofCollKind kind;
    int axes;             /* APPROF_AXIS0 | APPROF_AXIS1 */
    int group_size;       /* devices in one group (product of the axes' sizes) */
    int crosses_hosts;    /* 1 when a group spans more than one host */
    double bytes;         /* per-device message size (the full buffer for all-reduce) */
    int op;               /* operator that needs it (-1: resharding) */
    int hosts;            /* hosts one group spans, group_size / hosts devices on each
                           * (0: not known; measured curves are then not used) */
    int async_group;      /* a linear layer's backward collective that may run under the
                           * GEMMs of the same group (ApprofKernel.async_group); 0: none */
    int async_wgrad;      /* 1: under the group's weight-gradient GEMMs (a reduction of
                           * the input gradient); 0: under its input-gradient GEMMs (the
                           * input's re-gather) */
    /* ZeRO-3 under an overlapping schedule (ApprofHardwareSpec.zero3_schedule;
     * hw/zero3_overlap.c). zero3_unit: the unit (1..n in forward order: a
     * checkpoint block for FSDP2, a module for DeepSpeed) whose parameters
     * this all-gather brings or whose gradients this reduce-scatter
     * reduces; op is then the unit's first operator (kernels of ops from
     * there to the next unit's first are the unit's compute); 0: not
     * scheduled (priced serially). zero3_issue: when it is issued, as a
     * unit in forward order: an all-gather when that unit's compute starts
     * (the unit itself: when the unit before it in execution order ends;
     * 0: at the start of the phase); a reduce-scatter when that unit's
     * backward ends (0: when the phase's compute ends). */
    int zero3_unit;
    int zero3_issue;
    /* Hosts from the host of the group's first rank to that of its last:
     * a strided group (a logical mesh's axis 0) spans more hosts than it
     * holds GPUs on. What a scale-up domain of several hosts counts
     * (hw/cost.c, costdb_collective_domains); 0: hosts (the group's hosts
     * are consecutive). */
    int span_hosts;
    /* 1: a collective the host issues synchronously between modules, with
     * no GEMM of its own beside it: Transformer Engine's amax all-reduce
     * under delayed scaling (sharding/program_fp8.c push_amax_reduce),
     * never hidden under the phase's GEMMs by tp_comm_overlap
     * (hw/phase_cost.c); 0: any other. */
    int blocking;
} ApprofCollective;

typedef enum { APPROF_ROLE_PARAM = 0, APPROF_ROLE_INPUT, APPROF_ROLE_OUTPUT } ApprofRole;

/* How one tensor is laid out over the logical mesh. mesh_axis_of_dim[d] is
 * -1 (not split), 0, 1, or 2 (split over both axes, axis 0 major). */
typedef struct ApprofPlacement {
    int tensor;                       /* graph tensor index */
    ApprofRole role;
    int mesh_axis_of_dim[APPROF_MAX_DIMS];
    int64_t local_bytes;              /* bytes on one device */
    char spec[512];                   /* Alpa text: ShardingSpec((...), (...)) */
} ApprofPlacement;

/* A kernel array several programs read (stage.c): the ZeRO variants of a
 * stage derived from one build share the forward kernels, and the
 * backward's where their gradient accumulation is the same
 * (docs/performance.md, "Shared kernel arrays and prices kept"). Read-only once shared;
 * freed with its last holder. */
typedef struct ApprofKernelShare ApprofKernelShare;

/* A collective array several programs read (stage.c): the ZeRO variants
 * derived from one build whose end appends no collective to a phase
 * read the build's array for it (its first n_colls, the collectives
 * before the build's end), and a kept copy of a program reads the
 * program's. Read-only once shared; freed with its last holder. */
typedef struct ApprofCollShare ApprofCollShare;

typedef struct ApprofStageProgram {
    int start_layer, end_layer;       /* inclusive */
    int op_begin, op_end;             /* operator range [op_begin, op_end) */
    int mesh_hosts, mesh_gpus;        /* physical submesh (n, m) */
    int logical_a, logical_b;         /* logical mesh */
    int force_batch_dim;              /* -1 or the forced axis */
    ApprofDtype dtype;

    ApprofKernel *kernels[2];         /* [phase] per-device kernels */
    size_t n_kernels[2];
    ApprofKernelShare *kernel_share[2]; /* [phase] NULL: kernels[phase] is the program's
                                       * own; else held by this share (read-only) */
    /* [phase] A head (a view, read-only): the phase's kernels are the
     * n_kernel_head first kernels of another program's array, held by
     * head_share, then kernels[phase][0 .. n_kernels). Only the sweep's
     * model backend is given such a program (ApprofShardRequest's
     * kernel_views); approf_phase_kernel reads either kind, and
     * approf_stage_program_flatten makes one array of the two. 0 and NULL:
     * no head. */
    const ApprofKernel *kernel_head[2];
    size_t n_kernel_head[2];
    ApprofKernelShare *head_share[2];
    ApprofCollective *colls[2];       /* [phase] collectives (excl. grad sync) */
    size_t n_colls[2];
    ApprofCollShare *coll_share[2];   /* [phase] NULL: colls[phase] is the program's own;
                                       * else held by this share (read-only: its first
                                       * n_colls[phase] are the program's) */
    /* [phase] 0, or a number no other prefix has (approf_coll_prefix_id):
     * colls[ph][0 .. n_coll_prefix[ph]) are the collectives every program
     * of one build starts with (the build's before its end, which only
     * appends: sharding/program.c, zero_family.c), so that a price memo
     * resumes the loop over them where the kernels' sum is the same
     * (approf_phase_seconds_memo). Copies keep it (the same collectives). */
    uint64_t coll_prefix[2];
    size_t n_coll_prefix[2];
    ApprofCollective grad_sync;       /* the once-per-iteration gradient all-reduce
                                       * (before ZeRO: what plain data parallelism syncs) */

    /* The variant (docs/variants.md); its ZeRO stage shards over the
     * grad_sync group. */
    CostdbVariant variant;
    /* Once per iteration after the last backward (apply-grad): collectives
     * (gradient all-reduce, or ZeRO's reduce-scatter / all-gather) and the
     * bytes the optimizer step reads and writes on one device. */
    ApprofCollective apply_colls[2];
    size_t n_apply_colls;
    double optimizer_bytes;
    double optimizer_elements;        /* the parameters Adam's step updates on one device
                                       * (costdb_adam_bytes' elements; optimizer_bytes may
                                       * hold more: FP8 weights' casts): what a measuring
                                       * backend runs its fused Adam kernel over */
    /* DeepSpeed's gather of the persistent parameters after every
     * optimizer step (stage3.py _post_step -> _allgather_params, v0.3.13 to
     * v0.5.10): the copy kernels it runs on one device, one per rank of the
     * list-form all-gather and one per persistent parameter and rank whose
     * slice starts inside it, and the bytes they copy in all
     * (sharding/program_zero.c, shard_zero3_post_step; priced in
     * approf_stage_apply_seconds). 0 for every other program. */
    double zero3_post_step_copies, zero3_post_step_bytes;

    /* Memory per device, bytes, following docs/alpa-semantics.md's ModuleProfileResult. */
    int64_t invar_size[2], outvar_size[2], temp_buffer_size[2], peak_memory[2];
    /* the part of temp_buffer_size that scales with the tokens the device
     * holds (per-token buffers; the rest is weight-sized: ZeRO-3's gathered
     * blocks, a fresh parameter gradient): CostdbEntry.temp_activation_size */
    int64_t temp_activation_size[2];
    int64_t donated_size[2];          /* invars whose buffers the outvars reuse (the
                                       * backward's gradient accumulators) */
    int64_t intermediate_size;        /* alive between fwd and bwd of one micro-batch */
    int64_t initial_size;             /* optimizer state only apply-grad needs */
    int64_t param_bytes;              /* local parameter bytes */

    ApprofPlacement *placements;
    size_t n_placements;

    double ilp_objective;             /* what the sharding ILP minimised, seconds */
    /* The signature: the key of the sweep's measurement reuse (in memory
     * only, never stored), in two named parts; sharding/program_finish.c
     * owns both (shard_sign_program). signature_body: a digest of what the
     * program runs and holds (kernels, collectives, memory, variant,
     * gradient sync, optimizer, placements), with none of the request's
     * own fields below. signature: the text the reuse table compares, the
     * hex of a digest of the submesh, logical mesh, force_batch_dim,
     * dtype, ilp_objective and signature_body; "" for a program never
     * signed. So everything above but the layer and op ids is signed, and
     * two programs that differ only in those request fields (a forced-
     * batch build and its unforced twin, sharding/program_twin.c) share
     * the body and are re-signed from it. */
    uint64_t signature_body[2];
    char signature[64];
} ApprofStageProgram;

/* The kernels of p's phase ph, the head's (kernel_head) first: their
 * count, and kernel i < that count. */
static inline size_t approf_phase_kernel_count(const ApprofStageProgram *p, int ph)
{
    return p->n_kernel_head[ph] + p->n_kernels[ph];
}
static inline const ApprofKernel *approf_phase_kernel(const ApprofStageProgram *p, int ph,
                                                      size_t i)
{
    size_t h = p->n_kernel_head[ph];
    return i < h ? &p->kernel_head[ph][i] : &p->kernels[ph][i - h];
}

/* The program arrays' block pool (stage.c): a thread's kernel, collective
 * and placement arrays of some size, kept when a program lets them go
 * and handed to the next build of the same thread, instead of being
 * given back to the C library, which trims its heap and hands out fresh
 * pages that fault again one by one (docs/performance.md, "pgfault").
 * Every block is an ordinary malloc'd one: free() may take any of them,
 * and approf_block_give any malloc'd pointer.
 *
 * approf_block_take: like malloc (uninitialized), a kept block when one
 * fits. approf_block_grow: util_grow's contract (grow.h: room for need
 * elements of elem bytes, at least twice *cap; the first *cap elements
 * kept; 0, or -1 with *arr and *cap unchanged) through the pool.
 * approf_block_give: like free, the block kept when it is large enough
 * and there is room. approf_block_pool_drain: frees this thread's kept
 * blocks (a thread's are also freed when it exits). */
void *approf_block_take(size_t bytes);
int approf_block_grow(void **arr, size_t *cap, size_t need, size_t elem);
#define APPROF_BLOCK_GROW(arr, cap, need) \
    approf_block_grow((void **)&(arr), &(cap), (need), sizeof *(arr))
void approf_block_give(void *p);
void approf_block_pool_drain(void);

/* Frees the arrays inside p (not p itself) and zeroes it. */
void approf_stage_program_clear(ApprofStageProgram *p);
/* Deep copy (the copy owns all its arrays, a head's kernels joined to
 * its phase's own: no head); dst must be cleared by the caller later. */
int approf_stage_program_copy(ApprofStageProgram *dst, const ApprofStageProgram *src);
/* p's kernels of each phase with a head in one array of p's own (the
 * kernels and their order the same); 0, or APPROF_ENOMEM with p
 * unchanged. */
int approf_stage_program_flatten(ApprofStageProgram *p);

/* Shares the kernels of p's phase ph (held by a share from now on, p one
 * holder, read-only: nothing may be appended or changed) and returns the
 * share with one more holder for the caller (approf_kernel_share_release);
 * NULL without memory (p unchanged). */
ApprofKernelShare *approf_kernel_share(ApprofStageProgram *p, int ph);
/* q's kernels of phase ph become those of s, with s's head (one more
 * holder of each); q's own array for that phase, if any, is freed. A
 * share made of a phase with a head holds the head too. */
void approf_kernel_share_hold(ApprofStageProgram *q, int ph, ApprofKernelShare *s);
/* q's phase ph gets a head (kernel_head): the first n kernels of s's
 * array (one more holder of s; s itself without a head, q's phase without
 * one yet). 0, or -1 with q unchanged. */
int approf_kernel_share_head(ApprofStageProgram *q, int ph, ApprofKernelShare *s, size_t n);
/* A place in s's array where other programs' heads end (their
 * n_kernel_head; 0: none): what a price memo keeps the sums up to
 * (approf_phase_seconds_memo). Set by the share's maker; read-only. */
void approf_kernel_share_set_mark(ApprofKernelShare *s, size_t mark);
size_t approf_kernel_share_mark(const ApprofKernelShare *s);
/* One holder less; the array is freed with the last. */
void approf_kernel_share_release(ApprofKernelShare *s);
/* A number no other share of the process has (0 for NULL): what a price
 * kept for the array is keyed by (approf_phase_seconds_memo). */
uint64_t approf_kernel_share_id(const ApprofKernelShare *s);

/* Shares the collectives of p's phase ph (held by a share from now on, p
 * one holder, read-only: nothing may be appended or changed) and returns
 * the share with one more holder for the caller
 * (approf_coll_share_release); NULL without memory (p unchanged). */
ApprofCollShare *approf_coll_share(ApprofStageProgram *p, int ph);
/* q's collectives of phase ph become the first n of s's array (one more
 * holder of s; n at most the array's length); q's own array for that
 * phase, if any, is freed. */
void approf_coll_share_hold(ApprofStageProgram *q, int ph, ApprofCollShare *s, size_t n);
/* One holder less; the array is freed with the last. */
void approf_coll_share_release(ApprofCollShare *s);

/* A number for a collective prefix (coll_prefix) that no other prefix
 * or kernel share of the process has, from 1. */
uint64_t approf_coll_prefix_id(void);

const char *approf_coll_kind_name(ApprofCollKind k);

/* Phase pricing's account of Transformer Engine's userbuffers for
 * collective cl (of c seconds, in phase ph): hw/price_entry.c, for
 * phase_cost.c's collective loop. */
struct ApprofHardwareSpec;
void approf_ub_account(const struct ApprofHardwareSpec *hw, const ApprofCollective *cl, int ph,
                       double c, double *slowed, double *exposed);

#endif
