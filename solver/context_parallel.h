/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context parallelism (cp) of a --parallel plan, as Megatron-Core runs it
 * through Transformer Engine's context-parallel attention: the sequence of
 * every layer split over cp GPUs, the attention's keys and values passed
 * round a ring (p2p), or heads and sequence swapped by all-to-alls (a2a,
 * DeepSpeed-Ulysses' scheme), or both in two levels (a2a+p2p). The model
 * and its sources: docs/context-parallel.md.
 *
 * A cp stage of layout (dp, tp, cp) is priced from the stored entry of the
 * same devices run as data parallelism dp x cp (logical mesh (dp cp, tp),
 * batch forced on axis 0) at the sweep whose micro-batch is cp times the
 * plan's: that entry holds, per GPU, cp times the tokens a cp GPU holds,
 * the same weights, and its gradient all-reduce and ZeRO sharding run over
 * dp x cp, Megatron's dp-cp group. Per micro-batch its compute and saved
 * activations are divided by cp (exact in FLOPs, causal attention included
 * under load balancing; the time assumes kernels' time proportional to
 * their work), the cp communication and receive buffers are added, and
 * the plan runs cp times as many micro-batches.
 */
#ifndef APSOLVE_CONTEXT_PARALLEL_H
#define APSOLVE_CONTEXT_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"

#ifdef __cplusplus
extern "C" {
#endif

struct Costdb;

/* Megatron's --cp-comm-type choices approf prices. */
typedef enum {
    APSOLVE_CP_P2P = 0,               /* ring exchange of K/V blocks */
    APSOLVE_CP_A2A = 1,               /* Ulysses: all-to-all of Q, K, V and of the output */
    APSOLVE_CP_A2A_P2P = 2,           /* a2a inside a host, p2p ring across */
    APSOLVE_CP_ALL_GATHER = 3,        /* K and V all-gathered (TE's KV all-gather) */
} ApsolveCpComm;

/* "p2p", "a2a", "a2a+p2p", "all_gather" -> ApsolveCpComm; -1 for anything
 * else. */
int apsolve_cp_comm_parse(const char *s);
const char *apsolve_cp_comm_name(int comm);

/* The a2a (inner) group of a2a+p2p: the largest divisor a of cp whose tp x a
 * consecutive ranks fit, aligned, in one group of fast_gpus GPUs
 * (apsolve_cp_fast_gpus: a host, or a scale-up domain of several hosts) —
 * Megatron's rank order tp-cp-dp-pp; Megatron's
 * --hierarchical-context-parallel-sizes a cp/a. 1 when none larger fits. */
int apsolve_cp_a2a_size(int cp, int tp, int fast_gpus);

/* The GPUs a cp all-to-all may span on NVLink on sweep's hardware: its
 * scale-up domain when that spans several hosts of gpus_per_host GPUs
 * (GB200 NVL72: 72, costdb_fabric_node_gpus), else gpus_per_host (also when
 * the sweep's hardware cannot be read). Megatron-Core's cp_comm_type
 * "a2a+p2p" runs "A2A communications in low-level CP groups (e.g., via
 * NVLink), and P2P communications in high-level CP groups (e.g., via
 * IBLink)" (transformer_config.py, core_v0.19.0). */
int apsolve_cp_fast_gpus(struct Costdb *db, int64_t sweep, int gpus_per_host);

/* What context parallelism adds to one stage, per micro-batch of the cp
 * plan and per GPU. */
typedef struct ApsolveCpStage {
    int attention_layers;             /* key projections among the stage's parameters */
    int64_t seq;                      /* the sequence length; 0 unknown */
    double tokens;                    /* tokens of one GPU's share: mbs x seq / cp */
    double q_bytes, kv_bytes;         /* one layer's local Q, and K + V, on one GPU */
    double comm_fwd, comm_bwd;        /* seconds, all the stage's attention layers */
    double traffic_fwd, traffic_bwd;  /* bytes one GPU sends, all layers */
    double rerun;                     /* of comm_bwd, the forward's exchange rerun under
                                       * full or selective recomputation, seconds */
    int64_t buffers;                  /* receive buffers alive at the peak, bytes */
    double attn_fwd, attn_bwd;        /* seconds the ring's shorter attention kernels
                                       * take beyond the entry's 1/cp, all layers
                                       * (solver/cp_attention.h); 0: none */
    int64_t ring_keys;                /* the keys each of the ring's kernels is priced
                                       * at (seq / ring GPUs); 0: no ring */
    int64_t ag_keys_min, ag_keys_max; /* all_gather: the shortest and longest key
                                       * lengths its kernels are priced at; 0: none */
    double merge_fwd, merge_bwd;      /* seconds of PyTorch's ring's f32 merges of its
                                       * steps' outputs and gradients, all layers
                                       * (solver/cp_torch_ring.h); 0: TE's ring */
} ApsolveCpStage;

/* The saved activations of one micro-batch of a cp stage whose entry (dp
 * cp, tp) saves intermediate bytes: 1/cp of them, rounded up. apsolve's
 * cp problem and apreport's stages both take it from here. */
int64_t apsolve_cp_intermediate(int64_t intermediate, int cp);

/* The bytes by which a cp stage's peak is below its twin entry's from the
 * transient (cp_memory.c): each phase's activation-sized transient
 * (schema 17's temp_activation_size) to 1/cp, rounded up, the
 * weight-sized rest whole; the entry's peak is its larger phase's. 0 when
 * no phase has an activation-sized part known (files before schema 17). */
struct CostdbPhaseTransient;
int64_t apsolve_cp_transient_cut_of(const struct CostdbPhaseTransient *ph, int cp);
/* The same for entry (start..end, submesh s, config c) of the sweep, read
 * from the database. 0 and *cut (0 when the entry lacks a phase); -1 with
 * why for a row that is not read. */
int apsolve_cp_transient_cut(struct Costdb *db, int64_t sweep, int start, int end, int s, int c,
                             int cp, int64_t *cut, char *why, size_t len);
/* The same figures of every entry of p that can hold a cp stage, read in
 * one pass for the auto search's tables (apsolve_cp_auto_open): *out NULL
 * when none has an activation-sized part (every cut 0). APSOLVE_OK,
 * APSOLVE_ENOMEM, APSOLVE_EDB with why. */
typedef struct ApsolveCpTransients ApsolveCpTransients;
int apsolve_cp_transients_read(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                               ApsolveCpTransients **out, char *why, size_t len);
/* apsolve_cp_transient_cut of entry (i..j, s, c) from t (0 for t NULL). */
int64_t apsolve_cp_transients_cut(const ApsolveCpTransients *t, const ApsolveProblem *p, int i,
                                  int j, int s, int c, int cp);
void apsolve_cp_transients_free(ApsolveCpTransients **t);

struct ApsolveFwVerdict;
/* Which frameworks run a cp plan as priced (frameworks.h): DeepSpeed's
 * config has no context parallelism; torchtitan's (PyTorch's ring
 * attention, K/V shards all-gathered or passed on) is not Ulysses, so not
 * a2a or a2a+p2p. Clears their bits of v with the reason; nothing for cp
 * <= 1. */
void apsolve_cp_frameworks(int cp, int comm, struct ApsolveFwVerdict *v);

/* The layout a cp stage is priced with. */
typedef struct ApsolveCpLayout {
    int dp, tp, cp, comm, a2a;        /* a2a: the inner group of a2a+p2p, else 0 */
    int recompute;                    /* the entry's CostdbRecompute: under full and
                                       * selective recomputation the backward reruns the
                                       * attention's forward, its cp exchange included */
} ApsolveCpLayout;

/* The attention heads of sweep's model: *heads the query heads its
 * sweep recorded (the model's options, attention_heads), *kv_heads the
 * key/value heads, heads x the key projection's width over the query
 * projection's (one head width for both) read from the first layer with
 * both among its placements; 0 for what is unknown (a database before
 * the record, a graph whose attentions disagree). */
void apsolve_cp_heads(struct Costdb *db, int64_t sweep, const ApsolveProblem *p, int *heads,
                      int *kv_heads);

/* The one check of a cp layout l on a sequence of seq tokens (0 unknown)
 * and a model of heads query and kv_heads key/value heads (0 unknown),
 * which --parallel and the auto search both make
 * (docs/context-parallel.md, "Refusals"): Megatron's validate_args, the
 * sequence in 2 cp chunks (the causal load balancing); for a2a (Ulysses),
 * each tp rank's query and key/value heads divisible by cp, for a2a+p2p by
 * its inner group l->a2a, the ranks its all-to-alls span (Transformer
 * Engine's AttnFuncWithCPAndQKVOA2A asserts num_heads % cp_size == 0 for
 * Q, K and V; its hierarchical AttnFuncWithCPAndKVP2P all-to-alls over
 * the a2a group), and the heads divisible by tp at all. 1 when l can run
 * (unknown heads are not refused: *note then says so when given), else 0
 * with the reason in why. */
int apsolve_cp_check(const ApsolveCpLayout *l, int64_t seq, int heads, int kv_heads, char *why,
                     size_t len, char *note, size_t note_len);

/* Prices what cp adds to stage (start..end, submesh s, config c) of the
 * equivalent sweep from its placements and the sweep's hardware row. 0;
 * -1 with why set when the placements or hardware cannot be read. */
int apsolve_cp_stage(struct Costdb *db, int64_t sweep, const ApsolveProblem *p, int start,
                     int end, int s, int c, const ApsolveCpLayout *l, ApsolveCpStage *out,
                     char *why, size_t len);

/* A copy of p in which every entry the 3-D specs name (their layers, their
 * submesh, each config of logical (dp cp, tp) with the batch forced on
 * axis 0) is the cp stage's: compute and saved activations divided by cp,
 * plus the communication and buffers of apsolve_cp_stage; its memory
 * limits recomputed. *seq gets the sequence length (0 unknown), *attention
 * the attention layers of the plan. 0; APSOLVE_ENOMEM; APSOLVE_EDB with
 * why. */
int apsolve_cp_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                       const ApsolveStageSpec *specs, size_t n, const ApsolveCpLayout *l,
                       ApsolveProblem **out, int64_t *seq, int *attention, char *why,
                       size_t len);

/* The auto search's cp candidates (docs/solver.md, "Context parallelism
 * in the auto search"): for each cps[k], out[k] a copy of p in which every
 * entry of every layer range, submesh and config is the cp stage of its
 * own layout (dp = logical_a / cp, tp = logical_b, the cp communication
 * comms[k], NULL: the ring; a2a and a2a+p2p only where apsolve_cp_check
 * passes for heads, kv_heads at the entry's tp, and a2a+p2p only where its
 * inner group, apsolve_cp_a2a_size, is neither 1 nor cp): the configs
 * of logical (dp cp, tp) with the batch forced on axis 0 transformed as in
 * apsolve_cp_problem, every other entry +inf (a cp plan runs each stage
 * with cp), and so is an entry the plain search prices already: where the
 * family (nfamily micro-batch sizes with a sweep) holds micro / cp and it
 * splits into whole samples over the entry's logical_a replicas, that
 * sweep's entry has the same tokens, FLOPs, activations and weights per
 * GPU, measured, without the ring. Each layer's placements are read once (the first entry of the
 * single layer), a range's facts summed from its layers'. *seq and
 * *attention as apsolve_cp_problem's (the largest attention layers of a
 * range). With views (not NULL), out[k] is instead the subset of p's
 * (submesh, config) pairs that can hold a cp stage of cps[k] (the rest
 * would be +inf: problem_subset.h, views[k] its map back to p's indices):
 * the DP's plans are the same, and the copy holds only those pairs, and
 * no unfit figures: it comes settled (apsolve_unfit_settle, from p's).
 * 0; APSOLVE_ENOMEM; APSOLVE_EDB with why (out[] all NULL, views[] empty). */
struct ApsolveSubset;
/* The same candidates one at a time, so that only the one being solved is
 * held (the auto search's cp step, session_autocp.c): open reads every
 * layer's facts once and gives *seq and *attention as above (0;
 * APSOLVE_ENOMEM; APSOLVE_EDB with why); each apsolve_cp_auto_table is
 * then out[k] of apsolve_cp_problem_auto for cps[k] = cp, comms[k] = comm,
 * bit for bit, without the database (view NULL: the whole table; 0 or
 * APSOLVE_ENOMEM). p must outlive the handle and stay unchanged. */
typedef struct ApsolveCpAuto ApsolveCpAuto;
int apsolve_cp_auto_open(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                         int64_t micro, const int64_t *family, size_t nfamily, int heads,
                         int kv_heads, ApsolveCpAuto **out, int64_t *seq, int *attention,
                         char *why, size_t len);
/* The same handle for p as apsolve_unfit_open_in_place restores it, read
 * before p is restored (apsolve_cp_range_facts as_restored; the layers'
 * facts are the only figures open reads): p may be restored in place
 * after it, and must be before the first table (the auto search's cp
 * step restores it only for a candidate whose table it makes). On a p
 * restored already, apsolve_cp_auto_open's handle. It leaves the
 * transients' cut (apsolve_cp_transients_read) unread: a step whose every
 * candidate is left out before its table reads none of them
 * (docs/performance.md, "apsolve's auto search by phase: the cp step's
 * transients read only for a table"); apsolve_cp_auto_transients_load
 * reads them, once, before the first apsolve_cp_auto_table, which refuses
 * (APSOLVE_EINVAL) a handle without them. */
int apsolve_cp_auto_open_as_restored(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                     int64_t micro, const int64_t *family, size_t nfamily,
                                     int heads, int kv_heads, ApsolveCpAuto **out, int64_t *seq,
                                     int *attention, char *why, size_t len);
/* The handle's transients' cut read from sweep of db (a no-op once read;
 * apsolve_cp_auto_open reads it): 0, APSOLVE_ENOMEM, APSOLVE_EDB with
 * why, as apsolve_cp_transients_read. They read p's configs only, so p
 * may be restored in place or not. */
int apsolve_cp_auto_transients_load(ApsolveCpAuto *a, struct Costdb *db, int64_t sweep,
                                    char *why, size_t len);
/* 1 when the handle's transients' cut is read, else 0. */
int apsolve_cp_auto_transients_loaded(const ApsolveCpAuto *a);
int apsolve_cp_auto_table(const ApsolveCpAuto *a, int cp, int comm, ApsolveProblem **out,
                          struct ApsolveSubset *view);
void apsolve_cp_auto_close(ApsolveCpAuto **a);
/* kept[s] (one per submesh of the handle's p): 1 where submesh s holds a
 * pair that apsolve_cp_auto_table's subset for cp, comm keeps (a config
 * that can hold a cp stage), else 0; the subset's submeshes are those
 * (every submesh, each of padding, where none is kept). Returns how many. */
int apsolve_cp_auto_kept(const ApsolveCpAuto *a, int cp, int comm, unsigned char *kept);
/* The tables after it check and price every entry on its own instead of
 * sharing a range's verdicts and prices among the configs of one layout
 * (the tests' reference: the same bits). */
void apsolve_cp_auto_price_each(ApsolveCpAuto *a);
int apsolve_cp_problem_auto(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            int64_t micro, const int64_t *family, size_t nfamily,
                            const int *cps, const int *comms, int heads, int kv_heads, int ncp,
                            ApsolveProblem **out, struct ApsolveSubset *views, int64_t *seq,
                            int *attention, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
