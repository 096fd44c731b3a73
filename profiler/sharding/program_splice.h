/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recompute-full stage program's kernels and collectives spliced from
 * the none build of the same stage and sharding solution (program_splice.c;
 * docs/perf-recfull.md), instead of pushed op by op again.
 */
#ifndef APPROF_SHARDING_PROGRAM_SPLICE_H
#define APPROF_SHARDING_PROGRAM_SPLICE_H

#include <stddef.h>

#include "sharding/program_build.h"

/* What a none build (no recomputation, no FP8, no grad_accum_fusion) that
 * kept its forward (HeldForward) keeps of its push_ops for the full
 * build holding that forward: the backward before its end (a hold of its
 * kernel array, the first n_bk, and their digests), each op's kernel runs
 * (fb: forward, bb: backward; n_ops + 1 starts), the collectives before
 * the end, the positions of the backward's re-gather copies (ascending),
 * the gradient bytes by axis set and the async groups' count. */
typedef struct ShardSplice {
    int n_ops, async, async_groups;
    ApprofKernelShare *bk;
    const ApprofKernel *bk_k;     /* bk's array, read while bk is held */
    ApprofHash128 *bdig;
    size_t n_bk;
    size_t *fb, *bb;
    ApprofCollective *colls[2];
    size_t n_colls[2];
    size_t *copy, n_copy, copy_cap;
    double grad_set_bytes[4];
} ShardSplice;

/* A none build's record (ProgBuild.rec) when b is one whose splice a
 * full build can take, else NULL (also without memory). */
ShardSplice *shard_splice_start(const ProgBuild *b);
/* Notes that the backward collective just pushed at index i is a
 * re-gather copy; 0 or APPROF_ENOMEM. */
int shard_splice_note_copy(ShardSplice *r, size_t i);
/* After the none build's end: completes r from b (ended p; the pre-end
 * backward count pre_n and its share pre_share, the collectives' pre-end
 * counts pre_colls) and gives it to the forward b just kept
 * (HeldForward.splice); r is freed where it cannot be. b->kdig[1] is
 * taken (NULL after). */
void shard_splice_keep(ProgBuild *b, ShardSplice *r, ApprofKernelShare *pre_share, size_t pre_n,
                       const size_t pre_colls[2]);
/* For a full build holding h: h's splice, taken from it (the caller's to
 * free), where it fits b; else NULL. Call before shard_forward_hold. */
ShardSplice *shard_splice_take(const ProgBuild *b, const HeldForward *h);
/* The full build's kernels and collectives from r and its held forward
 * (push_ops' result: the same arrays, digests, marks and gradient
 * bytes); 0 or APPROF_ENOMEM. */
int shard_splice_push(ProgBuild *b, const ShardSplice *r);
void shard_splice_free(ShardSplice *r);
/* Full builds spliced in this process (a test's witness). */
unsigned long shard_splice_count(void);

#endif
