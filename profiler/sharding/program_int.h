/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the stage program builder share among themselves
 * (program.c with program_place.c, program_memory.c, program_zero.c,
 * program_accum.c and program_fp8.c): the per-tensor facts of a stage
 * (TInfo), appending kernels and collectives, and each part's steps. What
 * the rest of the pass calls is in program.h.
 */
#ifndef APPROF_SHARDING_PROGRAM_INT_H
#define APPROF_SHARDING_PROGRAM_INT_H

#include <stddef.h>

#include "sharding/program.h"
#include "sharding/sharding_int.h"

typedef struct TInfo {
    ShardLayout L;
    int set;          /* layout known */
    int in_range;     /* produced inside the stage */
    int used;         /* consumed inside the stage */
    int stage_out;    /* produced inside, consumed after the stage or never */
    int saved;        /* the backward pass reads it */
    int keep;         /* kept from forward to backward (saved, less what is recomputed) */
    int bwd_read;     /* a parameter the backward module reads (bwd_reads_param) */
    int last_use;     /* last consuming op inside the stage */
    double local;     /* bytes per device */
    int fp8_saved;    /* an FP8 linear layer saves it (--fp8; program_fp8.c) */
    int nonfp8_saved; /* some other op saves it */
    int mask_saved;   /* a dropout keeps the one-byte mask of it (not counted in
                       * nonfp8_saved: the mask is not the tensor) */
    unsigned fp8_cast; /* cast to FP8 in the forward (1) / recomputed forward (2) */
    int n_use;        /* entries of use[]; those past it are never read (so a
                       * reset clears only what comes before use[]) */
    /* Distinct layouts its consumers inside the stage want it in: each is
     * resharded once and shared (a gather of a tensor three matmuls read
     * is one gather, as in a fused QKV projection). */
    struct {
        ShardLayout lc;
        int partial[2];
        int regather;  /* some consumer in this layout reads it in the backward */
        int op, slot;  /* the first consumer: it issues the collectives */
        int async_group; /* the group of its backward collectives (ApprofCollective
                          * .async_group): the linear layers among its consumers hide
                          * them under their backward GEMMs; 0: not issued yet */
    } use[4];
} TInfo;

/* Appends c to phase ph's collectives (a group of one or no bytes is
 * nothing); 0 or APPROF_ENOMEM. */
int shard_push_coll(ApprofStageProgram *p, int ph, size_t *cap, const ApprofCollective *c);
/* Room for need collectives in phase ph (capacity *cap): a shared array
 * (coll_share) is first copied into one of the phase's own, so every
 * append to a program's collectives makes room here. 0 or
 * APPROF_ENOMEM. */
int shard_colls_room(ApprofStageProgram *p, int ph, size_t *cap, size_t need);

/* The parameter bytes of operator o of the stage, per device (those it is
 * the first to read, so a tied parameter counts once; program_zero.c). */
double shard_op_param_bytes(const ShardStage *st, const TInfo *ti, int o);
/* The same, summed from the graph (what ShardStage.op_param holds). */
double shard_op_param_bytes_of(const ShardStage *st, const TInfo *ti, int o);
/* The build's table of them for these facts (ShardStage.op_param, also
 * its param_ops and param_total), or NULL: each op's is computed. */
static inline const double *shard_op_param_table(const ShardStage *st, const TInfo *ti)
{
    return st->op_param && st->param_ti == (const void *)ti ? st->op_param : NULL;
}
/* Fills st->param_ops (into ops, room for st->n_ops), n_param_ops and
 * param_total from st->op_param: what the ends of a build's programs
 * (ZeRO's shards and modules, the accumulation adds) would otherwise read
 * from every op of the stage at each program (program_zero.c). */
void shard_param_ops_index(ShardStage *st, int *ops);

/* Bytes per device of the placed tensors, by role and what the backward
 * reads (shard_place_tensors), and the saved activations (program.c). */
typedef struct ShardPlaceSums {
    double params, params_read, param_elems; /* parameters; those the backward reads */
    double sin, sin_saved, sin_grads;        /* stage inputs; kept; with a gradient */
    double sout, sout_saved;                 /* stage outputs; kept */
    double saved_act;                        /* kept activations produced in the stage */
} ShardPlaceSums;

