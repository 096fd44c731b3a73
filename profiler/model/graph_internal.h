/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to profiler/model: helpers shared by the zoo and model files.
 */
#ifndef APPROF_GRAPH_INTERNAL_H
#define APPROF_GRAPH_INTERNAL_H

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

#endif
