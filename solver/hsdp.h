/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hybrid sharded data parallelism (dp_shard=S) and FSDP2's
 * reshard_after_forward (raf=0|1) of a --parallel ZeRO-3 plan, as PyTorch's
 * fully_shard runs them on a 2-D (replicate, shard) device mesh and
 * torchtitan configures them (data_parallel_replicate_degree,
 * data_parallel_shard_degree, fsdp_reshard_after_forward). The model and
 * its sources: docs/hsdp.md.
 *
 * A stage is priced from the stored ZeRO-3 entry of its (dp, tp) mesh,
 * which shards the parameters replicated over the data-parallel axis (P
 * bytes per GPU, read from the entry's placements) over all dp replicas:
 * under HSDP they are sharded over S of them instead, so the parameters,
 * gradients and Adam state of that shard grow from P/dp to P/S, the
 * per-module all-gathers and reduce-scatters run over S ranks (stride tp:
 * the inner mesh dimension), and once per iteration the gradient shard is
 * all-reduced over the dp/S replicas (stride S tp). raf=0 keeps the
 * gathered parameters from the forward to the backward: the backward's
 * all-gathers go, and the stage's gathered parameters stay on the peak.
 * Collectives are priced by costdb/collective.c.
 */
#ifndef APSOLVE_HSDP_H
#define APSOLVE_HSDP_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "frameworks.h"

#ifdef __cplusplus
extern "C" {
#endif

struct Costdb;
struct ApsolveParallel;

/* The --parallel text's HSDP knobs against the others (parallel.c, after
 * every knob is read; shard_seen, raf_seen: the knob was given): dp_shard
 * and raf need zero=3, dp_shard divides dp and is at least 2, neither
 * goes with cp or ep (not priced together). 0, or -1 with errbuf naming
 * the rule. */
int apsolve_hsdp_parse_check(const struct ApsolveParallel *par, int shard_seen, int raf_seen,
                             char *errbuf, size_t errlen);

/* The layout an HSDP stage is priced with. */
typedef struct ApsolveHsdpLayout {
    int dp, tp;                       /* the entries' logical mesh (dp, tp) */
    int shard;                        /* S: the shard group (dp: plain ZeRO-3) */
    int raf;                          /* reshard_after_forward: 1 (FSDP2's default) or 0 */
} ApsolveHsdpLayout;

/* One stage entry under the layout, per GPU. */
typedef struct ApsolveHsdpStage {
    double param_bytes;               /* P: local bytes of the parameters ZeRO-3 shards */
    double param_elems;               /* their elements */
    int modules;                      /* operators holding them: ZeRO-3's collectives a phase */
    double largest;                   /* bytes of the largest module */
    double gather_before, gather_after; /* one phase's all-gathers over dp and over S, s */
    double rs_before, rs_after;       /* the backward's reduce-scatters over dp and over S, s */
    double allreduce;                 /* the replicate group's all-reduce of the shard, s */
    double comm_fwd, comm_bwd;        /* change per micro-batch, seconds */
    int64_t peak_delta, initial_delta; /* memory change, bytes */
    double apply_delta;               /* once per iteration: the all-reduce and Adam */
} ApsolveHsdpStage;

/* Prices stage entry (start..end, submesh s, config c; a ZeRO-3 entry of
 * logical (l->dp, l->tp), priced with the serial ZeRO-3 schedule) of a
 * sweep on hosts of gpus_per_host GPUs under layout l, from its placements
 * and the sweep's hardware row, into *out. 0; -1 with why set when the
 * placements or the hardware row cannot be read. */
int apsolve_hsdp_stage(struct Costdb *db, int64_t sweep, int gpus_per_host, int start, int end,
                       int s, int c, const ApsolveHsdpLayout *l, ApsolveHsdpStage *out,
                       char *why, size_t len);

/* A copy of p in which every ZeRO-3 entry of the specs' stages on logical
 * (dp, tp) with the batch forced on axis 0 is the HSDP stage's (above).
 * first[k] (n of them) gets the figures of spec k's lowest such config.
 * 0; APSOLVE_ENOMEM; APSOLVE_EDB with why. */
int apsolve_hsdp_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                         const ApsolveStageSpec *specs, size_t n, const ApsolveHsdpLayout *l,
                         ApsolveProblem **out, ApsolveHsdpStage *first, char *why, size_t len);

/* Which frameworks run an HSDP (dp_shard > 0) or raf=0 plan of tensor
 * parallelism tp as priced, on top of the layout's verdict (frameworks.h):
 * not DeepSpeed with raf=0 (its stage 3 has no reshard_after_forward) nor
 * HSDP with tp > 1 (MiCS, its HSDP, groups consecutive global ranks).
 * torchtitan runs both (data_parallel_replicate_degree,
 * fsdp_reshard_after_forward); Megatron-LM runs HSDP through Megatron-FSDP
 * (--num-distributed-optimizer-instances: the shard groups are consecutive
 * dp ranks, as priced) but not raf=0 (Megatron-FSDP reshards every layer
 * after its forward). */
void apsolve_hsdp_frameworks(int dp_shard, int tp, int raf, ApsolveFwVerdict *v);

#ifdef __cplusplus
}
#endif

#endif
