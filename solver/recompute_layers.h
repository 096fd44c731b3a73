/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partial full recomputation: a stage whose first k layers (of each model
 * chunk) are fully recomputed and whose other layers keep their
 * activations, as Megatron-LM core_v0.19.0 runs `--recompute-granularity
 * full --recompute-method block --recompute-num-layers k`
 * (megatron/core/recompute.py `checkpointed_forward`, the 'block' branch:
 * layer_idx < recompute_num_layers of the TransformerBlock, which holds one
 * virtual pipeline chunk's layers). The database stores profiles per layer
 * range and recomputation variant, so such a stage is priced as the
 * composition of stored entries of the same submesh, logical mesh, batch
 * option, memory level and ZeRO stage: per chunk, the range of its first
 * k layers under `full` and the rest under `none`. What is exact and what
 * is not: docs/variants.md, "Partial recomputation".
 */
#ifndef APSOLVE_RECOMPUTE_LAYERS_H
#define APSOLVE_RECOMPUTE_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* recompute_layers=auto in a --parallel text (ApsolveParallel): the
 * cheapest k that fits is searched. */
#define APSOLVE_RECOMPUTE_LAYERS_AUTO (-1)

/* The figures of one composed stage, as priced. */
typedef struct ApsolveRecomputeLayers {
    int k;                            /* layers fully recomputed at the start of each chunk */
    int chunks, chunk_layers;         /* chunks of the stage, layers of each */
    double fwd, bwd, wgrad, apply;    /* seconds (wgrad < 0: unknown) */
    ApsolveMemory memory;             /* peak, intermediate, initial, avail */
} ApsolveRecomputeLayers;

/* Prices entry (start..end, submesh s, config c) of p, a config whose
 * variant recomputes `full`, with the first k layers of each of its
 * `chunks` equal chunks fully recomputed (0 < k < the chunk's layers),
 * into *out. 0; -1 with why when a range it is made of has no entry with
 * a time (stored or out of memory with its figures kept), the chunks do
 * not split the stage, or p has no memory figures. */
int apsolve_recompute_layers_entry(const ApsolveProblem *p, int start, int end, int s, int c,
                                   int k, int chunks, ApsolveRecomputeLayers *out, char *why,
                                   size_t len);

/* A copy of p in which, for each of the n specs' layer ranges, every
 * entry of a `full` config is the composed stage with k layers of each of
 * `chunks` chunks recomputed (apsolve_recompute_layers_entry; +inf where
 * it cannot be composed, which that function says why); a range whose
 * chunks hold k layers or fewer keeps its `full` entry (every layer
 * recomputed). APSOLVE_OK; APSOLVE_ENOMEM; APSOLVE_EINVAL when p has no
 * memory figures. */
int apsolve_recompute_layers_problem(const ApsolveProblem *p, const ApsolveStageSpec *specs,
                                     size_t n, int k, int chunks, ApsolveProblem **out);

/* The same in place: q, a clone of p (apsolve_problem_clone), gets those
 * entries, each written whole from p's, so one clone serves every k and
 * chunk count of the same specs in turn (apsolve --framework megatron's
 * search). APSOLVE_OK; APSOLVE_EINVAL when p has no memory figures. */
int apsolve_recompute_layers_compose(const ApsolveProblem *p, ApsolveProblem *q,
                                     const ApsolveStageSpec *specs, size_t n, int k, int chunks);

/* The same for every layer range and submesh of q (the auto search's
 * problem of one k: session_autorl.c). */
int apsolve_recompute_layers_compose_all(const ApsolveProblem *p, ApsolveProblem *q, int k,
                                         int chunks);
/* compose_all in place (q = p) on up to threads threads: its submeshes in
 * two parts; the same entries, and the same slot tables byte for byte. */
int apsolve_recompute_layers_compose_all_threads(ApsolveProblem *p, int k, int chunks,
                                                 int threads);

/* A floor of the cost (fwd + bwd) of every entry compose_all writes at
 * each k, from the stored entries alone: floor[k] for k = 1 .. L / chunks
 * - 1 (the caller's array of L / chunks). Such an entry of chunks of m > k
 * layers sums, per chunk, a `full` range of k layers and a `none` range of
 * m - k (entry_at), so its cost is at least chunks x (the least fwd + bwd
 * of any `full` range of k layers of its config + the least of any `none`
 * range of m - k of its sibling), over every m and config; an entry with a
 * range of no time is +inf. +inf: no entry can be priced; 0 where some
 * such figure is negative or NaN (no floor). The sums are of the same
 * nonnegative terms in another order, so an entry's cost is below its
 * floor by rounding alone (a few ulps, far inside apsolve_chunk_skip's
 * margin). APSOLVE_OK; APSOLVE_ENOMEM; APSOLVE_EINVAL without memory
 * figures or with fewer than 2 layers a chunk. */
int apsolve_recompute_layers_floors(const ApsolveProblem *p, int chunks, double *floor);
/* The same floors on up to threads threads (the caller's among them): the
 * `full` configs in two parts, each part's floors the least of its terms,
 * the least of the two taken; every floor[k] as one thread makes it. */
int apsolve_recompute_layers_floors_threads(const ApsolveProblem *p, int chunks, double *floor,
                                            int threads);

/* compose_all in p itself (q = p), without a copy of the whole table: it
 * reads, of every range, only its own `full` entry (before writing it),
 * `full` entries of k layers, which a k never changes (a chunk of k layers
 * or fewer keeps its entry), and `none` and unfit entries, which it never
 * writes; so each k composed on the stored entries is the clone's, cell
 * for cell. In place it writes only the ranges whose chunks hold more than
 * k layers (a range of every layer recomputed already holds its stored
 * `full` entry). What it can write for `chunks` chunks, every `full` entry
 * of a valid config on ranges i <= j of a multiple of `chunks` layers, at
 * least 2 a chunk, is saved before (save), and what it wrote at k is put
 * back bit for bit after each k (put_back; session_autorl.c). save: 0,
 * APSOLVE_ENOMEM, or APSOLVE_EINVAL without memory figures. */
typedef struct ApsolveRecomputeSaved ApsolveRecomputeSaved;
int apsolve_recompute_layers_save(const ApsolveProblem *p, int chunks,
                                  ApsolveRecomputeSaved **out);
void apsolve_recompute_layers_put_back(ApsolveProblem *p, const ApsolveRecomputeSaved *v, int k);
/* A save of p composed at k puts that composition back (put_back at k:
 * only the places compose_all wrote at k are read; session_autorl.c keeps
 * the winning K so rather than composing it again after the other K). */
void apsolve_recompute_layers_saved_free(ApsolveRecomputeSaved **v);

#ifdef __cplusplus
}
#endif

#endif
