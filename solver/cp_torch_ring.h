/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A context-parallel stage's exchange and merges as PyTorch's ring
 * attention runs them (torchtitan's context parallelism): the hardware
 * row's cp_ring_torch (docs/context-parallel.md, "PyTorch's ring").
 */
#ifndef APSOLVE_CP_TORCH_RING_H
#define APSOLVE_CP_TORCH_RING_H

#include "collective.h"

/* One layer's cp exchange and merges on one GPU, added to *fwd_s / *bwd_s
 * (exposed seconds of messages), *fwd_b / *bwd_b (bytes sent) and
 * *merge_fwd / *merge_bwd (seconds of memory passes), for a ring of n GPUs
 * stride devices apart on hosts of M GPUs; q_bytes is the layer's local
 * query (tokens x the query width / tp x dsize bytes), which K and V each
 * match once repeated to the query heads. all_gather: K and V exchanged
 * by one all-gather (the rotate method "allgather"), else passed round the
 * ring ("alltoall"). step_fwd: seconds of one of the ring's forward
 * attention kernels (apsolve_cp_ring_step_seconds; the backward's 5/2 of
 * it), under which the messages of the step hide; 0: none hide. Nothing
 * for n <= 1. */
void apsolve_cp_torch_ring(const CostdbFabric *f, int all_gather, double q_bytes, double dsize,
                           int n, int stride, int M, double step_fwd, double *fwd_s,
                           double *bwd_s, double *fwd_b, double *bwd_b, double *merge_fwd,
                           double *merge_bwd);

#endif
