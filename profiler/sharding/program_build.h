/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the steps of the stage program's builder (program.c) share, and
 * its scratch (program_scratch.c): the per-tensor facts and the per-op
 * arrays a build takes from the context.
 */
#ifndef APPROF_SHARDING_PROGRAM_BUILD_H
#define APPROF_SHARDING_PROGRAM_BUILD_H

#include "sharding/context.h"
#include "sharding/program_int.h"

/* consumer_layout of stage op o's input slot i, kept for the build (at
 * o * APPROF_MAX_INPUTS + i): group_uses and push_input_colls both read
 * it. */
typedef struct ConsumerLayout {
    ShardLayout lc;
    int partial[2];
} ConsumerLayout;

/* What the steps of shard_build_program share: the stage, the program
 * being filled, the per-tensor facts of the tensors the stage touches,
 * the recomputation marks and checkpoint blocks, the arrays' capacities
 * and the digests the signature hashes. */
typedef struct ProgBuild {
    const ShardStage *st;
    ApprofStageProgram *p;
    TInfo *ti;                    /* per graph tensor: the context's scratch, or owned */
    int *touched, n_touched;      /* tensors whose TInfo is written, first-touch order */
    unsigned char *recomp;        /* per stage op: the backward reruns it */
    ConsumerLayout *cl;           /* per stage op and input slot (group_uses) */
    int *blk, n_blk;              /* checkpoint blocks (shard_stage_blocks) */
    size_t kcap[2], ccap[2];      /* room in p's kernels and collectives, per phase */
    ApprofHash128 *kdig[2];       /* per phase, each kernel's digest */
    ApprofHash128 *pdig;          /* each placement's spec text digest */
    double grad_set_bytes[4];     /* parameter gradients by axis set (APPROF_AXIS0 | 1) */
    int async, async_groups;      /* the spec prices async backward collectives; groups */
    double rs_kept;               /* reduce-scatter outputs the op policy saves */
    const HeldForward *held;      /* the forward held, not pushed (program_held.c) */
    int dig_borrowed;             /* kdig[0] is held's: not freed */
    ShardFacts *facts;            /* this build's facts, for the other modes (program_held.c) */
    int placed;                   /* p's placements taken from the held forward's facts */
    /* a none build's record of its push_ops for the full build
     * (program_splice.c), and a full build's splice taken from its held
     * forward: push_ops' result without pushing; NULL: none */
    struct ShardSplice *rec, *splice;
    /* from the held forward's facts, copied before a full recomputation
     * empties its slot (shard_forward_hold): each op's parameter bytes
     * (NULL: summed here) and the backward walk (bwd_set) */
    double *op_param, bwd_peak, bwd_fresh;
    int bwd_set;
    /* per stage op, in one block (scratch_take): each op's parameter
     * bytes and room for the held forward's (op_param above), the ops
     * with parameters, the checkpoint blocks' room; own: the block when
     * it is not the context's */
    double *param_bytes, *held_param;
    int *param_ops, *blk_room;
    void *own;
} ProgBuild;

/* program.c: the stage programs built in this process
 * (shard_build_program's calls; a test's witness of builds spared). */
unsigned long shard_build_count(void);

/* program_scratch.c: the per-tensor facts and the per-op arrays of a
 * build (taken; given back, the facts all zero), the context's freed;
 * and what the held forward's facts keep besides the tensor facts,
 * copied into the build. */
int shard_build_scratch_take(ProgBuild *b);
void shard_build_scratch_release(ProgBuild *b);
int shard_build_held_extras(ProgBuild *b, const ShardFacts *hf);

#endif
