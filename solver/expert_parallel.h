/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expert parallelism (ep, etp) of a --parallel plan, as Megatron-Core's MoE
 * parallel folding runs it: attention and the dense layers on the stage's
 * (dp, tp) mesh, the experts on etp x ep of the same GPUs, each GPU holding
 * 1/(ep etp) of every expert weight (E/ep experts, their in/out dimension
 * split etp ways), the tokens sent to their experts' GPUs and back by
 * all-to-alls over the ep group (MoEAlltoAllTokenDispatcher), the expert
 * gradients reduced over the expert-data-parallel group of
 * dp tp / (ep etp) GPUs. The model and its sources: docs/expert-parallel.md.
 *
 * A stage is priced from the stored entries of its (dp, tp) mesh. An entry
 * whose expert weights the sharding ILP already split ep ways on the
 * expert dimension and etp ways on their in/out dimensions is the layout
 * itself, priced as profiled. An entry that keeps the expert dimension
 * whole (every GPU runs every expert on its own tokens) and splits the
 * in/out dimensions etp ways is transformed: its expert weights, their
 * gradients and optimizer state divided by ep, the token all-to-alls
 * added, the expert gradients' reduction moved to the expert-data-parallel
 * group. Any other entry cannot be run as the layout asks: +inf.
 */
#ifndef APSOLVE_EXPERT_PARALLEL_H
#define APSOLVE_EXPERT_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"

