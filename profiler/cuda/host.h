/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host-side logic of the CUDA backend that needs no CUDA: statistics of
 * repeated timings, the cuDNN algorithm cache, the tracking allocator's
 * accounting (over any alloc/free pair), the GEMM descriptor handed to
 * cuBLASLt, operand sizes per kernel, the memory reserve, and the probe's
 * message sizes, element counts and nccl-tests bandwidth formulas. These
 * files are compiled twice: into the approf-cuda module and into a plain
 * static library that the core and tests/cuda link, so all of it is
 * unit-tested on machines without a GPU.
 */
#ifndef APPROF_CUDA_HOST_H
#define APPROF_CUDA_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "../model/graph.h"
#include "../hw/stage.h"
#include "op_shape.h"

/* ---- repeat statistics ---------------------------------------------------- */

/* Median (the mean of the two middle values for even n) and relative spread
 * (max - min) / median of n >= 1 finite, non-negative samples; spread is 0
 * when the median is 0. The samples are not modified. 0, APPROF_EINVAL or
 * APPROF_ENOMEM. */
int approf_cuda_stats(const double *samples, int n, double *median, double *spread);

/* ---- cuDNN algorithm cache ------------------------------------------------ */

typedef enum {
    APPROF_CONV_DIR_FWD = 0,
    APPROF_CONV_DIR_BWD_DATA,
    APPROF_CONV_DIR_BWD_FILTER,
} ApprofConvDir;

/* A convolution problem: the forward input x[n, c, h, w], filter
 * w[k, c/groups, r, s], stride, padding, groups, dtype and direction. */
typedef struct ApprofConvKey {
    int dir;
    int dtype;
    int64_t n, c, h, w, k, r, s;
    int stride[2], pad[2], groups;
} ApprofConvKey;

typedef struct ApprofConvAlgo {
    int algo;          /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t value */
    int math;          /* cudnnMathType_t value the find call reported */
    size_t workspace;  /* bytes the algorithm needs */
    float time_ms;     /* what the find call measured */
} ApprofConvAlgo;

typedef struct ApprofAlgoCache ApprofAlgoCache;

/* Fills key from a convolution kernel (kind CONV_*) and dtype; groups 0
 * means 1. APPROF_EINVAL for another kind or non-positive sizes. */
int approf_conv_key_from_kernel(const ApprofKernel *k, ApprofDtype dt, ApprofConvKey *key);
/* FNV-1a over the key's fields (not its padding). */
uint64_t approf_conv_key_hash(const ApprofConvKey *key);
/* An empty cache; the caller owns *out (approf_algo_cache_free). */
int approf_algo_cache_new(ApprofAlgoCache **out);
void approf_algo_cache_free(ApprofAlgoCache **c);
/* 1 and *out filled when key is cached, 0 when not. */
int approf_algo_cache_get(const ApprofAlgoCache *c, const ApprofConvKey *key, ApprofConvAlgo *out);
/* Inserts or replaces key's entry. 0 or APPROF_ENOMEM (cache unchanged). */
int approf_algo_cache_put(ApprofAlgoCache *c, const ApprofConvKey *key, const ApprofConvAlgo *v);
size_t approf_algo_cache_count(const ApprofAlgoCache *c);

/* ---- tracking allocator --------------------------------------------------- */

/* Underlying allocator: 0 on success, APPROF_ENOMEM when the device is out
 * of memory, another negative code for any other failure. */
typedef int (*ApprofRawAlloc)(void *user, size_t bytes, void **ptr);
typedef void (*ApprofRawFree)(void *user, void *ptr);

typedef struct ApprofTrackBlock {
    void *ptr;
    size_t bytes;
} ApprofTrackBlock;

/* Counts what is allocated through it: current and peak bytes (as
 * requested), and the live blocks so that everything can be released after
 * an error. */
typedef struct ApprofTrackAlloc {
    ApprofRawAlloc raw_alloc;
    ApprofRawFree raw_free;
    void *user;
    int64_t current, peak;
    int64_t n_allocs;
    ApprofTrackBlock *live;
    size_t n_live, cap_live;
} ApprofTrackAlloc;

void approf_track_init(ApprofTrackAlloc *t, ApprofRawAlloc a, ApprofRawFree f, void *user);
/* Allocates bytes (> 0) into *ptr. 0; APPROF_ENOMEM when the device (or
 * the host bookkeeping) is out of memory; the raw allocator's code
 * otherwise. Nothing is counted on failure. */