/* program_place.c: the placements of the parameters, then the stage
 * inputs, then the stage outputs, each at its first occurrence in op order
 * (TInfo.set 2 marks a placed tensor), with each spec text's digest in
 * *pdig (malloc'd, the caller frees it); 0 or APPROF_ENOMEM. */
int shard_place_tensors(const ShardStage *st, TInfo *ti, const int *touched, int n_touched,
                        ApprofStageProgram *p, ApprofHash128 **pdig);
/* Adds the bytes of the placed tensors into *sum, in the order
 * shard_place_tensors places them (each sum over one role, in touched
 * order): the backward's reads and what is kept are the build's own. */
void shard_place_sums(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                      ShardPlaceSums *sum);

/* program_held.c: what a build's first steps make from the stage and its
 * sharding solution alone, for the other recomputation modes of the same
 * held forward (HeldForward.facts): the per-tensor facts note_tensors
 * writes (each touched tensor's TInfo before use[], in touched order) and
 * the placements with their spec digests. Recomputation changes neither
 * (docs/performance.md, "The recomputation modes' tensor facts and
 * placements kept"). */
typedef struct ShardFacts {
    int n_touched;
    int *touched;                 /* this and ti in the facts' own block (not freed alone) */
    unsigned char *ti;            /* n_touched records of offsetof(TInfo, use) bytes */
    size_t n_place;
    ApprofPlacement *place;
    ApprofHash128 *pdig;
    /* what the build then reads of the facts and the stage alone: the
     * checkpoint blocks (shard_stage_blocks; NULL: not kept), each op's
     * parameter bytes (shard_op_param_bytes_of, n_ops; NULL: not kept)
     * and the backward walk's peak and largest fresh gradient
     * (shard_transient_peak, dir 1: it reads no recomputation mark) */
    int *blk, n_blk;
    double *op_param;
    double bwd_peak, bwd_fresh;
    int bwd_set;
} ShardFacts;
/* The facts of ti's touched tensors (right after note_tensors), or NULL
 * without memory. */
ShardFacts *shard_facts_take(const TInfo *ti, const int *touched, int n_touched);
/* Adds p's placements and their digests to f; 0, or APPROF_ENOMEM (f
 * then has none). */
int shard_facts_add_places(ShardFacts *f, const ApprofStageProgram *p, const ApprofHash128 *pdig);
struct HeldForward;
/* Writes the facts of held forward h (its ShardFacts with placements)
 * into ti (whose touched tensors are all zero) and touched (room for
 * them), and p's placements and *pdig (malloc'd; a full recomputation,
 * which empties h, takes h's own); 0 or APPROF_ENOMEM. */
int shard_forward_facts(const ShardStage *st, const struct HeldForward *h, TInfo *ti, int *touched,
                        int *n_touched, ApprofStageProgram *p, ApprofHash128 **pdig);
void shard_facts_free(ShardFacts *f);

/* program_memory.c: what a stage program keeps. The peak of transient
 * bytes over a forward (dir 0) or backward (dir 1) walk. */
/* fresh (NULL: not wanted): the largest bytes of parameters' fresh
 * gradients alive at one op of the walk (backward; 0 forward), the
 * weight-sized part of the peak; the rest of the peak is activation-sized
 * (program.c, memory_sizes). */
double shard_transient_peak(const ShardStage *st, const TInfo *ti, int dir, double *fresh_max);
/* Marks in recomp the ops the backward reruns (none, every op, or the
 * attention core); APPROF_ENOVARIANT when selective finds no softmax. */
int shard_mark_recompute(const ShardStage *st, unsigned char *recomp);
/* 1 when graph op o is inside a transformer block that torchtitan's
 * per-op recomputation checkpoints (its name has a path: "model.layers.3/
 * mlp/up_proj"); the embedding, final norm, head and loss are not. */
int shard_op_checkpointed(const ApprofGraph *g, int o);
/* The parity of the mms the op policy counts in graph op op_begin's
 * block before it (a stage that starts inside a block): part of the
 * program key under op (memo.c). */
int shard_op_policy_parity(const ApprofGraph *g, int op_begin);
/* 1 when the backward's recomputation reruns forward collective c
 * (program_memory.c). */
int shard_rerun_forward_coll(const ShardStage *st, const ApprofCollective *c,
                             const unsigned char *recomp);
/* Marks the parameters the backward module reads (docs/alpa-semantics.md,
 * "The backward module"). */