#ifdef __cplusplus
extern "C" {
#endif

struct Costdb;

/* The layout an ep stage is priced with. */
typedef struct ApsolveEpLayout {
    int dp, tp, ep, etp, zero;        /* dp: the entries' axis 0, dp x cp under cp */
    int cp;                           /* context parallelism (1: none): the entries are
                                       * those of a cp plan (context_parallel.h), whose
                                       * GPUs hold 1/cp of each sample's tokens */
    int top_k;                        /* experts per token (the model's router) */
    int64_t capacity;                 /* slots per expert and sample of the dispatch */
    int recompute;                    /* the entry's CostdbRecompute: under full
                                       * recomputation the backward reruns the MoE layer's
                                       * forward, its dispatcher included */
    int a2a_overlap;                  /* Megatron-Core's overlap_moe_expert_parallel_comm:
                                       * the all-to-alls under the other micro-batch's
                                       * compute (apsolve_ep_a2a_hidden) */
} ApsolveEpLayout;

/* One cost the ep stage adds per micro-batch (the items ep_price sums into
 * comm_* and perm_*, and apsolve says, in one list). */
typedef struct ApsolveEpCost {
    const char *what;                 /* "token all-to-all", ... */
    double bytes;                     /* one GPU's of one of them */
    int group;                        /* the GPUs it runs over (1: a local copy) */
    int n_fwd, n_bwd;                 /* how many per micro-batch (all MoE layers) */
    int n_rerun;                      /* of n_bwd, the full recomputation's rerun */
    double fwd, bwd;                  /* seconds per micro-batch */
} ApsolveEpCost;
#define APSOLVE_EP_COSTS 12

/* One stage entry under the layout, per GPU. */
typedef struct ApsolveEpStage {
    int moe_layers;                   /* expert blocks among the stage's parameters */
    int experts;                      /* E */
    int stored_ep, stored_etp;        /* the entry's split of the expert weights (largest) */
    int usable;                       /* 1 as stored (exact), 2 transformed, 0 neither */
    int from_split;                   /* usable 2 from a level that splits E over its whole
                                       * axis 1 (stored_ep ways, in/out whole), not from one
                                       * that keeps E whole */
    double elements;                  /* expert weight elements of the stage, whole */
    double local_before, local_after; /* of them on one GPU, stored and under the layout */
    double a2a_bytes;                 /* one GPU's tokens of one all-to-all of one layer */
    double probs_bytes;               /* their routing probabilities' all-to-all, likewise */
    int dropless;                     /* no capacity factor: the graph's capacity is the
                                       * balanced ceil(S top_k / E) */
    double comm_fwd, comm_bwd;        /* all-to-alls (tokens, probabilities), dropless the
                                       * forward's all-gather of the token counts, with
                                       * etp > 1 the etp group's gathers and reductions less
                                       * the stored level's own: added per micro-batch,
                                       * seconds */
    double perm_fwd, perm_bwd;        /* the sorts by local expert and back (permutation
                                       * 2), added per micro-batch, seconds */
    double traffic_fwd, traffic_bwd;  /* bytes one GPU sends in them, per micro-batch */
    ApsolveEpCost costs[APSOLVE_EP_COSTS]; /* the items of comm_* and perm_* */
    int n_costs;
    int64_t peak_delta, initial_delta; /* memory change, bytes */
    double fp8_weight_bytes;          /* of peak_delta's bytes an expert element, the FP8
                                       * copies' beyond the 16-bit weight
                                       * (costdb_fp8_weight_extra_bytes; 0 without FP8) */
    double apply_delta;               /* once per iteration: expert grad reduction + Adam */
} ApsolveEpStage;

/* What one entry's placements say of its expert weights, whatever the
 * layout: read once, priced under each layout the auto search tries. */
typedef struct ApsolveEpFacts {
    int known;                        /* read */
    int moe_layers, experts, stored_ep, stored_etp;
    int whole_e;                      /* every expert weight whole on E */
    int uniform, ep0, etp0;           /* every one split alike: ep0 on E, etp0 on in/out */
    int etp_stride;                   /* device stride of the etp0 split's group
                                       * (costdb_expert_split_stride; -1: none) */
    int e_axis;                       /* the logical axis every expert weight's E dimension
                                       * is split over (0, 1, 2 both), -1 whole, -2 mixed */
    int64_t batch, hidden;            /* the entry's micro-batch, the experts' hidden size */
    int64_t seq;                      /* the sequence of a sample (0: unknown) */
    double esize, elements, local_before;
    int fp8_recipe;                   /* the sweep's FP8 recipe when the spec has FP8
                                       * tensor cores (the experts' GEMMs are then FP8
                                       * linear layers in 16-bit training), else
                                       * COSTDB_FP8_NONE */
    int fp8_copies, fp8_params;       /* TE's FP8 copies of a weight
                                       * (costdb_fp8_weight_copies); FP8 primary weights
                                       * (the spec's fp8_param_gather) */
    int drop_pad;                     /* the spec's moe_drop_pad: the dispatcher drops and
                                       * pads to the capacity, never dropless */
    int expert_tensors;               /* expert weights of the stage's placements (gate, up,
                                       * down: 3 a MoE layer) */
    double launch;                    /* the hardware row's kernel_launch_overhead, s */
} ApsolveEpFacts;

/* Prices stage entry (start..end, submesh s, config c) of a sweep on hosts
 * of gpus_per_host GPUs under layout l from its placements and the sweep's
 * hardware row into *out. apreport takes the memory from it too (the one
 * rule). 0; -1 with why set when the placements or the hardware row cannot
 * be read. */
int apsolve_ep_stage(struct Costdb *db, int64_t sweep, int gpus_per_host, int start, int end,
                     int s, int c, const ApsolveEpLayout *l, ApsolveEpStage *out, char *why,
                     size_t len);

/* Of x's all-to-alls (its costs named so) per micro-batch, the seconds
 * Megatron-Core's MoE all-to-all overlap hides: the forward's under the
 * other micro-batch's backward compute bwd, the backward's under its
 * forward fwd (approf_overlap_hidden_at, no GEMM slowdown); what is not
 * hidden stays exposed. */
void apsolve_ep_a2a_hidden(const ApsolveEpStage *x, double fwd, double bwd, double *hidden_fwd,
                           double *hidden_bwd);

/* The refusals of Megatron-Core's TransformerConfig.__post_init__
 * (transformer_config.py, the overlap_moe_expert_parallel_comm block, read
 * at Megatron-LM main 2026): ep >= 2, vpp >= 2 when pp > 1, no full
 * recomputation. 0, or -1 with errbuf saying which. */
struct ApsolveParallel;
int apsolve_ep_a2a_overlap_check(const struct ApsolveParallel *par, char *errbuf, size_t errlen);

/* A copy of p in which every entry of the 3-D specs' stages on logical
 * (dp, tp) with the batch forced on axis 0 is the ep stage's (above):
 * unchanged when exact, transformed, or +inf. first[k] (n of them) gets
 * the figures of spec k's lowest usable config (usable 0 when it has
 * none). 0; APSOLVE_ENOMEM; APSOLVE_EDB with why. */
int apsolve_ep_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                       const ApsolveStageSpec *specs, size_t n, const ApsolveEpLayout *l,
                       ApsolveProblem **out, ApsolveEpStage *first, char *why, size_t len);

