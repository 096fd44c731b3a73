/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What Alpa's layer construction reads of a graph (layers.c): an operator's
 * cost (the FLOPs of its GEMM/convolution kernels: matmul, batch_matmul and
 * conv2d are the "non-trivial" ops, every other op costs 0) and, per tensor,
 * its readers and bytes. The one owner of both for the layering and for the
 * reference layering of its test (tests/model/test_layers.c).
 */
#ifndef APPROF_LAYER_USES_H
#define APPROF_LAYER_USES_H

#include "graph.h"

/* Consumers of each tensor as CSR, in ascending op order. */
typedef struct {
    int n;           /* ops */
    int *cons_start; /* [n_tensors + 1]: readers of tensor t at cons[cons_start[t] ..] */
    int *cons;       /* an op reading a tensor twice is listed twice */
    double *tbytes;  /* [n_tensors]: bytes of each tensor */
} ApprofLayerUses;

/* 0, or APPROF_ENOMEM with *u empty. */
int approf_layer_uses_build(const ApprofGraph *g, ApprofLayerUses *u);
void approf_layer_uses_free(ApprofLayerUses *u);

/* The layering cost of op `op`: its GEMM/convolution FLOPs, else 0. */
double approf_layer_op_cost(const ApprofGraph *g, int op);

#endif
