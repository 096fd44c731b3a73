/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fused attention of a context-parallel stage, as Transformer Engine's
 * ring runs it (docs/context-parallel.md, "The ring's attention kernels").
 */
#ifndef APSOLVE_CP_ATTENTION_H
#define APSOLVE_CP_ATTENTION_H

#include <stdint.h>

#include "collective.h"

/* A fused attention's efficiency over keys keys on f's card: the row's
 * attention_efficiency_2k .. _32k interpolated in log2 of the length
 * (approf_attention_efficiency, the profiler's one rule), else its
 * attention_efficiency; 0 when neither is given. */
double apsolve_cp_attention_eff(const CostdbFabric *f, int64_t keys);

/* What a cp stage's ring attention takes beyond 1/cp of its entry's, per
 * micro-batch and GPU, all its layers: the entry priced each layer's
 * causal attention over seq keys at the efficiency of seq keys; the ring
 * of ring_n GPUs (cp for p2p, cp / a for a2a+p2p; 1: no ring) runs ring_n
 * kernels a layer whose slowest rank's all take the efficiency of seq /
 * ring_n keys. The flops are the profiler's fused attention's
 * (profiler/model/opsem.c: forward two GEMMs of 2 x sq x ceil(skv/2) x d
 * per head, backward five), for samples whole sequences a GPU of the
 * entry and q_width the query projection's width a GPU (heads x head
 * size / tp), divided by cp. *fwd and *bwd in seconds (0 where the card
 * gives no figure by key length, or there is no ring); rerun: the
 * backward reruns the forward (full or selective recomputation). */
void apsolve_cp_ring_attention(const CostdbFabric *f, int64_t seq, int ring_n, int cp,
                               double samples, double q_width, int layers, int rerun,
                               double *fwd, double *bwd);

/* The same for Transformer Engine's all-gather layout (cp_comm
 * all_gather, AttnFuncWithCPAndKVAllGather): each rank's two query chunks
 * of seq / 2cp tokens, chunk j against the (j + 1) seq / 2cp keys up to
 * it, priced at the efficiency of (2j + 1) seq / 2cp keys (the per-tile
 * work of a causal kernel that long), the slowest rank's mix; *fwd and
 * *bwd may be negative (kernels faster than the entry's). *keys_min and
 * *keys_max (may be NULL): the shortest and longest lengths priced; 0
 * where nothing is priced. */
void apsolve_cp_allgather_attention(const CostdbFabric *f, int64_t seq, int cp, double samples,
                                    double q_width, int layers, int rerun, double *fwd,
                                    double *bwd, int64_t *keys_min, int64_t *keys_max);

/* Seconds one of the ring's forward attention kernels (a step) takes on
 * a GPU, one layer: the stage's forward attention, 2 x 2 x samples x
 * q_width x seq x ceil(seq / 2) / cp flops, in ring_n kernels of equal
 * work at the card's efficiency for seq / ring_n keys and its 16-bit
 * peak (a backward kernel is 5/2 of it); 0 where the card gives no
 * attention figure, or there is no ring. */
double apsolve_cp_ring_step_seconds(const CostdbFabric *f, int64_t seq, int ring_n, int cp,
                                    double samples, double q_width);

#endif
