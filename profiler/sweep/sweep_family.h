/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The micro-batch family of an approf sweep command (docs/solver.md,
 * "Micro-batch sizes"): the sizes it profiles, one sweep each. apsolve
 * finds the family's sweeps again by "the same setup but for the batch"
 * (costdb_setup_diff with COSTDB_SETUP_IGNORE_FAMILY); this decides which
 * sizes approf makes. The command line loops over them.
 */
#ifndef APPROF_SWEEP_FAMILY_H
#define APPROF_SWEEP_FAMILY_H

#include <stdint.h>

#include "sweep/sweep.h"

#define APPROF_FAMILY_MAX 16

typedef struct ApprofSweepFamily {
    /* The global batch every sweep of the family uses: what
     * cfg->global_batch becomes (it stays cfg's, 0 for a model file's own,
     * with one sweep at the given count). */
    int64_t global_batch;
    int64_t sizes[APPROF_FAMILY_MAX]; /* micro-batch sizes, in the order swept */
    int n;                            /* 0: one sweep at cfg->micro_batches */
    int automatic;                    /* the default family, not --micro-batch-sizes */
} ApprofSweepFamily;

/* The family of cfg: the asked sizes (n_asked > 0: --micro-batch-sizes,
 * each dividing the global batch), else without micro_set (--micro-batches)
 * on one process (no --shard, no mpirun) the default family of the global
 * batch (costdb_micro_batch_family: 1, 2, 4, 8, 16 micro-batches that
 * divide it; one size is one sweep at cfg->micro_batches), else one sweep
 * whose count must divide the batch. 0, or APPROF_EINVAL with a usage
 * message in err. */
int approf_sweep_family(const ApprofSweepConfig *cfg, const int64_t *asked, int n_asked,
                        int micro_set, ApprofSweepFamily *out, char *err, size_t errlen);
/* The micro-batch count of size q of the family. */
int approf_sweep_family_count(const ApprofSweepFamily *f, int q);

#endif
