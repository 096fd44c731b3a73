/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's writer thread (sweep_writer.h). A ring of WRITER_SLOTS slots
 * under one mutex: the producer (the sweep's main thread) fills slot
 * tail % WRITER_SLOTS and moves tail on; the writer writes slot head and
 * moves head on. A slot keeps its placement buffer for the next tuple
 * that lands in it, so that a steady sweep allocates nothing per tuple;
 * once the buffers together hold more than WRITER_BYTES, the writer frees
 * the one it has just written instead, so that a run of large stages
 * leaves no more than that behind.
 *
 * Why a thread: on llama-3.1-405b's full space with 2 workers the main
 * thread spent 215 of 379 s writing (SQLite and costdb), which bounded any
 * --workers speed-up at about 3x (docs/performance.md, "The writer
 * thread"). SQLite is opened with SQLITE_OPEN_NOMUTEX (costdb/db.c), its
 * multi-thread mode: a connection may move between threads as long as two
 * never use it at once. Here the handover is the thread's start and its
 * join, which order every use before and after.
 */
#include "sweep_writer.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "clock.h"
#include "grow.h"

/* Tuples the queue holds. 64 tuples make one transaction by default
 * (--commit-every), so the writer finds several batches' worth waiting
 * when the profiling runs ahead, and the producer blocks only when the
 * writer is that far behind. */
#define WRITER_SLOTS 256
/* Placement rows (about 0.9 kB each, CostdbPlacement) queued and kept in
 * the slots' buffers: 16 MiB, some 18,000 rows. */
#define WRITER_BYTES ((size_t)16 << 20)

typedef struct {
    CostdbEntry e[2];
    size_t n;
    CostdbPlacement *pl;
    size_t pl_cap;
    size_t n_pl;
} WriterSlot;

struct ApprofWriterQueue {
    pthread_mutex_t mu;
    pthread_cond_t more;          /* a tuple was queued, or closing */
    pthread_cond_t space;         /* a slot was written, or the writer failed */
    pthread_t thread;
    ApprofSweepWriter *w;
    WriterSlot slots[WRITER_SLOTS];
    size_t head, tail;            /* written up to head, queued up to tail */
    size_t queued_bytes;          /* placement rows of slots head..tail-1 */
    size_t kept_bytes;            /* capacity of every slot's buffer */
    int closing;
    int rc;                       /* first failure: APPROF_EDB or APPROF_ENOMEM */
    double busy;                  /* seconds spent writing */
};

/* The open batch's deadline (its age reaches w->max_seconds) as an
 * absolute CLOCK_MONOTONIC time. */
static void batch_deadline(const ApprofSweepWriter *w, struct timespec *ts)
{
    double at = w->opened_at + w->max_seconds;
    ts->tv_sec = (time_t)at;
    ts->tv_nsec = (long)((at - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_nsec = 999999999L;
}

static void *writer_main(void *arg)
{
    ApprofWriterQueue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        WriterSlot *s;
        size_t bytes;
        double t0;
        int rc;
        while (q->head == q->tail && !q->closing && !q->rc) {
            if (!q->w->in_txn) {
                pthread_cond_wait(&q->more, &q->mu);
                continue;
            }
            /* nothing to write: commit the open batch once it is due, as
             * a put would have, so that a kill while the profiling is on a
             * slow stretch loses no more than it did before */
            struct timespec ts;
            batch_deadline(q->w, &ts);
            if (pthread_cond_timedwait(&q->more, &q->mu, &ts) == 0 || q->head != q->tail)
                continue;
            pthread_mutex_unlock(&q->mu);
            t0 = costdb_monotonic_seconds();
            rc = approf_sweep_writer_flush(q->w);
            pthread_mutex_lock(&q->mu);
            q->busy += costdb_monotonic_seconds() - t0;
            if (rc < 0 && !q->rc) {
                q->rc = APPROF_EDB;
                pthread_cond_signal(&q->space);
            }
        }
        if (q->rc || q->head == q->tail)
            break; /* failed, or closing with the queue empty */
        s = &q->slots[q->head % WRITER_SLOTS];
        pthread_mutex_unlock(&q->mu);

        /* a queued slot is the writer's alone until head moves past it */
        t0 = costdb_monotonic_seconds();
        rc = approf_sweep_writer_put(q->w, s->e, s->n, s->n_pl ? s->pl : NULL, s->n_pl);
        bytes = s->n_pl * sizeof *s->pl;

        pthread_mutex_lock(&q->mu);
        q->busy += costdb_monotonic_seconds() - t0;
        q->queued_bytes -= bytes;
        if (q->kept_bytes > WRITER_BYTES && s->pl) {
            q->kept_bytes -= s->pl_cap * sizeof *s->pl;
            free(s->pl);
            s->pl = NULL;
            s->pl_cap = 0;
        }
        q->head++;
        if (rc < 0 && !q->rc)
            q->rc = APPROF_EDB; /* the batch was rolled back (sweep_db.c) */
        pthread_cond_signal(&q->space);
    }
    pthread_cond_signal(&q->space);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int approf_writer_start(ApprofWriterQueue **out, ApprofSweepWriter *w)
{
    ApprofWriterQueue *q;
    pthread_condattr_t ca;
    sigset_t block, old;
    int e;
    *out = NULL;
    q = calloc(1, sizeof *q);
    if (!q)
        return APPROF_ENOMEM;
    q->w = w;
    if (pthread_mutex_init(&q->mu, NULL)) {
        free(q);
        return APPROF_ENOMEM;
    }
    if (pthread_condattr_init(&ca)) {
        pthread_mutex_destroy(&q->mu);
        free(q);
        return APPROF_ENOMEM;
    }
    e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&q->more, &ca);
    pthread_condattr_destroy(&ca);
    if (e) {
        pthread_mutex_destroy(&q->mu);
        free(q);
        return APPROF_ENOMEM;
    }
    if (pthread_cond_init(&q->space, NULL)) {
        pthread_cond_destroy(&q->more);
        pthread_mutex_destroy(&q->mu);
        free(q);
        return APPROF_ENOMEM;
    }
    /* like the profiling workers, it leaves SIGINT/SIGTERM/SIGHUP to the
     * main thread, whose handler sets the stop flag */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    e = pthread_create(&q->thread, NULL, writer_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        pthread_cond_destroy(&q->space);
        pthread_cond_destroy(&q->more);
        pthread_mutex_destroy(&q->mu);
        free(q);
        return APPROF_ENOMEM;
    }
    *out = q;
    return 0;
}

int approf_writer_reserve(ApprofWriterQueue *q, size_t n_pl, CostdbPlacement **rows)
{
    size_t need = n_pl * sizeof **rows, cap;
    WriterSlot *s;
    int rc;
    pthread_mutex_lock(&q->mu);
    /* full: every slot queued, or the rows past the budget (a tuple
     * larger than the budget alone goes in once the queue is empty) */
    while (!q->rc && (q->tail - q->head == WRITER_SLOTS ||
                      (q->tail != q->head && q->queued_bytes + need > WRITER_BYTES)))
        pthread_cond_wait(&q->space, &q->mu);
    rc = q->rc;
    s = &q->slots[q->tail % WRITER_SLOTS];
    cap = s->pl_cap;
    pthread_mutex_unlock(&q->mu);
    if (rc < 0)
        return rc;
    /* the slot at tail is the producer's until it submits it */
    if (n_pl > s->pl_cap && util_grow_zero((void **)&s->pl, &s->pl_cap, n_pl, sizeof *s->pl) < 0)
        return APPROF_ENOMEM;
    if (s->pl_cap != cap) {
        pthread_mutex_lock(&q->mu);
        q->kept_bytes += (s->pl_cap - cap) * sizeof *s->pl;
        pthread_mutex_unlock(&q->mu);
    }
    *rows = s->pl;
    return 0;
}

void approf_writer_submit(ApprofWriterQueue *q, const CostdbEntry *e, size_t n, size_t n_pl)
{
    WriterSlot *s = &q->slots[q->tail % WRITER_SLOTS];
    s->n = n < 2 ? n : 2;
    memcpy(s->e, e, s->n * sizeof *e);
    s->n_pl = n_pl;
    pthread_mutex_lock(&q->mu);
    q->queued_bytes += n_pl * sizeof *s->pl;
    q->tail++;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
}

int approf_writer_stop(ApprofWriterQueue *q, double *busy)
{
    int rc;
    if (!q)
        return 0;
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    rc = q->rc;
    if (busy)
        *busy = q->busy;
    for (size_t i = 0; i < WRITER_SLOTS; i++)
        free(q->slots[i].pl);
    pthread_cond_destroy(&q->space);
    pthread_cond_destroy(&q->more);
    pthread_mutex_destroy(&q->mu);
    free(q);
    return rc;
}
