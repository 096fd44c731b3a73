/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Activation offload of a --parallel plan (offload=N), as Megatron-Core
 * core_v0.19.0 runs --cpu-offloading-num-layers N through Transformer
 * Engine v2.18's get_cpu_offload_context (transformer_engine/pytorch/
 * cpu_offload.py, DefaultOffloadSynchronizer): the saved activations of
 * the first N of a stage's L layers are copied to pinned host memory on
 * one side stream after each layer's forward and copied back ahead of its
 * backward. The model and its sources: docs/variants.md, "Activation
 * offload".
 *
 * Memory: TE releases layer i's device copy before layer L - N + i's
 * forward and starts its reload before layer L - 1 - N + i's backward,
 * so at most L - N consecutive layers' saved activations are on the
 * device at once (its docstring: "(num_layers - num_offloaded_layers) *
 * T"); the stage's peak and intermediate lose the rest. Time: each layer's
 * device-to-host copy runs beside the next layer's forward, each
 * host-to-device copy beside the backward of the layer after it, over the
 * host link (CostdbFabric.host_bandwidth) on the copy engines, which take
 * no SMs: approf_overlap_hidden with no GEMM slowdown, the rest exposed.
 * With N = L - 1 TE's windows close before the copy can run (its own
 * warning): every copy is exposed.
 */
#ifndef APSOLVE_ACTIVATION_OFFLOAD_H
#define APSOLVE_ACTIVATION_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "costdb.h"

#ifdef __cplusplus
extern "C" {
#endif

struct Costdb;
struct ApsolveFwVerdict;

/* What offloading n layers changes in one stage entry, per micro-batch
 * and GPU. */
typedef struct ApsolveOffloadStage {
    int layers, offloaded;            /* the stage's layers L, and N of them (its first) */
    double saved_bytes;               /* the N layers' saved activations, copied each way */
    double window_bytes;              /* the most saved activations of L - N consecutive
                                       * layers: what stays on the device at once */
    int64_t freed;                    /* bytes the peak and the intermediate lose */
    double host_bandwidth;            /* bytes/s one direction */
    double d2h, h2d;                  /* copy seconds, all N layers */
    double exposed_fwd, exposed_bwd;  /* of them, not hidden by compute */
} ApsolveOffloadStage;

/* Prices offloading n layers of entry (start..end, s, c) of p at
 * host_bandwidth bytes/s. A stage's entry is profiled whole (a pp=1 stage
 * has no single-layer entries on its submesh): each layer's share of its
 * intermediate is its share of the tensors the model's layers produce
 * (layers[k].activation_bytes, the model_layer record), of its forward
 * and backward its share of their FLOPs. 0; -1 with why when the entry
 * lacks the details or the layers' record, n is not below the stage's
 * layers or the bandwidth is unknown. */
int apsolve_offload_stage(const ApsolveProblem *p, const CostdbLayer *layers, size_t nlayers,
                          double host_bandwidth, int start, int end, int s, int c, int n,
                          ApsolveOffloadStage *out, char *why, size_t len);

/* What pricing offload reads of a sweep besides its entries: the host
 * link (its hardware row's, CostdbFabric.host_bandwidth) and the model's
 * per-layer record. */
typedef struct ApsolveOffloadSource {
    double host_bandwidth;            /* bytes/s one direction */
    CostdbLayer *layers;              /* owned */
    size_t nlayers;
} ApsolveOffloadSource;

/* Reads sweep's source. 0; APSOLVE_EDB with why (no hardware row, no model
 * record). */
int apsolve_offload_source_load(struct Costdb *db, int64_t sweep, ApsolveOffloadSource *out,
                                char *why, size_t len);
void apsolve_offload_source_free(ApsolveOffloadSource *src);

/* The one composition of an offloaded entry: q's entry qi becomes p's
 * entry (start..end, s, c) with its first n layers offloaded, written
 * whole from p's (peak and intermediate less the freed bytes, forward and
 * backward plus the exposed copies, the memory limit recomputed; q's other
 * tables untouched), so q may be p's clone or a smaller copy (the auto
 * search's one-stage problem, offload_one_stage.h). 0; 1 when p has no
 * such entry (its config invalid or its cost not finite: nothing written);
 * APSOLVE_EINVAL with why (apsolve_offload_stage's); APSOLVE_ENOMEM with
 * why (no room for q's memory figures, apsolve_memory_put). */
int apsolve_offload_entry(const ApsolveProblem *p, const ApsolveOffloadSource *src, int start,
                          int end, int s, int c, int n, ApsolveProblem *q, size_t qi, char *why,
                          size_t len);

/* A copy of p in which every config of the specs' stages (their layers
 * and submesh) that has an entry offloads n layers: peak and intermediate less the freed
 * bytes, forward and backward plus the exposed copies, the memory limit
 * recomputed. The host link is sweep's hardware row's. 0; APSOLVE_ENOMEM;
 * APSOLVE_EDB or APSOLVE_EINVAL with why. */
int apsolve_offload_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            const ApsolveStageSpec *specs, size_t nspec, int n,
                            ApsolveProblem **out, char *why, size_t len);

/* The same in place: q, a clone of p (apsolve_problem_clone), gets those
 * entries, each written whole from p's, so one clone serves every n of
 * the same specs in turn (apsolve --framework megatron's search). 0, or
 * as apsolve_offload_problem. */
int apsolve_offload_compose(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveProblem *q, const ApsolveStageSpec *specs, size_t nspec,
                            int n, char *why, size_t len);
/* The same from a source already read. */
int apsolve_offload_compose_with(const ApsolveOffloadSource *src, const ApsolveProblem *p,
                                 ApsolveProblem *q, const ApsolveStageSpec *specs, size_t nspec,
                                 int n, char *why, size_t len);

/* Which frameworks run an offload plan as priced (frameworks.h): only
 * Megatron-LM (--cpu-offloading-num-layers); DeepSpeed v0.16.4's
 * activation_checkpointing.cpu_checkpointing moves the partitioned inputs
 * that activation checkpointing keeps (deepspeed/runtime/
 * activation_checkpointing/checkpointing.py), under recomputation, not a
 * layer's saved activations, and torchtitan v0.2.2 has no activation
 * offload (training.enable_cpu_offload is FSDP2's CPUOffloadPolicy of
 * parameters, gradients and optimizer state: torchtitan/config/
 * job_config.py, models/llama3/infra/parallelize.py). Clears
 * their bits of v with the reason; nothing for n <= 0. */
void apsolve_offload_frameworks(int n, struct ApsolveFwVerdict *v);

#ifdef __cplusplus
}
#endif

#endif
