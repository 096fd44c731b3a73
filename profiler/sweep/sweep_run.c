/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep driver (sweep.h): prepare, open the database, then cost every
 * tuple of this shard and write each entry as soon as it exists, in small
 * batched transactions; on --resume the tuples whose two entries exist are
 * skipped. Under mpirun the ranks share the tuples and rank 0 alone writes
 * (sweep_mpi.h): the tuple loop hands results to a sink that either stores
 * them or sends them to rank 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "clock.h"
#include "sweep_dominated.h"
#include "sweep_int.h"
#include "sweep_mpi.h"
#include "sweep_workers.h"
#include "sweep_writer.h"

/* Where the tuple loop's results go: rank 0 (or the only process) stores
 * them, the other ranks send them to rank 0 (sweep_mpi.h). */
typedef struct {
    Sweep *sw;
    const ApprofSweepCallbacks *cb;
    ApprofSweepSummary *sum;
    ApprofSweepWriter writer;
    ApprofWriterQueue *wq;        /* rank 0, while the tuples run: the writer thread,
                                   * which owns writer and the database meanwhile */
    unsigned char *have;
    unsigned char *described;     /* the writer thread's: tensors whose texts it handed
                                   * over (approf_sweep_expand_placements); NULL: none kept */
    CostdbPlacement *rows;        /* the writer thread's: the rows it expands (sink_rows) */
    size_t rows_cap;
    size_t done;
    double work_done, work_total;  /* tuple_work of the tuples done, of all of the shard */
    ApprofSweepMpi *mpi;
    int rank, size;
} Sink;

/* What tuple k weighs in the progress: the operators of its layer range. */
static double tuple_work(const Sweep *sw, size_t k)
{
    const ApprofTuple *t = &sw->tuples[k];
    const ApprofLayering *l = &sw->layering;
    if (t->start < 0 || t->end >= l->n_layers || t->start > t->end)
        return 1.0;
    return 1.0 + (double)(l->op_end[t->end] - l->op_begin[t->start]);
}

/* Rank 0: hands one tuple's entries (the phases not yet present) and, for
 * a tuple not half-written before, its placements to the writer thread
 * (sweep_writer.h): costdb rows (another rank's) or this process's compact
 * ones, of which the writer thread makes the costdb rows. */
static int sink_queue(Sink *s, size_t k, const CostdbEntry e[2], const CostdbPlacement *pl,
                      const ApprofSlotPlacement *compact, size_t n_pl, int specs_kept)
{
    const ApprofTuple *t;
    const CostdbEntry *todo = e;
    CostdbPlacement *rows = NULL;
    size_t nt = 0, need;
    double tw = costdb_monotonic_seconds();
    int rc, have;
    if (k >= s->sw->n_tuples)
        return APPROF_EIO;
    t = &s->sw->tuples[k];
    if (e[0].start_layer != t->start || e[0].end_layer != t->end ||
        e[0].submesh_index != t->submesh || e[0].config_index != t->config)
        return APPROF_EIO;
    have = s->have[k];
    /* the phases not yet present, less the skipped slots (counted): of two
     * phases, those kept are consecutive in e, so todo points at the first
     * of them (no copy: an entry is most of a kilobyte, and a full space
     * hands over a million tuples) */
    for (int ph = 0; ph < 2; ph++)
        if (!(have & (1 << ph)) && approf_sweep_entry_kept(s->sum, &e[ph])) {
            if (!nt)
                todo = &e[ph];
            nt++;
        }
    need = have ? 0 : n_pl;
    if (!nt && !need) {
        rc = 0;
    } else if (compact) {
        rc = approf_writer_put_compact(s->wq, k, todo, nt, compact, need, specs_kept);
    } else if ((rc = approf_writer_reserve(s->wq, need, &rows)) == 0) {
        if (need)
            memcpy(rows, pl, need * sizeof *rows);
        approf_writer_submit(s->wq, todo, nt, need);
    }
    s->sum->t_handover += costdb_monotonic_seconds() - tw;
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < nt; i++) {
        approf_sweep_entry_counted(s->sum, &todo[i]);
        if (s->cb && s->cb->entry)
            s->cb->entry(s->cb->ctx, &todo[i]);
    }
    s->done++;
    s->work_done += tuple_work(s->sw, k);
    if (s->cb && s->cb->progress)
        s->cb->progress(s->cb->ctx, s->done, s->sum->tuples, s->work_done, s->work_total);
    return 0;
}

