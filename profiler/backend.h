/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backend interface: something that turns a stage program into a
 * ModuleProfileResult for one phase. The analytic backend (hw/analytic.c)
 * estimates from a hardware spec; the CUDA backend (cuda/, a shared module
 * opened with dlopen so the core never links CUDA) measures on a GPU.
 */
#ifndef APPROF_BACKEND_H
#define APPROF_BACKEND_H

#include "hardware.h"
#include "stage.h"

#define APPROF_BACKEND_ABI 25 /* 2: ApprofHardwareSpec.curves; 3: ApprofKernel.store_bytes,
                              * ApprofHardwareSpec.tp_comm_overlap, gemm_store_overlap;
                              * 4: ApprofKernel.attention, ApprofHardwareSpec.attention_efficiency,
                              * reduction_efficiency, gemm_unaligned_factor, grad_reduce_bytes,
                              * loss_f32; ApprofKernel.loss; 5: ApprofHardwareSpec.grad_accum_fusion;
                              * 6: ApprofHardwareSpec.tp_async_grad, ApprofKernel.async_group,
                              * async_wgrad, ApprofCollective.async_group; 7: ApprofKernel.kop,
                              * kop_backward, rows, cols, extent, rate; 8:
                              * ApprofHardwareSpec.gemm_table; 9: ApprofKernel.fp8,
                              * ApprofHardwareSpec.fp8; 10: ApprofCollective.zero3_unit,
                              * zero3_issue, ApprofHardwareSpec.zero3_schedule; 11:
                              * ApprofKernel.experts, experts_k,
                              * ApprofStageProgram.optimizer_elements,
                              * ApprofMeasurement.apply_seconds; 12: ApprofKernel.wgrad;
                              * 13: ApprofHardwareSpec.peak_flops_fp4, scaleup_gpus,
                              * ApprofCollective.span_hosts; 14: ApprofKernel.attn_b, attn_hq,
                              * attn_hkv, attn_sq, attn_skv, attn_d, attn_causal, attn_lead;
                              * 15: ApprofHardwareSpec.zero3_rank_copies; 16:
                              * ApprofHardwareSpec.overlap_gemm_slowdown; 17:
                              * ApprofHardwareSpec.intra_host_full_mesh,
                              * .sm_count, .tp_comm_overlap_sms, .tp_comm_overlap_splits,
                              * .host_link_bandwidth;
                              * 18: ApprofHardwareSpec.zero3_fetch_sync;
                              * 19: ApprofHardwareSpec.zero3_grad_all_reduce;
                              * 20: ApprofHardwareSpec.zero3_gather_copy,
                              * zero3_grad_copy; 21: ApprofHardwareSpec.attention_eff_seq;
                              * 22: ApprofStageProgram.zero3_post_step_copies,
                              * zero3_post_step_bytes; 23:
                              * ApprofHardwareSpec.nccl_channels; 24:
                              * ApprofHardwareSpec.loss_metric_passes; 25:
                              * ApprofHardwareSpec.metric_sync_states */

typedef struct ApprofMeasurement {
    double compute_cost;         /* seconds; +inf when status != 0 */
    int64_t peak_memory;         /* bytes on one device */
    int64_t available_memory;
    int repeats;
    double spread;               /* (max - min) / median of the repeats */
    int status;                  /* CostdbStatus value */
    char error[256];
    /* > 0: seconds of the optimizer step (Adam over the program's
     * optimizer_elements) measured by the backend, which it reports with
     * the backward phase; 0: not measured, the step is priced from
     * optimizer_bytes (approf_stage_apply_seconds). */
    double apply_seconds;
    /* status OOM: the seconds the backend computed for the phase before
     * judging it out of memory (the analytic backend's; kept as the entry's
     * unfit_cost, CostdbEntry); 0: unknown (a module that ran out). */
    double unfit_cost;
} ApprofMeasurement;