void shard_mark_param_reads(const ShardStage *st, TInfo *ti, const unsigned char *recomp);
/* Marks what stays alive from forward to backward: what the backward
 * reads, less the outputs of recomputed ops; with full recomputation only
 * the inputs of each checkpoint block. */
void shard_mark_kept(const ShardStage *st, TInfo *ti, const int *touched, int n_touched,
                     const unsigned char *recomp, const int *blk, int n_blk);
/* Extra backward temporaries of recomputation: the largest block's
 * recomputed activations. */
double shard_recompute_temp(const ShardStage *st, const TInfo *ti, const int *blk, int n_blk);
/* The kept bytes (saved_act: produced in the stage; sin_saved: its
 * inputs) as the framework stores them (docs/megatron-memory.md): a
 * dropout keeps a one-byte mask of its output, not the output; a reshape's
 * output is a view of its input, one storage when both are kept. */
void shard_saved_storage(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                         double *saved_act, double *sin_saved);

/* The bytes Adam's step moves over elements parameters param_bytes wide,
 * in the widths of the stage's spec: costdb's one rule (costdb_adam_bytes;
 * program_accum.c). */
double shard_adam_bytes(const ShardStage *st, double elements, double param_bytes);

/* ZeRO over the gradient-synchronisation group (program_zero.c). */
int shard_apply_zero(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                     double param_elems, double read_share, const int *blk, int n_blk,
                     size_t *ccap);

/* Gradient accumulation (program_accum.c): appends to the backward the
 * add kernels that put each operator's fresh gradients into their
 * accumulation buffers (or, with the spec's grad_accum_fusion, moves the
 * add into the weight-gradient GEMM's epilogue). One build's ZeRO stages
 * with the same share hold the backward of the first (shard_end_backward). */
int shard_push_grad_accum(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                          size_t *cap, ApprofHash128 **dig);
/* The share of the parameters' accumulation buffers p keeps (after ZeRO:
 * 1 for ZeRO 0 and 1, the partition for 2 and 3; 0 without parameters):
 * what p's accumulation kernels depend on besides the stage. */
double shard_grad_accum_share(const ShardStage *st, const ApprofStageProgram *p);

/* The backwards the programs of one build ended with (zero_family.c;
 * docs/performance.md, "Shared kernel arrays and prices kept"): each held by a
 * kernel share, keyed by its accumulation share, with its kernels' digests
 * (own: freed with the list) and what the signature hashes of them, computed
 * once (program.c, kernel_list). pre_k, pre_dig, pre_n: the build's backward
 * before its end, which a derived program's backward copies, or reads in
 * place as its head (stage.h, kernel_head) where the request takes views:
 * pre_share holds it (the build's ended backward, whose first pre_n
 * kernels it is; NULL: not shared, copied). fwd: the build's forward
 * kernels, which every derived program holds. */
typedef struct EndedBackward {
    double share;
    ApprofKernelShare *k;
    ApprofHash128 *dig;
    int own;
    ApprofHash128 list; /* what the signature hashes of the kernels (list_set: known) */
    int list_set;
} EndedBackward;
typedef struct BackwardEnds {
    int n;
    EndedBackward e[4];
    const ApprofKernel *pre_k;
    const ApprofHash128 *pre_dig;
    size_t pre_n;
    ApprofKernelShare *pre_share;
    ApprofKernelShare *fwd;
    ApprofHash128 fwd_list; /* the same of the forward */
    int fwd_list_set;
    /* the state of the backwards' list digest after their first pre_n
     * kernels, the build's backward before its end, which every backward
     * of the build begins with (program_finish.c, kernel_list) */
    ApprofHash128 pre_list;
    int pre_list_set;
} BackwardEnds;
void shard_backward_ends_free(BackwardEnds *ends);
/* Gradient accumulation of p's backward with ends (zero_family.c): p
 * holds the backward of an earlier program of the build with the same
 * accumulation share (dig[1] then the list's), else p's backward (for a
 * derived program, kernels[1] NULL: a copy of the build's backward before
 * its end) gets its kernels and joins the list. dig: the caller's digest
 * arrays (dig[1] NULL for a derived program; one it gets joins the list
 * with it, and dig[1] is NULL again); *sig_dig: the backward's digests,
 * for the signature. */
int shard_end_backward(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                       size_t *cap, ApprofHash128 **dig, const ApprofHash128 **sig_dig,
                       BackwardEnds *ends);

