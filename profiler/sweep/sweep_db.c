/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database side of a sweep: finding an unfinished sweep with the same
 * provenance for --resume, creating a new one with its submesh and config
 * lists, and writing entries in batched transactions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "sweep_db.h"

static int same_provenance(const CostdbSweep *a, const CostdbSweep *b)
{
    return a->model_id == b->model_id && a->hardware_id == b->hardware_id &&
           a->cluster_hosts == b->cluster_hosts && a->cluster_gpus == b->cluster_gpus &&
           a->global_batch == b->global_batch && a->micro_batches == b->micro_batches &&
           a->num_layers == b->num_layers && !strcmp(a->layer_option, b->layer_option) &&
           !strcmp(a->submesh_space, b->submesh_space) &&
           !strcmp(a->logical_space, b->logical_space) &&
           !strcmp(a->profile_mode, b->profile_mode) && !strcmp(a->dtype, b->dtype) &&
           !strcmp(a->backend, b->backend) && !strcmp(a->shard, b->shard) &&
           !strcmp(a->options, b->options);
}

int approf_sweep_find_resumable(Costdb *db, const CostdbSweep *want, int64_t *id,
                                int *complete)
{
    CostdbSweep *all = NULL;
    size_t n = 0;
    int rc = costdb_sweep_list(db, &all, &n);
    *id = 0;
    *complete = 0;
    if (rc < 0)
        return rc;
    for (size_t i = n; i-- > 0;) {
        CostdbSweepStatus st = all[i].status;
        if ((st == COSTDB_SWEEP_RUNNING || st == COSTDB_SWEEP_INTERRUPTED ||
             st == COSTDB_SWEEP_COMPLETE) && same_provenance(&all[i], want)) {
            *id = all[i].id;
            *complete = st == COSTDB_SWEEP_COMPLETE;
            break;
        }
    }
    free(all);
    return 0;
}

int approf_sweep_writer_init(ApprofSweepWriter *w, Costdb *db, int64_t sweep_id, int commit_every)
{
    memset(w, 0, sizeof *w);
    w->db = db;
    w->sweep_id = sweep_id;
    w->commit_every = commit_every > 0 ? commit_every : 64;
    w->max_seconds = 0.05;
    return 0;
}

/* Opens the batch transaction if none is open. */
static int writer_begin(ApprofSweepWriter *w)
{
    int rc;
    if (w->in_txn)
        return 0;
    rc = costdb_begin(w->db);
    if (rc < 0)
        return rc;
    w->in_txn = 1;
    w->pending = 0;
    w->opened_at = costdb_monotonic_seconds();
    return 0;
}

int approf_sweep_writer_put(ApprofSweepWriter *w, const CostdbEntry *entries, size_t n,
                            const CostdbPlacement *placements, size_t n_placements)
{
    int rc = writer_begin(w);
    if (rc < 0)
        return rc;
    rc = costdb_entries_put(w->db, w->sweep_id, entries, n, 0);
    if (rc == 0 && n_placements)
        rc = costdb_placements_put(w->db, w->sweep_id, placements, n_placements);
    if (rc < 0) {
        costdb_rollback(w->db);
        w->in_txn = 0;
        w->pending = 0;
        return rc;
    }
    w->pending++;
    if (w->pending >= w->commit_every || costdb_monotonic_seconds() - w->opened_at >= w->max_seconds)
        return approf_sweep_writer_flush(w);
    return 0;
}

int approf_sweep_writer_flush(ApprofSweepWriter *w)
{
    int rc;
    if (!w->in_txn)
        return 0;
    rc = costdb_commit(w->db);
    w->in_txn = 0;
    w->pending = 0;
    if (rc < 0)
        costdb_rollback(w->db);
    return rc;
}
