/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sharding context (ApprofShardContext) and what it keeps across the
 * stages of a sweep: the memos of memo.c (iteration spaces, node costs per
 * mesh, Pareto sets by stage structure, edge matrices, strategies, spec
 * texts, kernels, program keys; docs/architecture.md "No rework per
 * tuple"), the derived ZeRO variants of zero_family.c and the program
 * builder's scratch. Read by sharding.c, memo.c, zero_family.c and the
 * program builder.
 */
#ifndef APPROF_SHARDING_CONTEXT_H
#define APPROF_SHARDING_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "costdb_text.h"
#include "hash.h"
#include "sharding/sharding_int.h"
#include "sharding/sharding.h"

/* Most memory levels a request may ask for. */
#define SHARD_MAX_LEVELS 8

/* The Pareto set of the last stage solved, kept for its other variants
 * (the sweep profiles every variant of a (range, mesh, config) in a row). */
typedef struct ParetoMemo {
    int valid;
    int key[8];
    int n_ops, n_points;
    int *choices;                 /* n_points * n_ops */
    double times[SHARD_MAX_LEVELS];
} ParetoMemo;

/* Range-independent work kept across the stages of a sweep: each op's
 * iteration space, and per logical mesh the compute part of every op's
 * node cost (kernels and the all-reduce of a split reduction), which does
 * not depend on the layer range (docs/architecture.md). */
#define SHARD_COST_SLOTS ((APPROF_MAX_ITER + 1) * (APPROF_MAX_ITER + 1))
#define SHARD_COST_TABLES 64

typedef struct NodeCostTable {
    ShardMesh mesh;
    double *cost;                 /* n_ops * SHARD_COST_SLOTS, NaN: not computed */
} NodeCostTable;

/* The head of an entry of an open-addressing table keyed by a 128-bit
 * hash. */
typedef struct MemoSlot {
    ApprofHash128 key;
    int used;
} MemoSlot;

/* An open-addressing table of entries of one type, each beginning with a
 * MemoSlot (memo.c finds and claims them). An entry's payload (choices,
 * a matrix, a list, a text) is counted in bytes; inserts stop at the
 * table's cap, which only costs a later computation. */
typedef struct MemoTable {
    void *e;
    size_t n, cap;                /* cap a power of two, at most half full */
    size_t bytes;
} MemoTable;

/* Pareto sets by stage structure: two stages whose ops, shapes, in-stage
 * edges, boundary facts (stage inputs and outputs, first consumers of
 * parameters, saved tensors) and mesh are alike have the same sharding ILP,
 * term for term, so the same Pareto set (a transformer's interior ranges
 * [i, j] and [i+1, j+1]). The key is computed in one pass over the stage's
 * ops; a hit skips the node costs, the edge matrices and the ILP. */
typedef struct StructEntry {
    MemoSlot s;
    int n_ops, n_points;
    double times[SHARD_MAX_LEVELS];
    unsigned char *choices;       /* n_points * n_ops strategy indices */
} StructEntry;

#define SHARD_STRUCT_MEMO_BYTES ((size_t)256 << 20)

/* Edge matrices by what they depend on: the descriptors of the producer
 * and the consumer (shapes, iteration spaces, saved inputs), the slots,
 * the mesh, the forced batch axis and whether the producer's all-reduce
 * may fuse into a reduce-scatter (the tensor's one consumer in the stage,
 * not a stage output). The same edge of every layer of a transformer, on
 * one mesh, is computed once for all the ranges that hold it. */
typedef struct EdgeEntry {
    MemoSlot s;
    int kp, kc;
    double *r;                    /* kp * kc seconds */
} EdgeEntry;

#define SHARD_EDGE_MEMO_BYTES ((size_t)64 << 20)

/* Strategies by what they depend on: the op's descriptor (its iteration
 * space), the mesh's axis sizes and the forced batch axis. */
typedef struct StratEntry {
    MemoSlot s;
    int k;
    ShardStrat *v;
    /* k: strategy i's kernel entry (KernelEntry below), a copy of the
     * kernel memo's entry made when first asked for (shard_op_kernels;
     * s.used: made), so that a build finds an op's kernels by its
     * strategy's index, not by a hash of the op's descriptor */
    struct KernelEntry *kern;
    ShardOpLayouts *lay;          /* k: each strategy's operand layouts */
} StratEntry;

#define SHARD_STRAT_MEMO_BYTES ((size_t)16 << 20)

/* ShardingSpec texts by layout: the tensor's rank, the mesh axis of each
 * dimension and the mesh's axis sizes, with the text's digest for the
 * program signature. */
typedef struct SpecEntry {
    MemoSlot s;
    size_t len;
    ApprofHash128 dig;
    char *text;
} SpecEntry;

#define SHARD_SPEC_MEMO_BYTES ((size_t)4 << 20)

/* Kernels by what they depend on: the op's descriptor, the loops its
 * strategy splits and the mesh's axis sizes (the local loop sizes follow
 * from these), with their signature digests. An op of every layer of a
 * transformer is lowered once per strategy and mesh, not once per range. */
typedef struct KernelEntry {
    MemoSlot s;
    int n[2];                     /* forward and backward kernels */
    ApprofKernel *k;              /* n[0] + n[1]; the op field is the caller's */
    ApprofHash128 *dig;           /* per kernel, shard_kernel_digest */
} KernelEntry;

#define SHARD_KERNEL_MEMO_BYTES ((size_t)32 << 20)

/* A ZeRO variant derived from its stage's program, waiting to be asked
 * for (zero_family.c). */
typedef struct ZeroDerived {
    int used;
    ApprofShardRequest req;   /* the request it answers (zero_family ignored) */
    int rc;                   /* 0, or APPROF_ENOVARIANT (no replicas) */
    ApprofStageProgram prog;  /* rc 0: the program */
} ZeroDerived;

/* The variant-free part of a program key (memo.c,
 * approf_shard_program_key), kept for the last SHARD_PKEY_SLOTS stages
 * (shard_stage_key): the sweep asks for a layer range's base configs
 * (one stage each: logical mesh, forced batch axis) in a row, then for
 * each base config's variants in a row, so one slot computed every
 * stage's part twice. */
typedef struct ProgKeyMemo {
    int valid;
    int stage[8];             /* shard_stage_key */
    ApprofHash128 h;          /* shard_struct_key */
    int n_ops;
    int *blk, n_blk;          /* checkpoint blocks, stage-relative */
    int *order, n_order;      /* tensors in first-touch order */
    size_t cap;               /* ops the arrays have room for */
    int op_parity;            /* shard_op_policy_parity of the stage's first op */
} ProgKeyMemo;

#define SHARD_PKEY_SLOTS 16

/* Derived variants kept at once (a ring): the zero variants of Alpa's
 * configs of a submesh (up to 10: approf_config_choices), 3 each, wait
 * while the other configs' plain entries are built and, in the full
 * space, while the configs before theirs build their variants
 * (approf_config_variants: the plain entries of all configs first, then
 * each config's other variants). The last config's family is put by its
 * plain build; before its ZeRO-1 request, each of the C - 1 configs
 * before it puts (L R - 1) families of 3 (L memory levels, R
 * recomputation modes): with L = R = 3 and C = 10, 216 puts, and 2 of its
 * own. 32 slots lost 1,169 families on the 70b sweep (docs/performance.md,
 * "Fewer builds in the full space", section 3), built again; a miss only
 * means building again (the same program: exact). */
#define SHARD_ZERO_SLOTS 256

/* The forward kernels of a program built in this context, for the
 * programs of its other recomputation modes (program_held.c): a stage's
 * forward is the same whatever the backward reruns, so a build of the
 * same stage, memory level's solution (choice) and ZeRO stage holds it
 * instead of pushing it again (docs/performance.md, "One forward for the
 * recomputation modes"). */
#define SHARD_FWD_SLOTS 32
typedef struct HeldForward {
    int used;
    int key[10];                  /* shard_stage_key, ZeRO stage, n_ops */
    int *choice;                  /* n_ops */
    ApprofKernelShare *k;         /* one hold */
    ApprofHash128 *dig;           /* per kernel, owned */
    struct ShardFacts *facts;     /* the build's tensor facts and placements, owned; or NULL */
    /* what the signature hashes of the forward's kernels (program_finish.c,
     * kernel_list), as the build's end digested it (list_set: known): a
     * function of the kernels and digests held here alone */
    ApprofHash128 list;
    int list_set;
    /* the none build's push_ops for the full build holding this forward
     * (program_splice.c); NULL: not kept */
    struct ShardSplice *splice;
} HeldForward;

/* The per-tensor arrays of a stage set-up (ShardStage.t_cons, t_first,
 * t_out, t_saved): a set-up takes them when no other holds them, so a
 * set-up costs its stage's size and not the graph's (docs/performance.md,
 * "Set-ups without graph-sized arrays"). They are given back still
 * holding the facts of the op range [begin, end) (held: 1), which are a
 * function of that range and the graph alone; the next set-up of the
 * same range takes them as they are (the program key's set-up and the
 * build's, and a stage's variants and configs), and one of another range
 * first resets the held range's tensors to what a fresh set-up makes
 * (0, -1, 0, 0). docs/performance.md, "A stage's tensor facts set up
 * once for its requests". */
typedef struct TensorScratch {
    int *cons, *first;
    unsigned char *out, *saved;
    int busy;
    int held, begin, end;
} TensorScratch;

/* A stage's operators with their strategies (ShardStage.ops), kept for its
 * later requests (stage_ops.c): keyed by the op range, the logical axis
 * sizes, the physical submesh and the forced batch axis. The sweep asks
 * for a submesh's configs of a layer range in a row, each config's
 * variants together after the plain ones. */
#define SHARD_OPS_SLOTS 16
typedef struct KeptOps {
    int key[7];
    int n_ops;
    int maxk;                     /* the most strategies of an op */
    ShardOp *ops;                 /* n_ops; NULL: the slot is empty */
} KeptOps;

/* A forced-batch build's program kept for its unforced twin
 * (program_twin.c): a request of the same stage and variant but
 * force_batch_dim -1 whose sharding solution is the same strategy for
 * every op takes it (and the ZeRO stages derived with it), re-signed,
 * instead of building it again. */
#define SHARD_TWIN_SLOTS 8
typedef struct TwinBuild {
    int used;
    ApprofShardRequest req;       /* the forced build's (force_batch_dim 0) */
    int n_ops;
    ShardStrat *strat;            /* n_ops: each op's chosen strategy */
    ApprofStageProgram prog;      /* its program, the kernels shared with it */
    unsigned derived;             /* bit z: ZeRO stage z derived with it (dprog, drc) */
    int drc[4];
    ApprofStageProgram dprog[4];
} TwinBuild;

/* What the program build reads of a graph op, a function of the op and
 * its tensors alone (not of the stage, strategy or variant): its saved
 * mask (approf_op_saved_mask), its inputs that are parameters (bit i:
 * input i), and of those the ones the backward reads when the op is not
 * rerun (shard_mark_param_reads' rule). */
typedef struct ShardOpFacts {
    uint16_t saved;
    uint8_t param_in, param_read;
} ShardOpFacts;

struct ApprofShardContext {
    const ApprofGraph *g;
    const ApprofLayering *l;
    const ApprofHardwareSpec *hw;
    int micro_batches;
    ApprofIlpCache *cache;
    ApprofShardStats st;
    ParetoMemo memo;
    ApprofIterSpace *spaces;      /* per graph op */
    unsigned char *space_state;   /* 0 not computed, 1 ok, 2 error */
    NodeCostTable tables[SHARD_COST_TABLES];
    int n_tables, next_victim;
    uint64_t *op_desc;            /* per graph op: hash of what its costs depend on */
    int *last_reader;             /* per tensor: the last op that reads it, -1 none */
    void *prog_scratch;           /* program.c's per-tensor scratch, all zero at rest */
    size_t prog_scratch_n;
    /* the program builder's per-op arrays, in one block kept at the
     * largest size a build asked (program_scratch.c; capacity only);
     * busy: a build holds it */
    void *build_arrays;
    size_t build_arrays_bytes;
    int build_arrays_busy;
    MemoTable smemo;              /* StructEntry */
    MemoTable ememo;              /* EdgeEntry */
    MemoTable kmemo;              /* KernelEntry */
    MemoTable stmemo;             /* StratEntry */
    MemoTable spmemo;             /* SpecEntry */
    /* the structure key the last program key hashed, and its stage */
    int skey_stage[8];
    ApprofHash128 skey;
    int skey_valid;
    /* per graph op: 1 when its name's first path component is that of
     * the op before it (shard_stage_blocks), computed once */
    unsigned char *same_prefix;
    /* per graph op of g: what a build reads of it (ShardOpFacts), made
     * once by the first build (shard_op_facts_make); NULL: not made */
    ShardOpFacts *op_facts;
    ProgKeyMemo pkey[SHARD_PKEY_SLOTS];
    int pkey_next;                /* the slot the next part replaces */
    ZeroDerived *zfam;            /* SHARD_ZERO_SLOTS, allocated on first use */
    int zfam_next;                /* the slot the next one replaces */
    /* per recomputation mode and phase, the most kernels per op a program
     * built in this context ended with (rounded up, plus one): the room
     * the next build reserves, so that its arrays are not grown (copied)
     * again and again; capacity only, no result depends on it */
    int kernels_per_op[COSTDB_RECOMPUTE_COUNT][2];
    /* the same of the collectives, per 16 ops (a program holds fewer
     * collectives than ops mostly; 0: none built yet) */
    int colls_per_16_ops[COSTDB_RECOMPUTE_COUNT][2];
    TensorScratch ts;
    HeldForward *fwd;             /* SHARD_FWD_SLOTS, allocated on first use */
    int fwd_next;                 /* the slot the next one replaces */
    /* 1 once a program with recomputation was built here: a build keeps
     * its tensor facts for the other modes only then (program.c; a sweep
     * of none alone never reads them), and a stage its strategies
     * (stage_ops.c) unless its request has several memory levels. Which
     * builds keep them changes no program, only the work. */
    int recompute_asked;
    KeptOps *kops;                /* SHARD_OPS_SLOTS, allocated on first use */
    int kops_next;                /* the slot the next one replaces */
    TwinBuild *twin;              /* SHARD_TWIN_SLOTS, allocated on first use */
    int twin_next;                /* the slot the next one replaces */
};

/* program_twin.c: after the build of st for req into prog (force 0, memory
 * level 0, prog built), keeps prog and the ZeRO stages derived with it for
 * the request's unforced twin; for an unforced request of memory level 0
 * whose stage st is solved, 1 with out filled (and the derived ZeRO stages
 * of its family put in the context) when a kept twin has st's solution,
 * else 0 (the twin, if any, let go); forgets every twin. */
void shard_twin_keep(ApprofShardContext *ctx, const ShardStage *st,
                     const ApprofShardRequest *req, ApprofStageProgram *prog);
int shard_twin_take(ApprofShardContext *ctx, const ShardStage *st, const ApprofShardRequest *req,
                    ApprofStageProgram *out);
void shard_twin_forget(ApprofShardContext *ctx);
/* zero_family.c: the derived program waiting for req (zero_family
 * ignored), left in place, with its code in *rc; NULL when none. And
 * whether two requests name the same stage and variant (the same range,
 * submesh, logical mesh, forced batch axis, ILP method, memory levels and
 * variant; zero_family and kernel_views aside). */
ApprofStageProgram *shard_zero_family_peek(ApprofShardContext *ctx, const ApprofShardRequest *req,
                                           int *rc);
int shard_same_request(const ApprofShardRequest *a, const ApprofShardRequest *b);

/* zero_family.c: keeps the derived ZeRO variants (prog moved in; without
 * memory it is dropped), and hands one back for a request equal to req but
 * for zero_family (1, *rc and out moved out; 0 when none is kept). */
void shard_zero_family_put(ApprofShardContext *ctx, const ApprofShardRequest *req, int rc,
                           ApprofStageProgram *prog);
int shard_zero_family_take(ApprofShardContext *ctx, const ApprofShardRequest *req,
                           ApprofStageProgram *out, int *rc);
void shard_zero_family_free(ApprofShardContext *ctx);
/* program_held.c: the held forward for stage st (NULL: none); keeps
 * p's forward (one more hold) with its digests (taken from *dig, which
 * is then NULL), the build's facts (taken from *facts likewise, where
 * kept) and its forward's list digest (list; NULL: not known) for the
 * stage's later builds; forgets them all. */
const HeldForward *shard_forward_find(const ShardStage *st);
void shard_forward_keep(const ShardStage *st, ApprofStageProgram *p, ApprofHash128 **dig,
                        struct ShardFacts **facts, const ApprofHash128 *list);
/* p holds h's forward; returns its digests, *borrowed 1 (h's) or 0 (the
 * caller's to free: a full recomputation, the last mode asked in order,
 * takes them and empties h). */
ApprofHash128 *shard_forward_hold(const ShardStage *st, const HeldForward *h,
                                  ApprofStageProgram *p, int *borrowed);
void shard_forward_forget(ApprofShardContext *ctx);
/* sharding.c: frees the context's TensorScratch. */
void shard_tensor_scratch_free(ApprofShardContext *ctx);
/* program_scratch.c: frees the program builder's scratch (prog_scratch,
 * build_arrays). */
void shard_build_scratch_free(ApprofShardContext *ctx);

/* stage_ops.c: sets st->ops (the op, its iteration space and
 * strategies): the list an earlier request of the same stage kept, lent
 * (st->ops_borrowed; an array the set-up allocated is freed), or st's
 * array (allocated here where the set-up left it NULL) enumerated
 * (shard_op_strategies), then kept; *maxk: the most strategies of an op.
 * 0, or an error with err filled (the stage's strategies then partly set,
 * as the enumeration left them). */
int shard_stage_ops(ApprofShardContext *ctx, ShardStage *st, int *maxk, char *err,
                    size_t errlen);
void shard_stage_ops_free(ApprofShardContext *ctx);

/* memo.c */
double *shard_cost_table(ApprofShardContext *ctx, const ShardMesh *m);
/* op's iteration space, computed once (NULL with *rc: APPROF_EINVAL for an
 * op without one, APPROF_ENOMEM). */
const ApprofIterSpace *shard_cached_iter_space(ApprofShardContext *ctx, int op, int *rc);
/* The strategies of stage op o (st->ops[o].sp set) on the stage's mesh and
 * forced batch axis, *k of them: the memo's list, or the stage's block
 * (not memoised; *k 0 or a negative error from the enumeration); NULL
 * with *k APPROF_ENOMEM. *kern, *lay: the memo entry's kernel entries
 * and layouts (StratEntry.kern, .lay), NULL with the stage's block. */
const ShardStrat *shard_op_strategies(ApprofShardContext *ctx, ShardStage *st, int o, int *k,
                                      KernelEntry **kern, const ShardOpLayouts **lay);

ApprofHash128 shard_struct_key(ApprofShardContext *ctx, const ShardStage *st, int levels,
                               int method);
/* The Pareto set of a stage of structure key, or NULL. */
const StructEntry *shard_structure_find(const ApprofShardContext *ctx, ApprofHash128 key);
void shard_remember_structure(ApprofShardContext *ctx, ApprofHash128 k, const ParetoMemo *memo,
                              int maxk);
ApprofHash128 shard_edge_key(ApprofShardContext *ctx, const ShardStage *st, int op_p, int op_c,
                             int in_slot);
const double *shard_edge_find(const ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc);
void shard_edge_remember(ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc,
                         const double *r);

/* The kernels of stage op o (stage-local) under strategy s, both phases:
 * the memo's entry (or its copy kept with the op's strategies,
 * ShardOp.kern, once made), or (not memoised: no context, past the cap, out of
 * memory) *own filled from the caller's buffers k (2 * APPROF_MAX_KERNELS)
 * and dig; NULL with *rc set on a lowering error. */
const KernelEntry *shard_op_kernels(ApprofShardContext *ctx, const ShardStage *st, int o,
                                    const ShardStrat *s, KernelEntry *own, int *rc);
/* shard_op_kernels of stage op o under its strategy j, the kept copy read
 * in place once made. */
static inline const KernelEntry *shard_op_kernels_at(ApprofShardContext *ctx,
                                                     const ShardStage *st, int o, int j,
                                                     KernelEntry *own, int *rc)
{
    const ShardOp *so = &st->ops[o];
    if (so->kern && so->kern[j].s.used) {
        *rc = 0;
        return &so->kern[j];
    }
    return shard_op_kernels(ctx, st, o, &so->s[j], own, rc);
}

/* The ShardingSpec text of layout l (costdb_spec_format) with its length
 * and digest: the memo's, or formatted into own (own_len bytes) when not
 * memoised (no context, past the cap, out of memory). */
const char *shard_spec_text(ApprofShardContext *ctx, const CostdbLayout *l, char *own,
                            size_t own_len, size_t *len, ApprofHash128 *dig);
/* Frees every memo table of the context and what their entries hold, and
 * the per-op facts (shard_op_facts_make). */
void shard_memos_free(ApprofShardContext *ctx);

/* program_memory.c: the facts of graph op o (ShardOpFacts) worked out;
 * and ctx->op_facts, those of every op of ctx->g, made if not made
 * (without memory it stays NULL). */
ShardOpFacts shard_op_facts_of(const ApprofGraph *g, int o);
void shard_op_facts_make(ApprofShardContext *ctx);
/* The facts of graph op o of st: the context's table where it was made
 * for st's graph, else worked out again. */
static inline ShardOpFacts shard_op_facts(const ShardStage *st, int o)
{
    const ApprofShardContext *ctx = st->ctx;
    if (ctx && ctx->op_facts && ctx->g == st->g)
        return ctx->op_facts[o];
    return shard_op_facts_of(st->g, o);
}
/* approf_op_saved_mask(st->g, o), through shard_op_facts. */
static inline unsigned shard_saved_mask(const ShardStage *st, int o)
{
    return shard_op_facts(st, o).saved;
}

#endif