int approf_track_alloc(ApprofTrackAlloc *t, size_t bytes, void **ptr);
/* Frees a block allocated here; APPROF_EINVAL for an unknown pointer. */
int approf_track_free(ApprofTrackAlloc *t, void *ptr);
/* Frees every live block and the bookkeeping; peak is kept. */
void approf_track_release_all(ApprofTrackAlloc *t);

/* ---- GEMM descriptor ------------------------------------------------------ */

typedef enum {
    APPROF_GEMM_COMPUTE_32F = 0,        /* CUBLAS_COMPUTE_32F */
    APPROF_GEMM_COMPUTE_32F_FAST_TF32,  /* CUBLAS_COMPUTE_32F_FAST_TF32 */
} ApprofGemmCompute;

/* A row-major batch x (m x k) @ (k x n) = (m x n), as cuBLAS's column-major
 * C' = A' B' with M = n, N = m, K = k: A' is the (k x n) operand read as
 * n x k column-major (ld n), B' the (m x k) operand (ld k), C' ld n. No
 * transposes. Element strides between batches are those of dense arrays. */
typedef struct ApprofGemmDesc {
    ApprofDtype ab_type, c_type;   /* element type of A, B and C/D */
    ApprofGemmCompute compute;
    int scale_f32;                 /* alpha and beta are float */
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch, stride_a, stride_b, stride_c;
    int64_t bytes_a, bytes_b, bytes_c;   /* whole buffers, all batches */
} ApprofGemmDesc;

/* The descriptor of GEMM kernel k in dtype dt: f32 computes in FP32 (with
 * TF32 tensor cores when allow_tf32, XLA's default on Ampere and later),
 * f16 and bf16 read and write 16-bit values and accumulate in FP32.
 * APPROF_EINVAL for a non-GEMM kernel or a non-positive dimension. */
int approf_gemm_desc(const ApprofKernel *k, ApprofDtype dt, int allow_tf32, ApprofGemmDesc *out);

/* ---- grouped GEMM (a MoE layer's experts) --------------------------------- */

/* One expert's GEMM of a grouped GEMM, in ApprofGemmDesc's column-major
 * terms (C' = A' B', no transposes), and where its operands start in the
 * kernel's three buffers (elements from the start of [0] A', [1] B', [2]
 * C; approf_kernel_buffers' dense sizes always hold them). */
typedef struct ApprofGemmGroup {
    int64_t M, N, K, lda, ldb, ldc;
    int64_t off_a, off_b, off_c;
    int64_t tokens;                /* the expert's tokens: rows (N), or K for experts_k */
} ApprofGemmGroup;

typedef struct ApprofGroupedGemm {
    ApprofDtype ab_type, c_type;
    ApprofGemmCompute compute;
    int groups;                    /* the kernel's experts */
    ApprofGemmGroup *g;            /* groups entries (approf_grouped_gemm_free) */
    int64_t elems_a, elems_b, elems_c;   /* what the groups use of each buffer */
} ApprofGroupedGemm;

/* The grouped GEMM of an expert GEMM k (k->experts > 0, graph.h): one
 * GEMM per expert over its own tokens, as Transformer Engine's
 * GroupedLinear runs Megatron-Core's TEGroupedMLP (m_splits =
 * tokens_per_expert): expert e's x_e [T_e, k] @ w_e [k, n] (forward and
 * input gradient: the tokens are rows), or x_e^T [m, T_e] @ dy_e [T_e, n]
 * (experts_k: the weight gradient, the tokens are the contraction), the
 * experts' tokens back to back and their weights one after another.
 * tokens: each expert's count, or NULL for the uniform capacity the graph
 * dispatches ((batch / experts) x m, or x k, for every expert: the graph
 * carries no routing imbalance, docs/expert-parallel.md); counts may
 * differ but not sum past the dispatch's slots (batch x m, or x k), since
 * the operands must fit the dense buffers. Dtypes and compute as
 * approf_gemm_desc. 0; APPROF_EINVAL for a kernel that is not an expert
 * GEMM, batch not a multiple of experts, a non-positive size or count, too
 * many tokens or an overflow; APPROF_ENOMEM. */
int approf_grouped_gemm_plan(const ApprofKernel *k, ApprofDtype dt, int allow_tf32,
                             const int64_t *tokens, ApprofGroupedGemm *out);
void approf_grouped_gemm_free(ApprofGroupedGemm *g);

/* ---- operands per kernel -------------------------------------------------- */

/* Memory-bound kernels read in_elems elements and write out_elems; the
 * access pattern of a gather is scattered rows. */
typedef enum { APPROF_BW_STREAM = 0, APPROF_BW_GATHER = 1 } ApprofBwPattern;