/* What the end of a program needs besides its stage, tensors and program
 * (shard_finish_program). */
/* What the signatures of one build's programs share (program_finish.c):
 * the collectives each phase had before the end (the end only appends)
 * and the placements (a ZeRO variant reads the build's), digested once. */
typedef struct SigShared {
    size_t pre_colls[2];  /* collectives per phase before the end */
    int colls_set[2], place_set;
    ApprofHash128 colls[2]; /* the digest's state after pre_colls[ph] */
    ApprofHash128 place;
} SigShared;

typedef struct ZeroTail {
    double param_elems, read_share;
    const int *blk;
    int n_blk;
    const ApprofHash128 *pdig;
    BackwardEnds *ends;   /* the build's ended backwards (NULL: none shared) */
    SigShared *sig;       /* NULL: every signature digested in full */
    /* per phase, the ended build's collectives, whose first ones (those
     * before its end) a derived program holds until its end appends to
     * them (shard_colls_room); NULL: copied */
    ApprofCollShare *colls[2];
} ZeroTail;
/* The end of a stage program, where its variants' programs part: ZeRO
 * (program_zero.c), gradient accumulation, FP8 weights, the peaks and the
 * signature (program.c). */
int shard_finish_program(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                         const ZeroTail *tl, size_t kcap[2], size_t ccap[2],
                         ApprofHash128 *kdig[2]);
/* ZeRO stage z of the stage being built, from its program p before the
 * end, kept in the context for the request that will ask for it
 * (zero_family.c). */
void shard_derive_zero(const ShardStage *st, const TInfo *ti, const ApprofStageProgram *p,
                       ApprofHash128 *const kdig[2], const ZeroTail *tl, int z);

/* Appends kernel k of op to phase ph with digest d (program_push.c; a
 * run of one of shard_push_kernels). */
int shard_push_kernel(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                      const ApprofKernel *k, ApprofHash128 d, int op);
/* Room for n more kernels in phase ph and their digests (one capacity
 * *cap for both arrays); 0 or APPROF_ENOMEM (program_push.c). */
int shard_reserve_kernels(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                          size_t n);
/* Appends kernels k[0..n) of op with digests d[0..n) to phase ph, room
 * made once (program_push.c). */
int shard_push_kernels(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                       const ApprofKernel *k, const ApprofHash128 *d, int n, int op);
/* Copies kernels from[0..n) to to[0..n) (not overlapping) with one call
 * of the C library's memcpy (program_push.c: why not an assignment). */
void shard_copy_kernels(ApprofKernel *to, const ApprofKernel *from, size_t n);

/* FP8 training as Transformer Engine runs it (program_fp8.c, docs/fp8.md).
 * The weight slot of graph op o when its GEMMs run in FP8 (the spec's fp8
 * set, a linear layer that is no LM head or router), else -1. */
int shard_fp8_linear(const ShardStage *st, int o);
/* Turns the GEMMs of op o pushed to phase ph from k0 on into FP8 GEMMs and
 * appends the cast of their 16-bit operand: the input (forward, once per
 * tensor and pass) or the output gradient (backward). */
int shard_fp8_op(const ShardStage *st, TInfo *ti, ApprofStageProgram *p, int ph, size_t k0,
                 int o, int forward, size_t *cap, ApprofHash128 **dig);
/* Saved activations that only FP8 linear layers keep: one byte each. */
void shard_fp8_saved(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                     double *saved_act, double *sin_saved);
/* Whether ZeRO-3 all-gathers the FP8 linear layers' weights in FP8 (the
 * spec's fp8_param_gather under ZeRO-3: torchao's float8 all-gather), and
 * the bytes an element of tensor t, read by op o, moves in those gathers
 * over its dtype's bytes (1 but for an FP8 weight gathered in FP8). */
int shard_fp8_zero3_gathers(const ShardStage *st);
double shard_fp8_gathered_ratio(const ShardStage *st, int o, int t);
/* The ZeRO group of program p: its gradient synchronisation's ranks (1
 * without replicas; program_zero.c). */
int shard_zero_group(const ApprofStageProgram *p);
/* The FP8 weight copies: resident bytes and their once-per-step cast;
 * under delayed scaling the amax all-reduces of each forward and backward
 * (pushed to p's collectives, ccap their capacities). 0 or an error. */
int shard_fp8_weights(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                      size_t ccap[2]);

#endif