/* One tuple's compact rows, expanded by the writer thread only when
 * costdb_placements_put_keyed needs them (sink_rows). */
typedef struct SinkRows {
    Sink *s;
    size_t k;
    const ApprofSlotPlacement *in;
    int n;
    int rc;                       /* the expansion's failure, else 0 */
} SinkRows;

/* The writer thread's expansion of tuple k's compact rows: it alone hands
 * rows to costdb while the tuples run, in the order it expands them, and
 * stops at its first failure, so a tensor it described once is held by
 * the sweep for every later row. */
static int sink_rows(void *ctx, const CostdbPlacement **rows, size_t *n)
{
    SinkRows *r = ctx;
    Sink *s = r->s;
    int m = approf_sweep_expand_placements(s->sw, &s->sw->tuples[r->k], r->in, r->n, s->described,
                                           &s->rows, &s->rows_cap);
    if (m < 0) {
        r->rc = m;
        return COSTDB_ENOMEM;
    }
    *rows = s->rows;
    *n = (size_t)m;
    return 0;
}

/* The writer thread's write of tuple k with its compact rows, by key
 * (sweep_writer.h): a list stored before is not expanded again. */
static int sink_place(void *ctx, ApprofSweepWriter *w, size_t k, const CostdbEntry *e, size_t n,
                      const ApprofSlotPlacement *in, int n_pl, CostdbPlacementKey *key)
{
    Sink *s = ctx;
    const ApprofTuple *t = &s->sw->tuples[k];
    SinkRows r = {s, k, in, n_pl, 0};
    key->start_layer = t->start;
    key->end_layer = t->end;
    key->submesh_index = t->submesh;
    key->config_index = t->config;
    if (approf_sweep_writer_put_keyed(w, e, n, key, sink_rows, &r) < 0)
        return r.rc < 0 ? r.rc : APPROF_EDB; /* the batch was rolled back (sweep_db.c) */
    return 0;
}

/* Rank 0: another rank's tuple, as MPI delivers it. */
static int sink_store(void *ctx, size_t k, const CostdbEntry e[2], const CostdbPlacement *pl,
                      size_t n_pl)
{
    return sink_queue(ctx, k, e, pl, NULL, n_pl, 0);
}

static int sink_discard(void *ctx, size_t k, const CostdbEntry e[2], const CostdbPlacement *pl,
                        size_t n_pl)
{
    (void)ctx, (void)k, (void)e, (void)pl, (void)n_pl;
    return 0;
}

static int sink_put(Sink *s, size_t k, const CostdbEntry e[2], const CostdbPlacement *pl,
                    size_t n_pl)
{
    if (s->rank == 0)
        return sink_store(s, k, e, pl, n_pl);
    s->sum->entries += 2;
    return approf_sweep_mpi_send_tuple(s->mpi, k, e, pl, n_pl);
}

/* Rank 0 of several: stops the workers, receives until each is done (storing
 * what still arrives when store is set) and sends them the final status. */
static int root_close(Sink *s, int store, int final, int *worker_status, int *worker_rank)
{
    int rc = 0;
    if (final != 0)
        approf_sweep_mpi_root_stop(s->mpi);
    while (!approf_sweep_mpi_root_all_done(s->mpi)) {
        int prc = approf_sweep_mpi_root_poll(s->mpi, 1, store ? sink_store : sink_discard, s,
                                             worker_status, worker_rank);
        if (prc < 0 && rc == 0)
            rc = prc;
        if (prc == APPROF_EIO)
            break;  /* MPI itself failed (or a malformed message): nothing more to receive */
        if (prc < 0) {
            store = 0;  /* the database failed: keep draining, report it */
            approf_sweep_mpi_root_stop(s->mpi);
        }
    }
    return rc;
}

/* Rank 0's array of *n elements of elem bytes to every rank: the count,
 * then the bytes in chunks of the same size on every rank; a rank that
 * could not allocate still takes part (into scratch) and reports after,
 * with *arr NULL and APPROF_ENOMEM. Collective. */