/* The auto search's ep candidate (docs/solver.md, "Expert parallelism in
 * the auto search"): a copy of p (a sweep's problem, or a cp candidate's,
 * whose entries are cp stages of l->cp) in which every entry of every
 * layer range, submesh and config is the ep stage of its own layout
 * (dp = logical_a, tp = logical_b, zero its config's; ep, etp, cp, top_k,
 * capacity from l): as profiled where its experts are split so,
 * transformed where it keeps them whole with their in/out dimensions etp
 * ways and no entry of the same range, submesh, mesh and variant is as
 * profiled, +inf otherwise (batch not on axis 0, ZeRO-2/3, ep x etp not
 * dividing a x b, ep not dividing the experts, any other split; under
 * l's a2a_overlap a full recomputation too, and the transformed entries'
 * all-to-alls hidden as apsolve_ep_a2a_hidden says). An entry
 * without experts stays as it is where its layout allows ep. cache: the
 * facts of sweep's entries, read once (apsolve_ep_cache_new). *transformed
 * counts the transformed entries. With view (not NULL), *out is instead
 * the subset of p's (submesh, config) pairs that can hold ep stages of l
 * (the rest would be +inf: problem_subset.h, *view its map back to p's
 * indices), the same plans from a smaller copy. 0; APSOLVE_ENOMEM;
 * APSOLVE_EDB with why (*out NULL, *view empty). */
typedef struct ApsolveEpCache {
    ApsolveEpFacts *facts;            /* apsolve_problem_cells, indexed by the owner config */
    int *owner;                       /* S x C: whose placements a config reads; -1 unknown */
    ApsolveEpFacts sweep_fp8;         /* the sweep's FP8 facts (fp8_*), read once */
    int sweep_fp8_read;
} ApsolveEpCache;
/* An empty cache for problem p's entries; 0 or APSOLVE_ENOMEM. */
int apsolve_ep_cache_new(const ApsolveProblem *p, ApsolveEpCache *c);
struct ApsolveSubset;
void apsolve_ep_cache_free(ApsolveEpCache *c);
int apsolve_ep_problem_auto(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveEpCache *cache, const ApsolveEpLayout *l,
                            ApsolveProblem **out, struct ApsolveSubset *view,
                            size_t *transformed, char *why, size_t len);

struct ApsolveFwVerdict;
/* Which frameworks run an ep plan as priced (frameworks.h), on top of the
 * layout's verdict: experts on ep x etp of a (dp, tp) layout with ZeRO
 * stage zero. DeepSpeed v0.16.4's MoE layer takes its ep_size ranks from
 * the data-parallel group (ep divides dp) and splits the experts over all
 * tp ranks or none (deepspeed/moe/layer.py, utils/groups.py); torchtitan
 * v0.2.2 builds expert parallelism inside FSDP's shards (ZeRO-2/3; an ep
 * plan is priced with ZeRO-0 or 1, apsolve_run_ep) and takes etp 1 or tp
 * (ParallelDims._validate). Megatron-LM runs any ep and etp the pricing
 * takes. Clears their bits of v with the reason; nothing for ep <= 1. */
void apsolve_ep_frameworks(int dp, int tp, int ep, int etp, int zero,
                           struct ApsolveFwVerdict *v);
#ifdef __cplusplus
}
#endif

#endif
