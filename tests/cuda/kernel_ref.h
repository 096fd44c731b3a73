/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU side of test_kernels.c: op_shape.h restated array by array (so
 * the test checks approf_op_layout against the documentation rather than
 * against itself) and a double-precision reference of every operator's
 * forward and backward, written from op_shape.h's text alone.
 */
#ifndef APPROF_TEST_KERNEL_REF_H
#define APPROF_TEST_KERNEL_REF_H

#include <stdint.h>

#include "cuda/op_shape.h"

/* Element type of one array: the shape's dtype ("es"), float or int32. */
enum { REF_ES, REF_F32, REF_I32 };

/* What the test does with one array. */
enum {
    ROLE_IN,      /* input: pseudo-random values in [-1, 1) */
    ROLE_IDX,     /* i32 written by approf_cuda_op_init, each in [0, lim) */
    ROLE_STAT,    /* f32 statistic a backward reads: the test writes the true value */
    ROLE_OUT,     /* written by the kernel; bit-identical across two runs */
    ROLE_SCATTER, /* zeroed then scatter-added with atomics: order-dependent rounding */
    ROLE_SUM,     /* written; a sum over rows or a batch that a kernel may build from
                   * partial sums added atomically (column sums, batch-norm
                   * statistics): as ROLE_OUT, but rounding may vary between runs */
    ROLE_KEEP,    /* documented as not written: must keep what it held */
    ROLE_INOUT,   /* read and written in place (the optimizer step's state): an input
                   * of the kernel, checked as ROLE_OUT against the reference */
    ROLE_FREE     /* not documented either way (RMS norm's mean): not checked */
};

typedef struct RefArray {
    const char *name;
    int type, role;
    int64_t n;   /* elements */
    int64_t lim; /* ROLE_IDX: ids are in [0, lim) */
} RefArray;

typedef struct RefOp {
    int n[3]; /* arrays in in, out, aux */
    RefArray a[3][APPROF_OP_MAX_ARRAYS];
} RefOp;

/* One double per element of each array: v[buffer][array][element]. */
typedef double *RefVals[3][APPROF_OP_MAX_ARRAYS];

/* splitmix64: the test's deterministic pseudo-random numbers. */
uint64_t ref_rand(uint64_t *state);

/* "LAYER_NORM", ...; "?" for an unknown operator. */
const char *ref_op_name(int op);

/* The arrays op_shape.h documents for s; -1 for an operator it does not know. */
int ref_describe(const ApprofOpShape *s, RefOp *d);

/* Makes the random inputs v realistic where the operator needs it (ReLU's and
 * dropout's saved outputs, max pooling's distinct values) and writes the
 * statistics a backward reads (ROLE_STAT) from the inputs. seed varies the
 * max-pooling permutation. */
void ref_prepare(const ApprofOpShape *s, const RefOp *d, RefVals v, uint64_t seed);

/* The documented result of every ROLE_OUT / ROLE_SCATTER / ROLE_SUM array
 * into r (allocated by the caller, same sizes as v) from the inputs in v. 0,
 * or 1 when the result is random (dropout forward: the caller checks its
 * properties). */
int ref_compute(const ApprofOpShape *s, RefVals v, RefVals r);

/* A MoE layer's expert GEMM as graph.h describes it (batch, m, n, k,
 * experts, experts_k), from the semantics alone: expert e's operands back
 * to back in the three buffers as approf_grouped_gemm_plan documents them
 * (host.h), uniform tokens T = batch / experts x m (or x k). Forward and
 * input gradient: c[e] (T x n) = b[e] (T x k) @ a[e] (k x n); experts_k:
 * c[e] (m x n) = b[e] (m x T) @ a[e] (T x n). Row-major, double. */
void ref_expert_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t experts,
                     int experts_k, const double *a, const double *b, double *c);

#endif