/* Device buffers one kernel needs. GEMM: [0] A' (the k x n operand), [1] B'
 * (the m x k operand), [2] C. Convolutions, any direction: [0] x (or dx),
 * [1] w (or dw), [2] y (or dy), with out_h/out_w the output size.
 * Memory-bound kinds: [0] input, [1] output, in_elems/out_elems elements of
 * the dtype: the kernel's bytes (2 * elements when 0) split as
 * elementwise, copy, gather: write min(elements, bytes/2), read the rest;
 * reduction: read min(elements, bytes), write the rest (at least one).
 * A memory-bound kernel that names its operator (ApprofKernel.kop) runs
 * that operator's kernel instead (real = 1, op its shape): [0] in, [1]
 * out, [2] aux of op_shape.h's layout. */
typedef struct ApprofKernelBuffers {
    int n;                   /* buffers used */
    int64_t bytes[3];
    int64_t out_h, out_w;    /* convolutions */
    int64_t in_elems, out_elems;
    ApprofBwPattern pattern;
    int real;                /* runs op's kernel, not the bandwidth kernel */
    ApprofOpShape op;
} ApprofKernelBuffers;

int approf_kernel_buffers(const ApprofKernel *k, ApprofDtype dt, ApprofKernelBuffers *out);
/* Rounds up to the 256-byte alignment cudaMalloc guarantees. */
int64_t approf_cuda_align(int64_t bytes);
/* Sum of a kernel's buffers, each aligned: the arena space it needs. */
int64_t approf_kernel_buffers_total(const ApprofKernelBuffers *b);

/* ---- memory reserve ------------------------------------------------------- */

/* Bytes kept back from cudaMemGetInfo's free memory when reporting
 * available_memory: 512 MiB plus 2% of the device's total memory (NCCL
 * communicator buffers, cuBLAS/cuDNN workspaces outside the tracked
 * allocator, allocator fragmentation). */
int64_t approf_cuda_memory_reserve(int64_t total);
/* free - reserve(total), never negative. */
int64_t approf_cuda_available_memory(int64_t free_bytes, int64_t total);

/* ---- probe ---------------------------------------------------------------- */

/* Message sizes from min_bytes doubling while <= max_bytes, then max_bytes
 * itself when the doubling skipped it. Writes up to cap sizes; returns the
 * number of sizes, or APPROF_EINVAL (min <= 0, max < min). */
int approf_probe_sizes(int64_t min_bytes, int64_t max_bytes, int64_t *out, int cap);
/* Group sizes 2, 4, 8, ... <= devices (the 1xG submeshes of one host).
 * Returns how many were written (at most cap). */
int approf_probe_groups(int devices, int *out, int cap);

/* The HxG groups a multi-process probe measures over `hosts` hosts of
 * `gpus` ranks each: H = 1, 2, 4, ... <= hosts, G = 1, 2, 4, ... <= gpus,
 * H x G >= 2, H-major. Writes up to cap pairs (out_h[i], out_g[i]); returns
 * how many. */
int approf_probe_mpi_groups(int hosts, int gpus, int *out_h, int *out_g, int cap);

/* Per-rank NCCL buffer sizes for one collective of `bytes` (nccl-tests'
 * "size": the all-reduce buffer, the gathered all-gather result, the
 * reduce-scatter input, the whole all-to-all send buffer, the send-recv
 * message) over n ranks with elements of esz bytes. bytes is rounded down
 * to a multiple of n * esz (all-gather, reduce-scatter, all-to-all) or esz.
 * count is the count argument NCCL takes (per peer for all-to-all). */
typedef struct ApprofCollCounts {
    int64_t bytes;       /* size actually moved, after rounding */
    size_t count;        /* NCCL count argument */
    size_t send_elems;   /* send buffer, elements */
    size_t recv_elems;   /* receive buffer, elements */
} ApprofCollCounts;

int approf_coll_counts(ApprofCollKind kind, int64_t bytes, int n, size_t esz,
                       ApprofCollCounts *out);
/* nccl-tests: algorithm bandwidth size / seconds (bytes/s); 0 for
 * seconds <= 0. */
double approf_algbw(int64_t bytes, double seconds);
/* nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n, all-gather,
 * reduce-scatter and all-to-all (n-1)/n, send-recv 1; 0 for n < 1. */
double approf_busbw_factor(ApprofCollKind kind, int n);
/* Iterations timed per message size: 20 up to 64 MiB, 10 up to 256 MiB,
 * 5 above. */
int approf_probe_iters(int64_t bytes);

#endif
