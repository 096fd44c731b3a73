/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which micro-batch sizes an approf sweep command profiles
 * (sweep_family.h): the rule that was the command line's loop header.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "sweep/sweep_family.h"
#include "sweep/sweep_mpi.h"

int approf_sweep_family(const ApprofSweepConfig *cfg, const int64_t *asked, int n_asked,
                        int micro_set, ApprofSweepFamily *out, char *err, size_t errlen)
{
    int64_t gb = 0;
    assert(cfg && out && (asked || n_asked <= 0) && n_asked <= APPROF_FAMILY_MAX);
    memset(out, 0, sizeof *out);
    out->global_batch = cfg->global_batch;
    if (n_asked > 0) {
        char why[256] = "";
        if (approf_sweep_global_batch(cfg, &gb, why, sizeof why) < 0) {
            snprintf(err, errlen, "--micro-batch-sizes: %s", why);
            return APPROF_EINVAL;
        }
        for (int q = 0; q < n_asked; q++)
            if (gb % asked[q]) {
                snprintf(err, errlen, "--micro-batch-sizes: %lld does not divide the global "
                         "batch %lld", (long long)asked[q], (long long)gb);
                return APPROF_EINVAL;
            }
        memcpy(out->sizes, asked, (size_t)n_asked * sizeof *asked);
        out->n = n_asked;
        out->global_batch = gb;
    } else if (!micro_set && cfg->shard_n <= 1 && !approf_sweep_mpi_launched() &&
               (cfg->global_batch > 0 || !cfg->model_file) &&
               approf_sweep_global_batch(cfg, &gb, err, errlen) == 0 && gb > 0) {
        /* the default: the sizes that matter for this batch, 16
         * micro-batches last */
        out->n = costdb_micro_batch_family(gb, out->sizes, APPROF_FAMILY_MAX);
        out->automatic = out->n > 1;
        if (out->n == 1)
            out->n = 0;
        out->global_batch = gb;
    } else if (cfg->global_batch > 0 || !cfg->model_file) {
        /* an impossible split is a usage error, as in apsolve */
        if (approf_sweep_global_batch(cfg, &gb, err, errlen) < 0)
            return APPROF_EINVAL;
        if (gb % cfg->micro_batches) {
            snprintf(err, errlen, "--batch %lld is not divisible by --micro-batches %d",
                     (long long)gb, cfg->micro_batches);
            return APPROF_EINVAL;
        }
    }
    if (errlen)
        err[0] = '\0';
    return 0;
}

int approf_sweep_family_count(const ApprofSweepFamily *f, int q)
{
    assert(f && q >= 0 && q < f->n && f->sizes[q] > 0);
    return (int)(f->global_batch / f->sizes[q]);
}