static int share_array(ApprofSweepMpi *mpi, int rank, void **arr, size_t *n, size_t elem)
{
    char scratch[2048];
    uint64_t count = *n;
    size_t bytes;
    int rc = approf_sweep_mpi_bcast(mpi, &count, sizeof count);
    if (rc < 0 || count == 0)
        return rc;
    if (count > SIZE_MAX / elem)
        return APPROF_EIO;
    bytes = (size_t)count * elem;
    if (rank > 0) {
        free(*arr);
        *arr = malloc(bytes);
        *n = *arr ? (size_t)count : 0;
    }
    for (size_t off = 0; off < bytes && rc == 0; off += sizeof scratch) {
        size_t len = bytes - off < sizeof scratch ? bytes - off : sizeof scratch;
        rc = approf_sweep_mpi_bcast(mpi, *arr ? (char *)*arr + off : scratch, len);
    }
    if (rc == 0 && rank > 0 && !*arr)
        rc = APPROF_ENOMEM;
    return rc;
}

/* Rank 0's measured communication curves to every rank (the sharding solver
 * prices collectives with them on every rank). Collective. */
static int share_curves(Sweep *sw, ApprofSweepMpi *mpi, int rank, ApprofSweepSummary *sum)
{
    int rc = share_array(mpi, rank, (void **)&sw->comm_pts, &sw->n_comm_pts,
                         sizeof *sw->comm_pts);
    if (rc < 0 || rank == 0 || sw->n_comm_pts == 0)
        return rc;
    return approf_sweep_use_curves(sw, sum);
}

/* Rank 0's measured GEMM points to every rank (the analytic backend and
 * the sharding solver price GEMMs with them on every rank). Collective. */
static int share_gemm(Sweep *sw, ApprofSweepMpi *mpi, int rank)
{
    int rc = share_array(mpi, rank, (void **)&sw->gemm_pts, &sw->n_gemm_pts,
                         sizeof *sw->gemm_pts);
    if (rc < 0 || rank == 0 || sw->n_gemm_pts == 0)
        return rc;
    return approf_sweep_use_gemm(sw, NULL, 0);
}

/* Every tuple written: what only profiling needed goes before the
 * dominated variants' pass reads the sweep back (405B's 126 layers: the
 * sweep's peak was there, the reuse table, the sharding context's memos
 * and the writer's caches held while the pass read 1.2 million cost
 * rows). The sharding counts are taken first; the tuple list stays (the
 * rest of the run may still index it). glibc keeps freed pages of its
 * heaps resident; malloc_trim hands them back. */
