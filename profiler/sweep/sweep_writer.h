/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's writer thread (issue 38): rank 0's entry and placement rows
 * go through a bounded queue to one thread that owns the database
 * connection while the tuples run and writes them with the batch writer of
 * sweep_db.h (the same statements, the same transactions: commit every
 * commit_every tuples or 50 ms). The main thread (and through it the
 * profiling workers) waits on SQLite only when the queue is full. The
 * queue holds at most WRITER_SLOTS tuples and WRITER_BYTES of placement
 * rows (one tuple more when a single one is larger), so memory stays
 * bounded however far the profiling runs ahead of the disk.
 */
#ifndef APPROF_SWEEP_WRITER_H
#define APPROF_SWEEP_WRITER_H

#include <stddef.h>

#include "costdb.h"
#include "sweep_db.h"

typedef struct ApprofWriterQueue ApprofWriterQueue;
struct ApprofSlotPlacement;

/* Writes tuple k through w: its n entries (e) and its n_pl > 0 compact
 * placements (in), whose rows key names (costdb_placements_put_keyed; its
 * base, bytes and len set, the stage for the callee to fill in): 0, or a
 * negative code. Called on the writer thread, which expands the rows only
 * when the key is not enough (approf_sweep_expand_placements, which reads
 * only what no thread writes while the tuples run). */
typedef int (*ApprofWriterPlace)(void *ctx, ApprofSweepWriter *w, size_t k, const CostdbEntry *e,
                                 size_t n, const struct ApprofSlotPlacement *in, int n_pl,
                                 CostdbPlacementKey *key);

/* Starts the thread on w: from here until approf_writer_stop the thread
 * alone uses w and w->db. place (with ctx) writes the tuples queued with
 * approf_writer_put_compact that carry placements. 0, or APPROF_ENOMEM (no
 * thread, no lock) with *out NULL. */
int approf_writer_start(ApprofWriterQueue **out, ApprofSweepWriter *w, ApprofWriterPlace place,
                        void *ctx);

/* Queues tuple k: n entries (n <= 2) and n_pl compact placements, copied;
 * the writer thread makes their costdb rows. specs_kept 0: the spec texts
 * are copied too (the caller's may be freed once this returns); 1: the
 * rows keep pointing at the caller's texts, which must stay unchanged
 * until approf_writer_stop has returned (the single-worker sweep's spec
 * pool, freed after it). Waits while the queue is full. 0, APPROF_ENOMEM,
 * or APPROF_EDB once the writer has failed. */
int approf_writer_put_compact(ApprofWriterQueue *q, size_t k, const CostdbEntry *e, size_t n,
                              const struct ApprofSlotPlacement *pl, size_t n_pl, int specs_kept);

/* Room for one tuple with n_pl placement rows: waits while the queue is
 * full (back-pressure). *rows: a buffer of at least n_pl rows (when n_pl
 * > 0) that the caller fills before approf_writer_submit; only one tuple is
 * reserved at a time. 0, APPROF_ENOMEM, or APPROF_EDB once the writer
 * has failed (nothing more is written; costdb_errmsg of the database says
 * why once the writer is stopped). */
int approf_writer_reserve(ApprofWriterQueue *q, size_t n_pl, CostdbPlacement **rows);

/* Queues the reserved tuple: n entries (n <= 2, copied) and the n_pl rows
 * written into the reserved buffer. */
void approf_writer_submit(ApprofWriterQueue *q, const CostdbEntry *e, size_t n, size_t n_pl);

/* Writes what is queued (nothing more after a failure), joins the thread
 * and frees the queue; the open batch is left open, for the caller's
 * approf_sweep_writer_flush. *busy (may be NULL) receives the seconds the
 * thread spent writing. Returns 0 or the writer's first failure
 * (APPROF_EDB: the costdb message of w->db; APPROF_ENOMEM). q NULL: 0. */
int approf_writer_stop(ApprofWriterQueue *q, double *busy);

#endif
