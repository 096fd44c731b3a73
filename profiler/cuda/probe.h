/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hardware probe's interface between the core and the approf-cuda
 * module. The module exports "approf_probe_module_run" (ApprofProbeModuleRun):
 * it measures GEMM FLOP/s per dtype, device-memory bandwidth and NCCL
 * collectives over the local 1xG device groups, and hands every point to
 * the caller's callbacks; the host side (approf probe) stores them with
 * costdb. Nothing here depends on CUDA headers. Also declares the loader's
 * extras: the module search path and the collective-cost hook of the CUDA
 * backend.
 */
#ifndef APPROF_CUDA_PROBE_H
#define APPROF_CUDA_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "../backend.h"

#define APPROF_PROBE_ABI 3 /* 2: process groups, HxG groups in on_comm; 3: the GEMM shape
                            * grid (gemm_grid, on_gemm_shape) */
#define APPROF_PROBE_MAX_GEMM_SIZES 8
#define APPROF_PROBE_MAX_GEMM_GRID 12

/* What the probe found; strings are NUL-terminated, "" when unknown. */
typedef struct ApprofProbeInfo {
    char gpu_model[128];           /* cudaDeviceProp.name of device 0 */
    int device_count;
    int64_t device_memory;         /* bytes, device 0 */
    int cc_major, cc_minor;        /* compute capability */
    int sm_count;
    char driver_version[32];       /* CUDA version the driver supports, "13.0" */
    char runtime_version[32];      /* CUDA runtime, "13.0" */
    char nccl_version[32];         /* "2.28.3" */
    char cudnn_version[32];        /* "9.19.0" */
    char cublas_version[32];       /* cublasLtGetVersion(), "130100" */
} ApprofProbeInfo;

/* What to measure and where the results go. Callbacks returning non-zero
 * stop the probe, which then returns that value. user is passed through.
 *
 * One process (pg NULL or pg->size 1): the local devices, collectives over
 * the 1xG groups (G = 2, 4, ... devices) with one NCCL communicator per
 * device (ncclCommInitAll).
 * Several processes (mpirun -np R approf probe; pg->size > 1): one device
 * per rank (pg->local_rank), hosts = size / local_size, and collectives over
 * every HxG group (H = 1, 2, 4, ... hosts, G = 1, 2, 4, ... devices each,
 * H x G >= 2; approf_probe_mpi_groups): the first H hosts' first G ranks
 * join one NCCL communicator, bootstrapped by broadcasting rank 0's
 * ncclUniqueId through pg->bcast. on_info runs on every rank; on_compute,
 * on_gemm_shape, on_comm and on_progress on rank 0 only (its device and its
 * timings). */
typedef struct ApprofProbeRequest {
    int64_t min_bytes, max_bytes;  /* collective message sizes (nccl-tests "size") */
    int gemm_sizes[APPROF_PROBE_MAX_GEMM_SIZES]; /* square GEMM sizes m = n = k */
    int n_gemm_sizes;
    int repeats;                   /* timed repeats per point; the median is kept */
    void *user;
    /* Once the devices are known, before anything is measured. */
    int (*on_info)(void *user, const ApprofProbeInfo *info);
    /* op "gemm": rate in FLOP/s (2 m n k / t), size = m = n = k, dtype
     * f32|f16|bf16; op "memcpy": cudaMemcpy device to device, rate in bytes/s
     * counting read and write (2 size / t), dtype "u8"; on >= 2 local
     * devices without mpirun, the overlap points (probe_overlap.c):
     * "overlap-gemm:<c>" and "overlap-gemm+<c>" (bf16 GEMM FLOP/s alone and
     * beside collective c on another stream, size = m = n = k),
     * "overlap-<c>" and "overlap-<c>+gemm" (f32 algorithm bytes/s alone and
     * beside the GEMMs, size = nccl-tests size), c all-reduce, all-gather. */
    int (*on_compute)(void *user, const char *op, const char *dtype, int64_t size, double rate);
    /* One collective point: seconds per operation over a hosts x gpus
     * group, bytes = nccl-tests "size" (see approf_coll_counts). */
    int (*on_comm)(void *user, ApprofCollKind kind, int hosts, int gpus, const char *dtype,
                   int64_t bytes, double seconds);
    /* One-line progress messages (optional). */
    void (*on_progress)(void *user, const char *line);
    /* The processes of `mpirun -np R approf probe`, or NULL. */
    const ApprofProcessGroup *pg;
    /* The GEMM shape grid (ABI 3): every (m, n, k) with each of m, n, k
     * one of gemm_grid[0..n_gemm_grid) (entries <= 0 skipped; none: no
     * grid), in bf16, f16 and f32 (on TF32 tensor cores unless
     * APPROF_CUDA_TF32=0: dtype "tf32", else "f32"); a shape whose operands
     * do not fit half the free device memory is skipped. */
    int gemm_grid[APPROF_PROBE_MAX_GEMM_GRID];
    int n_gemm_grid;
    /* One shape of the grid: rate = 2 m n k / t in FLOP/s, t the median
     * of the repeats of back-to-back GEMMs (main loop, epilogue and the gap
     * between launches, all of it). */
    int (*on_gemm_shape)(void *user, const char *dtype, int64_t m, int64_t n, int64_t k,
                         double rate);
} ApprofProbeRequest;

/* Entry point "approf_probe_module_run": 0, APPROF_ENODEV with a one-line
 * reason in err when no device, a callback's non-zero value, or another
 * negative code with the CUDA/NCCL error text in err. */
typedef int (*ApprofProbeModuleRun)(int abi, const ApprofProbeRequest *req, ApprofProbeInfo *info,
                                    char *err, size_t errlen);

/* Loads the module and runs its probe. APPROF_ENODEV with a one-line reason
 * when the module, the driver or a device is missing. */
int approf_cuda_probe(const ApprofProbeRequest *req, ApprofProbeInfo *info, char *err,
                      size_t errlen);

/* The devices of this machine (what approf probe fingerprints), without
 * measuring anything. 0, or APPROF_ENODEV with a one-line reason. */
int approf_cuda_device_info(ApprofProbeInfo *info, char *err, size_t errlen);

/* The module file the loader opens: $APPROF_MODULE_DIR/approf-cuda.so when
 * that variable is set and not empty, else the build tree's copy when it
 * exists, else the installed one (libdir/approf). */
void approf_cuda_module_path(char *out, size_t len);

/* Cost of one collective the CUDA backend adds to a measured phase (it
 * measures compute on one GPU and does not execute collectives). */
typedef double (*ApprofCollCostFn)(void *user, const ApprofCollective *c,
                                   const ApprofHardwareSpec *hw);

/* Replaces the CUDA backend's collective cost (by default the spec's
 * alpha-beta model, approf_collective_seconds), e.g. with measured curves.
 * APPROF_EINVAL when b is not a backend from approf_backend_cuda. */
int approf_backend_cuda_set_coll_cost(ApprofBackend *b, ApprofCollCostFn fn, void *user);

#endif