static void release_profiling(Sweep *sw, ApprofSweepSummary *sum)
{
    ApprofShardStats st;
    approf_shard_context_stats(sw->shard, &st);
    /* += : --workers N > 1 added the other workers' contexts already */
    sum->sharding_solved += st.solved;
    sum->sharding_cached += st.cached;
    approf_shard_context_free(&sw->shard);
    /* the caches first: the writer's keys name the reuse table's specs by
     * their addresses (sweep_writer.c, slot_key) */
    costdb_forget_written(sw->db);
    approf_sweep_reuse_free(&sw->reuse);
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* What both ways of running the tuples share (one thread below, or
 * --workers N > 1 through sweep_workers.h): the same tuples, the same
 * checks between them and the same hand-over, on the main thread. */
typedef struct {
    Sink *s;
    const ApprofSweepCallbacks *cb;
    int *worker_status, *worker_rank;
    int last_submesh;
    CostdbPlacement *pl;          /* the costdb rows of the tuple handed on */
    size_t pl_cap;
} RunHooks;

/* Whether this rank profiles tuple k: of this shard, not yet complete,
 * every size-th such one from rank on (*todo_index counts them). */
static int selected(const Sink *s, const ApprofSweepConfig *cfg, size_t k, size_t *todo_index)
{
    if ((int)(k % (size_t)cfg->shard_n) != cfg->shard_k || s->have[k] == 3)
        return 0;
    return (int)((*todo_index)++ % (size_t)s->size) == s->rank;
}

/* The tuples this rank profiles: *todo NULL and *n the tuple count when
 * that is every tuple (a fresh sweep in one process: 8 bytes a tuple not
 * held, 28 MB for the 3.5 million of 405B's 126 layers), else their
 * indices, malloc'd. 0 or APPROF_ENOMEM. */
static int select_todo(const Sink *s, const ApprofSweepConfig *cfg, size_t **todo, size_t *n)
{
    size_t m = 0, todo_index = 0, N = s->sw->n_tuples;
    *todo = NULL;
    for (size_t k = 0; k < N; k++)
        m += (size_t)selected(s, cfg, k, &todo_index);
    *n = m;
    if (m == N)
        return 0;
    if (!(*todo = malloc((m ? m : 1) * sizeof **todo)))
        return APPROF_ENOMEM;
    m = todo_index = 0;
    for (size_t k = 0; k < N; k++)
        if (selected(s, cfg, k, &todo_index))
            (*todo)[m++] = k;
    return 0;
}

/* The checks before each tuple: a stop, and the MPI root's polling of its
 * ranks. */
static int run_poll(void *ctx)
{
    RunHooks *h = ctx;
    Sink *s = h->s;
    int rc;
    if (h->cb && h->cb->stop && *h->cb->stop)
        return APPROF_EINTR;
    if (s->size > 1 && s->rank == 0) {
        rc = approf_sweep_mpi_root_poll(s->mpi, 0, sink_store, s, h->worker_status,
                                        h->worker_rank);
        if (rc < 0)
            return rc;
        if (*h->worker_status)
            return APPROF_EINTR;
    } else if (s->size > 1 && approf_sweep_mpi_stop_requested(s->mpi)) {
        return APPROF_EINTR;
    }
    return 0;
}

/* Tells the callbacks when the tuples move to another submesh. */
static void announce_submesh(RunHooks *h, const ApprofTuple *t)
{
    const Sweep *sw = h->s->sw;
    if (t->submesh == h->last_submesh)
        return;
    h->last_submesh = t->submesh;
    if (h->cb && h->cb->submesh)
        h->cb->submesh(h->cb->ctx, t->submesh, sw->submeshes[t->submesh].n,
                       sw->submeshes[t->submesh].m);
}

/* Hands tuple k's result on: to the writer on rank 0, else its costdb
 * placement rows to rank 0. specs_kept: pl's spec texts are the spec pool
 * of this thread's Sweep (approf_sweep_profile_tuple), which is freed
 * after the writer thread stops (release_profiling), so the writer reads
 * them where they are (approf_writer_put_compact); a worker's pool goes
 * when the workers end, before that. */
static int hand_on(RunHooks *h, size_t k, const CostdbEntry e[2], const ApprofSlotPlacement *pl,
                   size_t n_pl, int specs_kept)
{
    if (h->s->rank == 0)
        return sink_queue(h->s, k, e, NULL, pl, n_pl, specs_kept);
    int n = approf_sweep_expand_placements(h->s->sw, &h->s->sw->tuples[k], pl, (int)n_pl, NULL,
                                           &h->pl, &h->pl_cap);
    return n < 0 ? n : sink_put(h->s, k, e, h->pl, (size_t)n);
}

/* The workers' hand-over: announced when handed on, as the workers profile
 * ahead of it. */
static int run_put(void *ctx, size_t k, const CostdbEntry e[2], const ApprofSlotPlacement *pl,
                   size_t n_pl)
{
    RunHooks *h = ctx;
    announce_submesh(h, &h->s->sw->tuples[k]);
    return hand_on(h, k, e, pl, n_pl, 0);
}

static int run_tuples(Sink *s, const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                      int *worker_status, int *worker_rank, char *err, size_t errlen)
{
    Sweep *sw = s->sw;
    RunHooks h = {s, cb, worker_status, worker_rank, -1, NULL, 0};
    int workers = cfg->workers > 0 ? cfg->workers : approf_sweep_default_workers(sw);
    ApprofSlotPlacement *rows = NULL; /* one buffer for every tuple's placements */
    size_t rows_cap = 0, n;
    size_t *todo;
    int rc = 0;
    s->sum->workers = workers;
    if (select_todo(s, cfg, &todo, &n) < 0)
        return APPROF_ENOMEM;
    if (workers > 1) {
        ApprofSweepWorkHooks hooks = {&h, run_poll, run_put};
        /* the checks the loop below makes before its first tuple */
        rc = n ? run_poll(&h) : 0;
        if (rc == 0)
            rc = approf_sweep_workers_run(sw, cfg, cb, todo, n, workers, &hooks, s->sum, err,
                                          errlen);
    } else {
        for (size_t i = 0; i < n && rc >= 0; i++) {
            size_t k = approf_todo_at(todo, i);
            const ApprofTuple *t = &sw->tuples[k];
            CostdbEntry e[2];
            int npl = 0;
            if ((rc = run_poll(&h)) < 0)
                break;
            announce_submesh(&h, t);
            rc = approf_sweep_profile_tuple(sw, cfg, t, e, &rows, &rows_cap, &npl, s->sum);
            if (rc < 0) {
                snprintf(err, errlen, "tuple (%d, %d, %d, %d): %s", t->start, t->end, t->submesh,
                         t->config, approf_strerror(rc));
                break;
            }
            rc = hand_on(&h, k, e, rows, (size_t)npl, 1);
        }
    }
    free(todo);
    free(rows);
    free(h.pl);
    return rc < 0 ? rc : 0;
}

int approf_sweep_run(const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                     ApprofSweepSummary *sum, char *err, size_t errlen)
{
    Sweep sw;
    CostdbSweep row;
    Sink sink;
    ApprofSweepCallbacks quiet;
    ApprofSweepMpi *mpi = NULL;
    ApprofProcessGroup pg;
    int64_t global_batch = cfg->global_batch;
    double t_start = costdb_monotonic_seconds(), t0;
    int rc, dberr = 0, owes_final = 0, wstatus = 0, wrank = 0, have_db_stat = 0;
    struct stat db_stat;

    memset(&sw, 0, sizeof sw);
    memset(&sink, 0, sizeof sink);
    memset(&pg, 0, sizeof pg);
    memset(sum, 0, sizeof *sum);
    sw.ilp_method = cfg->sharding_method;
    sw.memory_levels = costdb_variant_space_resolve(cfg->variants).memory_levels;
    sink.size = 1;
    err[0] = '\0';
    if (cfg->micro_batches <= 0 || cfg->shard_n <= 0 || cfg->shard_k < 0 ||
        cfg->shard_k >= cfg->shard_n) {
        snprintf(err, errlen, "invalid micro-batches or shard");
        return APPROF_EINVAL;
    }
    if (cfg->workers < 0 || cfg->workers > APPROF_SWEEP_MAX_WORKERS) {
        snprintf(err, errlen, "--workers %d: not in [1, %d]", cfg->workers,
                 APPROF_SWEEP_MAX_WORKERS);
        return APPROF_EINVAL;
    }
    if (approf_sweep_mpi_launched()) {
        rc = approf_sweep_mpi_init(&mpi, &sink.rank, &sink.size, &pg.local_rank,
                                   &pg.local_size, err, errlen);
        if (rc < 0)
            return rc;
    }
    sum->mpi_rank = sink.rank;
    sum->mpi_size = sink.size;
    sw.mpi_size = sink.size;
    sw.local_rank = pg.local_rank;
    sw.local_size = pg.local_size > 0 ? pg.local_size : 1;
    if (sink.rank > 0) {
        /* only rank 0 reports; the others keep the stop flag and say
         * their own stop */
        memset(&quiet, 0, sizeof quiet);
        quiet.stop = cb ? cb->stop : NULL;
        quiet.interrupted = cb ? cb->interrupted : NULL;
        quiet.ctx = cb ? cb->ctx : NULL;
        cb = &quiet;
    }
    sink.sw = &sw;
    sink.cb = cb;
    sink.sum = sum;
    sink.mpi = mpi;

    rc = approf_sweep_prepare(&sw, cfg, cb, &global_batch, sum, costdb_monotonic_seconds(), err, errlen);
    if (rc == 0) {
        sink.have = calloc(sw.n_tuples ? sw.n_tuples : 1, 1);
        if (!sink.have)
            rc = APPROF_ENOMEM;
    }
    if (rc == 0 && sink.rank == 0) {
        rc = approf_sweep_open_db(&sw, cfg, cb, global_batch, &row, sink.have, sum, err, errlen);
        /* the file the sweep writes, to notice it deleted or replaced */
        if (rc == 0 && stat(cfg->db_path, &db_stat) == 0)
            have_db_stat = 1;
    }
    if (sink.size > 1) {
        rc = approf_sweep_mpi_agree(mpi, rc, rc == 0 ? approf_sweep_work_hash(&sw, cfg) : 0, err, errlen);
        if (rc == 0)
            rc = approf_sweep_mpi_bcast(mpi, sink.have, sw.n_tuples);
        if (rc == 0) {
            int grc;
            rc = share_curves(&sw, mpi, sink.rank, sum);
            grc = share_gemm(&sw, mpi, sink.rank); /* on every rank, whatever rc */
            rc = approf_sweep_mpi_agree(mpi, rc < 0 ? rc : grc, 0, err, errlen);
        }
        if (rc == 0 && sw.backend.join) {
            pg.rank = sink.rank;
            pg.size = sink.size;
            pg.ctx = mpi;
            pg.bcast = approf_sweep_mpi_pg_bcast;
            pg.barrier = approf_sweep_mpi_pg_barrier;
            pg.agree = approf_sweep_mpi_pg_agree;
            rc = sw.backend.join(sw.backend.ctx, &pg, err, errlen);
            rc = approf_sweep_mpi_agree(mpi, rc, 0, err, errlen);
        }
        owes_final = rc == 0 && sink.rank == 0;
    }
    if (rc < 0)
        goto out;

    /* the tuples of this shard; on resume, those complete are done already */
    for (size_t k = 0; k < sw.n_tuples; k++)
        if ((int)(k % (size_t)cfg->shard_n) == cfg->shard_k) {
            sum->tuples++;
            sink.work_total += tuple_work(&sw, k);
            if (sink.have[k] == 3) {
                sum->existing += 2;
                sink.done++;
                sink.work_done += tuple_work(&sw, k);
            }
        }
    if (sink.rank == 0) {
        approf_sweep_writer_init(&sink.writer, sw.db, row.id, cfg->commit_every);
        if (sink.done && cb && cb->progress)
            cb->progress(cb->ctx, sink.done, sum->tuples, sink.work_done, sink.work_total);
        /* without it every row is complete */
        sink.described = calloc(sw.graph->n_tensors ? sw.graph->n_tensors : 1, 1);
        if (approf_writer_start(&sink.wq, &sink.writer, sink_place, &sink) < 0) {
            snprintf(err, errlen, "cannot start the writer thread");
            rc = APPROF_ENOMEM;
        }
    }
    if (rc == 0)
        rc = run_tuples(&sink, cfg, cb, &wstatus, &wrank, err, errlen);

    if (sink.rank > 0) {
        int final = 0;
        /* said before DONE: with every DONE rank 0 may exit, and the
         * launcher then kills this rank at once */
        if (rc == APPROF_EINTR && cb->interrupted)
            cb->interrupted(cb->ctx, sum);
        if (approf_sweep_mpi_worker_finish(mpi, rc, &final) < 0 && rc == 0) {
            snprintf(err, errlen, "rank %d: lost rank 0", sink.rank);
            rc = APPROF_EIO;
        } else if (rc == 0 || rc == APPROF_EINTR) {
            rc = final;
            if (rc < 0 && rc != APPROF_EINTR)
                snprintf(err, errlen, "rank %d: rank 0 ended the sweep with an error",
                         sink.rank);
        }
        goto out;
    }
    if (owes_final) {
        int crc = root_close(&sink, rc != APPROF_EDB, rc, &wstatus, &wrank);
        if (crc < 0 && rc == 0)
            rc = crc;
    }
    {
        /* what is queued is written (not after a failure); the database is
         * this thread's again */
        double busy = 0;
        int wrc = approf_writer_stop(sink.wq, &busy);
        sink.wq = NULL;
        sum->t_writing += busy;
        if (wrc < 0 && (rc == 0 || rc == APPROF_EINTR || rc == APPROF_EDB)) {
            rc = wrc;
            if (rc != APPROF_EDB)
                snprintf(err, errlen, "the writer thread: %s", approf_strerror(rc));
        }
    }
    if (rc == APPROF_EDB) {
        dberr = 1;
        goto out;
    }
    if (rc == 0 && wstatus) {
        rc = wstatus == APPROF_EINTR ? APPROF_EINTR : wstatus;
        if (rc != APPROF_EINTR)
            snprintf(err, errlen, "rank %d of %d failed: %s (its message says more)", wrank,
                     sink.size, approf_strerror(rc));
    }
    if (rc < 0 && rc != APPROF_EINTR) {
        approf_sweep_writer_flush(&sink.writer);
        costdb_sweep_set_status(sw.db, row.id, COSTDB_SWEEP_INTERRUPTED, 0);
        goto out;
    }
    t0 = costdb_monotonic_seconds();
    if (rc != APPROF_EINTR && cfg->individual && cfg->shard_n == 1) {
        /* a database failure says costdb's message; any other its own */
        int crc = approf_sweep_writer_flush(&sink.writer) < 0
                      ? APPROF_EDB : approf_sweep_compose(&sw, row.id, &sink.writer, sum);
        if (crc == APPROF_EDB) {
            dberr = 1;
            goto out;
        }
        if (crc < 0) {
            snprintf(err, errlen, "composing the range entries: %s", approf_strerror(crc));
            costdb_sweep_set_status(sw.db, row.id, COSTDB_SWEEP_INTERRUPTED, 0);
            rc = crc;
            goto out;
        }
    }
    if (approf_sweep_writer_flush(&sink.writer) < 0) {
        dberr = 1;
        goto out;
    }
    release_profiling(&sw, sum);
    /* every variant of every stage stored now: the dominated ones go
     * (sweep_dominated.h); a shard holds part of a stage's variants */
    if (rc != APPROF_EINTR && !cfg->keep_dominated && cfg->shard_n == 1 && sum->entries > 0 &&
        approf_sweep_leave_out_dominated(sw.db, row.id, &sum->dominated) < 0) {
        dberr = 1;
        goto out;
    }
    if (rc == APPROF_EINTR) {
        sum->interrupted = 1;
        costdb_sweep_set_status(sw.db, row.id, COSTDB_SWEEP_INTERRUPTED, 0);
    } else if (costdb_sweep_set_status(sw.db, row.id, COSTDB_SWEEP_COMPLETE, 1) < 0) {
        dberr = 1;
        goto out;
    } else if (costdb_sync(sw.db) < 0) {
        /* the rows and the status on disk, or exit 1 (SQLite ignores the
         * errors of its automatic checkpoints); the owner's release below
         * is not flushed: a stale owner on this host is taken over */
        dberr = 1;
        goto out;
    } else {
        rc = 0;
    }
    if (have_db_stat) {
        struct stat now;
        if (stat(cfg->db_path, &now) != 0 || now.st_dev != db_stat.st_dev ||
            now.st_ino != db_stat.st_ino) {
            snprintf(err, errlen, "%s: the database file was deleted or replaced while the "
                     "sweep ran; what it wrote went to the old file, which is gone",
                     cfg->db_path);
            rc = APPROF_EIO;
        }
    }
    sum->t_writing += costdb_monotonic_seconds() - t0;
out:
    /* a failure before the tuples were handed over */
    approf_writer_stop(sink.wq, NULL);
    approf_sweep_writer_release(&sink.writer);
    if (dberr) {
        approf_sweep_db_error(&sw, cfg, err, errlen);
        if (sw.db && sum->sweep_id)
            costdb_sweep_set_status(sw.db, sum->sweep_id, COSTDB_SWEEP_INTERRUPTED, 0);
        rc = APPROF_EDB;
    }
    /* said before FINAL releases the workers (sweep.h) */
    if (rc == APPROF_EINTR && sink.rank == 0 && sum->sweep_id && cb && cb->interrupted)
        cb->interrupted(cb->ctx, sum);
    if (owes_final) {
        if (!approf_sweep_mpi_root_all_done(mpi))
            root_close(&sink, 0, rc ? rc : APPROF_EIO, &wstatus, &wrank);
        approf_sweep_mpi_root_finish(mpi, rc);
    }
    sum->t_total = costdb_monotonic_seconds() - t_start;
    /* done writing: the sweep is free for another process (a SIGKILL leaves
     * the row, which the next resume on this host takes over) */
    if (sw.owned_sweep && sw.db)
        costdb_sweep_release(sw.db, sw.owned_sweep, &sw.owner);
    free(sink.have);
    free(sink.described);
    free(sink.rows);
    free(sink.writer.held); /* a batch never committed (sweep_db.h) */
    approf_sweep_free(&sw);
    approf_sweep_mpi_finalize(&mpi);
    return rc;
}
