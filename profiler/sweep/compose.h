/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profile mode "individual": the entries of multi-layer ranges composed from
 * single-layer entries. Shared by the sweep (after its tuple loop) and by
 * approf merge (after combining the shards of an individual-mode sweep), so
 * both produce the same rows.
 */
#ifndef APPROF_COMPOSE_H
#define APPROF_COMPOSE_H

#include <stddef.h>

#include "costdb.h"
#include "enumerate.h"
#include "graph.h" /* APPROF_E* */

/* Composes, from the single-layer entries among have[0..n_have), one entry
 * per (i < j, submesh s, config c < n_configs[s], phase) — only (0, L-1) on a
 * submesh with cluster_devices devices — that have does not already hold and
 * whose layers i..j all have an entry. Times and sizes add up, temp buffers,
 * their activation-sized parts (schema 17; 0 when no layer has one) and
 * spread take the largest, available memory and repeats the smallest;
 * the first failing layer's status and reason carry over (cost +inf).
 * Output order: submesh descending, then i, j, c, phase. *out is malloc'd
 * (NULL when *n_out is 0). 0, APPROF_ENOMEM, or APPROF_EINVAL for sizes out
 * of range (profiler code: approf's codes, never costdb's). */
int approf_compose_individual(const CostdbEntry *have, size_t n_have, int n_layers,
                              const ApprofMeshShape *submeshes, int n_submeshes,
                              const int *n_configs, int cluster_devices,
                              CostdbEntry **out, size_t *n_out);

#endif