/* The processes of a multi-process sweep (mpirun -np R approf sweep), as a
 * backend sees them, without depending on MPI: the sweep fills it from its
 * MPI layer (sweep/sweep_mpi.h). bcast and barrier are collective: every
 * rank calls them in the same order. A backend that needs a communicator of
 * its own bootstraps it here, e.g. NCCL: rank 0 calls ncclGetUniqueId, then
 * every rank bcast(&id, sizeof id, 0) and ncclCommInitRank(size, id, rank).
 * local_rank / local_size (ranks on this host) choose the device. */
typedef struct ApprofProcessGroup {
    int rank, size;
    int local_rank, local_size;
    void *ctx;
    int (*bcast)(void *ctx, void *buf, size_t len, int root);
    int (*barrier)(void *ctx);
    /* Collective: every rank's status (0 or negative) in, 0 out when all
     * are 0, else the smallest (a failing rank's reason stays in its own
     * err). */
    int (*agree)(void *ctx, int status);
} ApprofProcessGroup;

typedef struct ApprofBackend {
    const char *name;            /* "model" | "cuda" */
    void *ctx;
    /* Costs phase (0 fwd, 1 bwd) of the stage program p on hardware hw. */
    int (*measure)(void *ctx, const ApprofStageProgram *p, int phase,
                   const ApprofHardwareSpec *hw, ApprofMeasurement *out);
    /* Frees ctx. */
    void (*destroy)(void *ctx);
    /* Optional (NULL: nothing to do). Called once by every rank of a
     * multi-process sweep (pg->size > 1) after the backend opened on every
     * rank and before any measure; pg stays valid until destroy. 0, or a
     * negative code with a one-line reason in err, which stops the sweep on
     * every rank. */
    int (*join)(void *ctx, const ApprofProcessGroup *pg, char *err, size_t errlen);
} ApprofBackend;

/* Entry point a backend module exports (dlsym name "approf_backend_module_init").
 * Fills *out; returns 0, or APPROF_ENODEV with a message when no device. */
typedef int (*ApprofBackendModuleInit)(int abi, ApprofBackend *out, char *err, size_t errlen);

/* Module entry point "approf_backend_module_init_on": a backend on one
 * device, for one sweep worker per device. */
typedef int (*ApprofBackendModuleInitOn)(int abi, int device, ApprofBackend *out, char *err,
                                         size_t errlen);

/* The analytic backend (always available). */
int approf_backend_analytic(ApprofBackend *out);
/* 1 when b is the analytic backend, whose measurement of a phase is
 * approf_phase_seconds(hw, p, phase) exactly: the compute_cost of an ok
 * phase, the unfit_cost of one out of memory (hw/analytic.c); a sweep then
 * prices the apply-grad and weight-gradient shares from it instead of
 * pricing the phases again. */
int approf_backend_prices_phases(const ApprofBackend *b);
/* The analytic backend's measurement of phase of p, its collectives'
 * prices kept in *memo (approf_phase_seconds_memo; NULL: none): what a
 * sweep calls for a backend approf_backend_prices_phases names, with a
 * memo of its own thread's. */
int approf_analytic_measure_memo(ApprofPriceMemo **memo, const ApprofStageProgram *p, int phase,
                                 const ApprofHardwareSpec *hw, ApprofMeasurement *out);
/* The same, with what the pass over the phase's kernels gives besides its
 * seconds in *price (approf_phase_price_memo): the apply-grad and
 * weight-gradient prices read from it (approf_stage_apply_seconds_priced,
 * approf_wgrad_seconds_priced). */
int approf_analytic_measure_priced(ApprofPriceMemo **memo, const ApprofStageProgram *p, int phase,
                                   const ApprofHardwareSpec *hw, ApprofMeasurement *out,
                                   ApprofPhasePrice *price);
/* Opens the CUDA module; APPROF_ENODEV with a one-line reason when the module,
 * the driver or a device is missing. */
int approf_backend_cuda(ApprofBackend *out, char *err, size_t errlen);
/* The same on one device (0 <= device < the device_count of
 * approf_cuda_device_info, cuda/probe.h). */
int approf_backend_cuda_on(int device, ApprofBackend *out, char *err, size_t errlen);
void approf_backend_destroy(ApprofBackend *b);

#endif
