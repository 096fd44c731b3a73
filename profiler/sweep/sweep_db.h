/* SPDX-License-Identifier: Apache-2.0 */
/* Database side of a sweep: resume matching and batched entry writes. */
#ifndef APPROF_SWEEP_DB_H
#define APPROF_SWEEP_DB_H

#include "costdb.h"

typedef struct ApprofSweepWriter {
    Costdb *db;
    int64_t sweep_id;
    int commit_every;      /* tuples per transaction */
    int pending;           /* tuples in the open transaction */
    int in_txn;
    double opened_at;      /* monotonic seconds when the batch began */
    double max_seconds;    /* commit a batch once it is this old (50 ms) */
    CostdbEntry *held;     /* the batch's entries not yet written (sweep_db.c) */
    size_t n_held;
} ApprofSweepWriter;

/* The newest running, interrupted or complete sweep whose provenance equals
 * want's (everything but id, name, times, status), or *id = 0; *complete
 * says whether it is already complete. */
int approf_sweep_find_resumable(Costdb *db, const CostdbSweep *want, int64_t *id,
                                int *complete);

int approf_sweep_writer_init(ApprofSweepWriter *w, Costdb *db, int64_t sweep_id, int commit_every);
/* Adds the entries (and placements) of one tuple to the open batch; commits
 * every commit_every tuples or 50 ms, so a kill loses little work. On error the batch is rolled back.
 * The entries are held and written in the order given, together, before the
 * batch commits (or once WRITER_HELD are held), so that the blocks they share
 * are written once; the batch commits what it did. */
int approf_sweep_writer_put(ApprofSweepWriter *w, const CostdbEntry *entries, size_t n,
                            const CostdbPlacement *placements, size_t n_placements);
/* Writes the held entries and commits the open batch, if any (on error the
 * batch is rolled back); keeps the writer's buffer for the next batch. */
int approf_sweep_writer_commit(ApprofSweepWriter *w);
/* approf_sweep_writer_commit, then approf_sweep_writer_release. */
int approf_sweep_writer_flush(ApprofSweepWriter *w);
/* Frees what the writer holds (after its last batch; safe on a writer
 * zeroed or never used, and twice). */
void approf_sweep_writer_release(ApprofSweepWriter *w);


#endif
