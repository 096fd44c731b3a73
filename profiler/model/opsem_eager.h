/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to profiler/model: the forward kernels of an operator marked
 * eager (ApprofOpAttrs.eager), as torchtitan's eager PyTorch modules run
 * them (opsem_eager.c).
 */
#ifndef APPROF_OPSEM_EAGER_H
#define APPROF_OPSEM_EAGER_H

#include "graph.h"

/* Adds to ks[0..nk) (the op's forward kernels from opsem.c, the fused one
 * first) the eager kernels of op opi at local loop sizes loc, adjusting the
 * fused kernel's bytes where the eager form reads more; returns the new
 * count, nk unchanged when the op is not eager, APPROF_EINVAL past max. */
int approf_eager_kernels(const ApprofGraph *g, int opi, const ApprofIterSpace *sp,
                         const int64_t *loc, ApprofKernel *ks, int nk, int max);

#endif
