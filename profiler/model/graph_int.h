/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to profiler/model: helpers shared by the zoo and model files.
 */
#ifndef APPROF_GRAPH_INT_H
#define APPROF_GRAPH_INT_H

#include "graph.h"

/* Records "op 'OP': " and the formatted message in err (when err and errlen
 * are set) and returns APPROF_EINVAL: the one wording of a refused operator,
 * for construction (graph.c) and validation (graph_check.c). */
int approf_op_fail(char *err, size_t errlen, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reorders g's tensors canonically: each leaf (input, parameter) just
 * before the outputs of the first op reading it, op outputs in op order,
 * unused leaves last. Graphs equal up to tensor order become identical
 * (same indices, same approf_graph_hash). 0 or APPROF_ENOMEM. */
int approf_graph_canonicalize(ApprofGraph *g);

/* a / b rounded up (b > 0), a for b <= 0: a dimension split b ways. */
static inline int64_t approf_ceil_div(int64_t a, int64_t b)
{
    return b > 0 ? (a + b - 1) / b : a;
}

/* kernel_op.c: per-device elements of tensor t (operand map `map` of the
 * iteration space sp) at loop sizes local, and the extent of its dim d;
 * the operator a memory-bound kernel k of op runs on a measuring backend
 * (ApprofKernel.kop and its shape), and a linear layer's bias over m rows
 * of n. */
int64_t approf_local_elems(const ApprofTensor *t, const int *map, const ApprofIterSpace *sp,
                           const int64_t *local);
int64_t approf_local_dim(const ApprofTensor *t, const int *map, const ApprofIterSpace *sp,
                         const int64_t *local, int d);
void approf_kernel_op_set(const ApprofGraph *g, const ApprofOp *op, const ApprofIterSpace *sp,
                          const int64_t *loc, int phase, ApprofKernel *k);
void approf_kernel_op_bias(ApprofKernel *k, int64_t m, int64_t n, int phase);

#endif
