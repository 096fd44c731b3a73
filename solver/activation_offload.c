/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Activation offload (activation_offload.h; docs/variants.md, "Activation
 * offload"). The mechanism is Transformer Engine v2.18's
 * (NVIDIA/TransformerEngine, transformer_engine/pytorch/cpu_offload.py,
 * commit 27486e03): DefaultOffloadSynchronizer offloads layers
 * 0 .. N-1, starts layer i's copies to host on its one offload stream at
 * the next layer's fwd_step, releases layer i's device tensors (the
 * compute stream waits for the copy) before layer L - N + i's forward,
 * and starts its reload on the same stream before layer L - 1 - N + i's
 * backward; the backward of layer i waits for it. Megatron-Core
 * core_v0.19.0 (NVIDIA/Megatron-LM, megatron/core/transformer/
 * transformer_block.py) wraps each layer's forward in that context and
 * passes its --cpu-offloading-num-layers as N. The copies run on the copy
 * engines, which overlap kernels without taking SMs (CUDA C++
 * Programming Guide, "Asynchronous Concurrent Execution: Overlap of Data
 * Transfer and Kernel Execution", asyncEngineCount): the overlap rule
 * with no GEMM slowdown.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_offload.h"
#include "collective.h"
#include "costdb.h"
#include "frameworks.h"
#include "hardware.h"
#include "solver_int.h"

/* The copy engine beside the compute: no SM taken, so no GEMM slowdown
 * (approf_overlap_hidden's s = 0). */
static double copy_hidden(double copy, double window)
{
    static const ApprofHardwareSpec copy_engine; /* every refinement 0 */
    return approf_overlap_hidden(&copy_engine, copy, window);
}

int apsolve_offload_stage(const ApsolveProblem *p, const CostdbLayer *layers, size_t nlayers,
                          double host_bandwidth, int start, int end, int s, int c, int n,
                          ApsolveOffloadStage *out, char *why, size_t len)
{
    int L = end - start + 1;
    size_t idx = apsolve_index(p, start, end, s, c);
    double act = 0, ff = 0, bf = 0, win = 0;
    int64_t inter;
    memset(out, 0, sizeof *out);
    out->layers = L;
    out->offloaded = n;
    out->host_bandwidth = host_bandwidth;
    if (!p->memory || !p->times || !isfinite(p->cost[idx])) {
        snprintf(why, len, "the entry has no memory or forward/backward times");
        return -1;
    }
    if (n < 1 || n >= L) {
        /* TE refuses num_layers > model_layers - 1 ("last layer is not
         * offloaded"); Megatron's TransformerConfig 0 <= N < num_layers */
        snprintf(why, len, "offload=%d must be below the stage's %d layers (Transformer "
                 "Engine never offloads a stage's last layer)", n, L);
        return -1;
    }
    if (!(host_bandwidth > 0)) {
        snprintf(why, len, "the sweep's hardware row has no host link bandwidth "
                 "(host_link_bandwidth_gbs in the hardware spec: docs/hardware.md, \"Host link\")");
        return -1;
    }
    if (!layers || nlayers <= (size_t)end) {
        snprintf(why, len, "the sweep's model has no per-layer figures (model_layer) for "
                 "layers %d-%d", start, end);
        return -1;
    }
    for (int k = start; k <= end; k++) {
        act += (double)layers[k].activation_bytes;
        ff += layers[k].fwd_flops;
        bf += layers[k].bwd_flops;
    }
    if (!(act > 0) || !(ff > 0) || !(bf > 0)) {
        snprintf(why, len, "layers %d-%d have no activations or FLOPs in the model's record",
                 start, end);
        return -1;
    }
    inter = apsolve_memory_at(p, idx)->intermediate;
    /* one layer's share of the entry: its saved activations by the
     * tensors it produces, its forward and backward by their FLOPs */
#define SAVED(k) ((double)inter * (double)layers[k].activation_bytes / act)
    /* on the device at once: L - N consecutive layers (every window of
     * them occurs, from layers 0 .. L-N-1 before the first release to
     * N .. L-1 at the forward's end) */
    for (int j = 0; j <= n; j++) {
        double w = 0;
        for (int k = start + j; k < start + j + L - n; k++)
            w += SAVED(k);
        win = w > win ? w : win;
    }
    for (int k = start; k < start + n; k++) {
        double a = SAVED(k), t = a / host_bandwidth,
               f = apsolve_times_at(p, idx)->fwd * layers[k + 1].fwd_flops / ff,
               b = apsolve_times_at(p, idx)->bwd * layers[k + 1].bwd_flops / bf;
        out->saved_bytes += a;
        out->d2h += t;
        out->h2d += t;
        /* N = L - 1: the release (before layer L - N + k = k + 1) and the
         * reload (before layer k's own backward) leave no compute beside */
        out->exposed_fwd += t - (n < L - 1 ? copy_hidden(t, f) : 0.0);
        out->exposed_bwd += t - (n < L - 1 ? copy_hidden(t, b) : 0.0);
    }
#undef SAVED
    out->window_bytes = win;
    out->freed = (int64_t)((double)inter - win);
    return 0;
}

int apsolve_offload_source_load(Costdb *db, int64_t sweep, ApsolveOffloadSource *out,
                                char *why, size_t len)
{
    CostdbSweep sw;
    CostdbHardware hw;
    CostdbFabric f;
    memset(out, 0, sizeof *out);
    if (costdb_sweep_get(db, sweep, &sw) < 0 || sw.hardware_id <= 0 ||
        costdb_hardware_get(db, sw.hardware_id, &hw) < 0) {
        snprintf(why, len, "sweep %lld has no hardware row to price the host copies",
                 (long long)sweep);
        return APSOLVE_EDB;
    }
    costdb_fabric_from_hardware(&hw, &f);
    out->host_bandwidth = f.host_bandwidth;
    if (sw.model_id <= 0 || costdb_model_layers(db, sw.model_id, &out->layers, &out->nlayers) < 0) {
        snprintf(why, len, "sweep %lld has no model record to split its entries by layer",
                 (long long)sweep);
        apsolve_offload_source_free(out);
        return APSOLVE_EDB;
    }
    return APSOLVE_OK;
}

void apsolve_offload_source_free(ApsolveOffloadSource *src)
{
    free(src->layers);
    memset(src, 0, sizeof *src);
}

int apsolve_offload_entry(const ApsolveProblem *p, const ApsolveOffloadSource *src, int start,
                          int end, int s, int c, int n, ApsolveProblem *q, size_t qi, char *why,
                          size_t len)
{
    size_t idx = apsolve_index(p, start, end, s, c);
    ApsolveOffloadStage x;
    ApsolveMemory m;
    ApsolveTimes t;
    if (!p->configs[(size_t)s * p->num_configs + c].valid || !isfinite(p->cost[idx]))
        return 1;
    if (apsolve_offload_stage(p, src->layers, src->nlayers, src->host_bandwidth, start, end, s,
                              c, n, &x, why, len))
        return APSOLVE_EINVAL;
    /* written whole from p's entry: q may hold another n's */
    m = *apsolve_memory_at(p, idx);
    m.peak -= x.freed < m.peak ? x.freed : m.peak;
    m.intermediate -= x.freed;
    /* q's wgrad kept, as when the three were dense tables */
    t = *apsolve_times_at(q, qi);
    t.fwd = apsolve_times_at(p, idx)->fwd + x.exposed_fwd;
    t.bwd = apsolve_times_at(p, idx)->bwd + x.exposed_bwd;
    if (apsolve_memory_put(q, qi, &m) != APSOLVE_OK || apsolve_times_put(q, qi, &t) != APSOLVE_OK) {
        snprintf(why, len, "out of memory for the entry's memory figures or times");
        return APSOLVE_ENOMEM;
    }
    q->cost[qi] = t.fwd + t.bwd;
    q->max_n_succ_stages[qi] = apsolve_memory_mnss(&m);
    return 0;
}

int apsolve_offload_compose_with(const ApsolveOffloadSource *src, const ApsolveProblem *p,
                                 ApsolveProblem *q, const ApsolveStageSpec *specs, size_t nspec,
                                 int n, char *why, size_t len)
{
    for (size_t k = 0; k < nspec; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        for (int s = 0; s < q->num_submeshes; s++) {
            if (q->submeshes[s].hosts != sp->hosts || q->submeshes[s].gpus != sp->gpus)
                continue;
            for (int c = 0; c < q->num_configs; c++) {
                char w[256];
                if (apsolve_offload_entry(p, src, sp->start_layer, sp->end_layer, s, c, n, q,
                                          apsolve_index(q, sp->start_layer, sp->end_layer, s, c),
                                          w, sizeof w) < 0) {
                    snprintf(why, len, "stage %zu (layers %d-%d): %s", k, sp->start_layer,
                             sp->end_layer, w);
                    return APSOLVE_EINVAL;
                }
            }
        }
    }
    return APSOLVE_OK;
}

int apsolve_offload_compose(Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveProblem *q, const ApsolveStageSpec *specs, size_t nspec,
                            int n, char *why, size_t len)
{
    ApsolveOffloadSource src;
    int rc = apsolve_offload_source_load(db, sweep, &src, why, len);
    if (!rc)
        rc = apsolve_offload_compose_with(&src, p, q, specs, nspec, n, why, len);
    apsolve_offload_source_free(&src);
    return rc;
}

int apsolve_offload_problem(Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            const ApsolveStageSpec *specs, size_t nspec, int n,
                            ApsolveProblem **out, char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    int rc;
    *out = NULL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    if ((rc = apsolve_offload_compose(db, sweep, p, q, specs, nspec, n, why, len)) != 0) {
        apsolve_problem_free(&q);
        return rc;
    }
    *out = q;
    return APSOLVE_OK;
}

void apsolve_offload_frameworks(int n, ApsolveFwVerdict *v)
{
    if (n <= 0)
        return;
    if (v->runs & (1u << APSOLVE_FW_DEEPSPEED))
        snprintf(v->why[APSOLVE_FW_DEEPSPEED], sizeof v->why[APSOLVE_FW_DEEPSPEED],
                 "offload=%d: its activation_checkpointing.cpu_checkpointing (with "
                 "partition_activations) moves the inputs activation checkpointing keeps to "
                 "the CPU, under recomputation; not a layer's saved activations", n);
    if (v->runs & (1u << APSOLVE_FW_TORCHTITAN))
        snprintf(v->why[APSOLVE_FW_TORCHTITAN], sizeof v->why[APSOLVE_FW_TORCHTITAN],
                 "offload=%d: it has no activation offload to host memory (its "
                 "training.enable_cpu_offload is FSDP2's CPUOffloadPolicy: parameters, "
                 "gradients and optimizer state)", n);
    v->runs &= ~((1u << APSOLVE_FW_DEEPSPEED) | (1u << APSOLVE_FW_TORCHTITAN));
}
