/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a plan's stages sit on the cluster: the one placement the solver's
 * full estimate prices (its stage-to-stage sends, its gradient
 * all-reduces) and apreport lists, so both say the same devices
 * (docs/hardware.md "Placement across a domain boundary", docs/reports.md
 * "Devices of each stage").
 */
#ifndef COSTDB_STAGE_LAYOUT_H
#define COSTDB_STAGE_LAYOUT_H

#include <stddef.h>

#include "collective.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One stage's place on an N x M cluster (devices numbered host-major). */
typedef struct CostdbStageSpot {
    int first_host, first_gpu;        /* the block hosts x gpus from here; -1: no place */
    int domains;                      /* NCCL nodes (scale-up domains of several hosts,
                                       * else hosts) the block's hosts cover */
    int priced_domains;               /* those its profile priced it on: placed from a
                                       * domain's first host (costdb_collective_domains) */
} CostdbStageSpot;

/* Places K stages of hosts[k] x gpus[k] devices (a (1, m) submesh inside
 * one host, m <= M; or (n, M), whole hosts) on N hosts of M GPUs with the
 * scale-up domain of f (NULL, or a domain of one host: hosts). A (1, m)
 * stage takes the first m-aligned free run inside one host, an (n, M)
 * stage the first n free consecutive hosts, in stage order (Alpa's
 * contiguous submeshes). With a domain of several hosts a whole-host stage
 * must also sit where its profile priced it: inside one domain when it
 * fits one, from a domain's first host when it is larger; and the search
 * for a stage starts at the domain of the stage before it in the pipeline
 * (when placed), so that neighbours share a domain where they can. Tried
 * in turn:
 * that rule in stage order, the same in Alpa's order (largest first,
 * get_sliced_virtual_submeshes), then without the domain rule in stage
 * order and in Alpa's order; the first that places every stage wins. Its
 * spots in out[K] (a stage that has none: -1, domains 0). Returns the
 * number of stages that straddle (domains > priced_domains), or -1 when
 * no order places every stage. */
int costdb_stage_layout(const CostdbFabric *f, int N, int M, const int *hosts, const int *gpus,
                        size_t K, CostdbStageSpot *out);

/* The NCCL nodes covered by the hosts first_host .. first_host + n - 1 with
 * f's scale-up domain (hosts when the host is the domain). */
int costdb_hosts_domains(const CostdbFabric *f, int first_host, int n);

#ifdef __cplusplus
}
#endif

#endif
