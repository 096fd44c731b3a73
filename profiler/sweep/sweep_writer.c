/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's writer thread (sweep_writer.h). A ring of WRITER_SLOTS slots
 * under one mutex: the producer (the sweep's main thread) fills slot
 * ptail % WRITER_SLOTS, moves ptail on and, every WRITER_PUBLISH slots,
 * moves tail (what the writer sees) up to it; the writer writes slot head
 * and moves head on. A slot keeps its placement buffer for the next tuple
 * that lands in it, so that a steady sweep allocates nothing per tuple;
 * once the buffers together hold more than WRITER_BYTES, the writer frees
 * the one it has just written instead, so that a run of large stages
 * leaves no more than that behind.
 *
 * The two wake each other in bunches, not per tuple (on a busy machine each
 * wake waits for a time slice): the producer, once the queue is full,
 * sleeps until the writer has emptied half of it; the writer, once the
 * queue is empty, sleeps until WRITER_WAKE tuples wait, the producer is
 * stuck, the queue closes, or 50 ms have passed.
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

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "clock.h"
#include "grow.h"
#include "sweep_int.h"

/* Tuples the queue holds. Most tuples of a full space carry entries
 * only (a variant reads its owner's placements), and a writer thread
 * writes one in some 35 microseconds, so 256 slots were 9 ms of its work:
 * on a busy machine, where a woken thread waits tens of milliseconds for
 * a processor, the writer emptied the queue and slept long before the
 * producer ran again, and llama-3-70b 40 layers `--variants all`
 * `--workers 1` took 102.5 s against 66.7 s at the branch point (the same
 * processor time). A slot is 1.4 kB (two entries and three buffer
 * pointers): 2.9 MB for 2,048, 11.5 MB for 8,192. 2,048 were still too few
 * for llama-3.1-405b 32x8 126 layers `--variants all` (148 million
 * placement rows in 384,049 sets, the writer 45 microseconds a set): the
 * producer slept on a full queue 871 times, 8.3 s of its 10.8 s handing
 * over; with 8,192 slots (and WRITER_BYTES 8 MiB) 18 times, 0.9 s
 * (docs/perf-wrhand.md). */
#define WRITER_SLOTS 8192
/* Placement rows queued, and kept in the slots' buffers: 8 MiB. A
 * compact row (this process's tuples) is 16 bytes, and its spec text when
 * copied; a costdb row (another rank's, through MPI) about 0.9 kB. The buffers fill
 * up to it: with 16 MiB, llama-3-70b 16 layers 8x8 (plain, one worker)
 * peaked at 55.8 MB resident against 39.3 MB at the branch point; with
 * 4 MiB, 44.5 MB. The 405B full space's stretches of template hits with
 * placements outrun the writer by more than 4 MiB of rows: with 8,192
 * slots and 4 MiB the producer still slept 210 times (4.9 s), with 8 MiB
 * 18 times (0.9 s; 16 MiB no fewer). Peak RSS there 260 -> 273 MB,
 * llama-3-70b 80 layers plain 74 -> 86 MB (docs/perf-wrhand.md). */
#define WRITER_BYTES ((size_t)8 << 20)
/* Tuples queued that wake a sleeping writer (fewer are written when its
 * wait times out, after at most the batch age, 50 ms). */
#define WRITER_WAKE 256
/* Slots the writer writes between two takings of the lock (one to see
 * what is queued, one to hand the written slots back): a full space
 * hands over a million tuples, most without placement rows, and a lock
 * round trip per slot, each moving the lock's cache line between the two
 * processors, was a visible share of the writer's time. */
#define WRITER_RUN 32
/* Tuples the producer fills before it shows them to the writer (one taking
 * of the lock for them all, not one a tuple; the same reason). At most
 * WRITER_PUBLISH - 1 filled tuples wait unseen while the producer profiles
 * its next tuple; a wait for room and the stop show them at once, and so
 * does a tuple queued WRITER_PUBLISH_SECONDS after the last showing: slow
 * tuples (a CBC-bound MoE stage, a measuring backend's seconds a tuple)
 * reach the batch, and its commit, as soon as before, so that a kill
 * still loses only the batch's age of work (sweep_db.h). */
#define WRITER_PUBLISH 32
#define WRITER_PUBLISH_SECONDS 0.01

typedef struct {
    CostdbEntry e[2];
    size_t n;
    size_t k;                     /* the tuple (compact rows) */
    int compact;                  /* the rows are in cpl and text, not pl */
    int specs_kept;               /* cpl's specs are the caller's interned texts */
    size_t n_pl;
    size_t bytes;                 /* what the rows count in queued_bytes */
    CostdbPlacement *pl;          /* costdb rows */
    size_t pl_cap;
    ApprofSlotPlacement *cpl;     /* compact rows, their specs in text or kept by the caller */
    size_t cpl_cap;
    char *text;
    size_t text_cap;
} WriterSlot;

/* The bytes a slot's buffers hold. */
static size_t slot_kept(const WriterSlot *s)
{
    return s->pl_cap * sizeof *s->pl + s->cpl_cap * sizeof *s->cpl + s->text_cap;
}

struct ApprofWriterQueue {
    pthread_mutex_t mu;
    pthread_cond_t more;          /* a tuple was queued, or closing */
    pthread_cond_t space;         /* a slot was written, or the writer failed */
    pthread_t thread;
    ApprofSweepWriter *w;
    ApprofWriterPlace place;
    void *ctx;
    unsigned char *key;           /* the writer's: the key of a compact slot's rows */
    size_t key_cap;
    WriterSlot slots[WRITER_SLOTS];
    size_t head, tail;            /* written up to head, queued up to tail */
    size_t queued_bytes;          /* placement rows of slots head..tail-1 */
    /* the producer's own: slots filled up to ptail (>= tail), the rows'
     * bytes of slots tail..ptail-1, not yet shown to the writer (publish) */
    size_t ptail, pbytes;
    double published_at;          /* the producer's clock at its last publish */
    size_t kept_bytes;            /* capacity of every slot's buffer */
    int closing;
    int writer_waiting;           /* the writer sleeps on more */
    int producer_waiting;         /* the producer sleeps on space */
    int rc;                       /* first failure: APPROF_EDB or APPROF_ENOMEM (set_failed) */
    double busy;                  /* seconds spent writing */
    /* the producer's own view, read under the lock when it last published:
     * head then (head only grows) and queued_bytes then plus nothing since
     * (only the writer lowers it); room in that view is room now, so the
     * producer takes a slot without the lock (slot_wait), rc read
     * atomically as before a wait */
    size_t seen_head, seen_bytes;
};

/* Records the writer's first failure (under the lock; stored atomically
 * for slot_wait's look without it). */
static void set_failed(ApprofWriterQueue *q, int rc)
{
    if (!q->rc)
        __atomic_store_n(&q->rc, rc, __ATOMIC_RELEASE);
}

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

/* Whether the producer may go on: the queue at most half full in slots
 * and bytes (woken only then, not for each slot written: on a busy
 * machine each wake waits for a time slice, and a producer woken per slot
 * would pay one per tuple). */
static int below_low_water(const ApprofWriterQueue *q)
{
    return q->tail - q->head <= WRITER_SLOTS / 2 && q->queued_bytes <= WRITER_BYTES / 2;
}

/* Writer: waits (lock held) until WRITER_WAKE tuples are queued, or the
 * queue closes, or the time is up: the open batch's deadline (it is then
 * committed when nothing is queued, as a put would have, so that a kill
 * while the profiling is on a slow stretch loses no more than it did
 * before), else max_seconds from now (what is queued is then written).
 * 0 to write what is queued; 1 when there is nothing more to do. */
static int writer_wait(ApprofWriterQueue *q)
{
    for (;;) {
        struct timespec ts;
        size_t queued = q->tail - q->head;
        int e;
        if (q->rc || (queued == 0 && q->closing))
            return 1;
        if (queued >= WRITER_WAKE || (queued > 0 && (q->closing || q->producer_waiting)))
            return 0;
        if (q->w->in_txn) {
            batch_deadline(q->w, &ts);
        } else {
            ApprofSweepWriter now = *q->w;
            now.opened_at = costdb_monotonic_seconds();
            batch_deadline(&now, &ts);
        }
        q->writer_waiting = 1;
        e = pthread_cond_timedwait(&q->more, &q->mu, &ts);
        q->writer_waiting = 0;
        if (e != ETIMEDOUT)
            continue;
        if (q->tail != q->head)
            return 0;
        if (q->w->in_txn &&
            costdb_monotonic_seconds() - q->w->opened_at >= q->w->max_seconds) {
            double t0 = costdb_monotonic_seconds();
            int rc;
            pthread_mutex_unlock(&q->mu);
            rc = approf_sweep_writer_commit(q->w);
            pthread_mutex_lock(&q->mu);
            q->busy += costdb_monotonic_seconds() - t0;
            if (rc < 0)
                set_failed(q, APPROF_EDB);
        }
    }
}

/* Row flags of a key (slot_key): how the row's spec follows its header. */
enum { KEY_SPEC_POINTER, KEY_SPEC_TEXT, KEY_SPEC_AGAIN };

/* The key of compact slot s's rows (costdb_placements_put_keyed) in q->key,
 * its base the first row's tensor: for each row, its tensor less the base
 * (4 bytes, wrapping: one base, one tensor), its role with a flag and its
 * spec's length (2 + 2), then its spec. An interned spec (specs_kept: the
 * single worker's spec pool, which keeps one text at one address and is
 * freed only after the sweep's costdb caches, release_profiling) is its
 * pointer (KEY_SPEC_POINTER); a copied one is its bytes (KEY_SPEC_TEXT),
 * or nothing when the row shares the row before's copy (KEY_SPEC_AGAIN:
 * the same text). The flag says which, so two keys are equal only for
 * equal lists of (tensor less base, role, spec). 0 or -1 (no memory). */
static int slot_key(ApprofWriterQueue *q, const WriterSlot *s, CostdbPlacementKey *key)
{
    size_t len = 0;
    uint32_t base = (uint32_t)s->cpl[0].tensor;
    for (size_t i = 0; i < s->n_pl; i++) {
        const ApprofSlotPlacement *r = &s->cpl[i];
        int again = !s->specs_kept && i && r->spec == s->cpl[i - 1].spec;
        uint32_t d = (uint32_t)r->tensor - base;
        uint16_t role = (uint16_t)(r->role | (s->specs_kept ? KEY_SPEC_POINTER
                                              : again   ? KEY_SPEC_AGAIN
                                                        : KEY_SPEC_TEXT) << 8);
        size_t text = s->specs_kept ? sizeof r->spec : again ? 0 : r->spec_len;
        unsigned char *at;
        if (util_grow((void **)&q->key, &q->key_cap, len + 8 + text, 1) < 0)
            return -1;
        at = q->key + len;
        memcpy(at, &d, 4);
        memcpy(at + 4, &role, 2);
        memcpy(at + 6, &r->spec_len, 2);
        if (s->specs_kept)
            memcpy(at + 8, &r->spec, sizeof r->spec);
        else if (text)
            memcpy(at + 8, r->spec, text);
        len += 8 + text;
    }
    memset(key, 0, sizeof *key);
    key->base = s->cpl[0].tensor;
    key->bytes = q->key;
    key->len = len;
    return 0;
}

static void *writer_main(void *arg)
{
    ApprofWriterQueue *q = arg;
    pthread_mutex_lock(&q->mu);
    while (writer_wait(q) == 0) {
        /* write until the queue is empty (or a failure), WRITER_RUN slots
         * at a time */
        while (q->head != q->tail && !q->rc) {
            size_t end = q->tail - q->head > WRITER_RUN ? q->head + WRITER_RUN : q->tail, at;
            double t0;
            int rc = 0;
            pthread_mutex_unlock(&q->mu);

            /* a queued slot is the writer's alone until head moves past it */
            t0 = costdb_monotonic_seconds();
            for (at = q->head; at < end && rc == 0; at++) {
                WriterSlot *s = &q->slots[at % WRITER_SLOTS];
                if (s->compact && s->n_pl) {
                    CostdbPlacementKey key;
                    rc = slot_key(q, s, &key) < 0
                             ? APPROF_ENOMEM
                             : q->place(q->ctx, q->w, s->k, s->e, s->n, s->cpl, (int)s->n_pl, &key);
                } else {
                    rc = approf_sweep_writer_put(q->w, s->e, s->n, s->n_pl ? s->pl : NULL,
                                                 s->n_pl) < 0
                             ? APPROF_EDB : 0; /* the batch was rolled back (sweep_db.c) */
                }
            }

            pthread_mutex_lock(&q->mu);
            q->busy += costdb_monotonic_seconds() - t0;
            /* the slots written (the failed one too): back to the producer */
            for (; q->head < at; q->head++) {
                WriterSlot *s = &q->slots[q->head % WRITER_SLOTS];
                q->queued_bytes -= s->bytes;
                if (q->kept_bytes > WRITER_BYTES) {
                    q->kept_bytes -= slot_kept(s);
                    free(s->pl);
                    free(s->cpl);
                    free(s->text);
                    s->pl = NULL;
                    s->cpl = NULL;
                    s->text = NULL;
                    s->pl_cap = s->cpl_cap = s->text_cap = 0;
                }
            }
            if (rc < 0)
                set_failed(q, rc);
            if (q->producer_waiting && below_low_water(q)) {
                q->producer_waiting = 0;
                pthread_cond_signal(&q->space);
            }
        }
    }
    /* failed or done: a waiting producer learns it */
    q->producer_waiting = 0;
    pthread_cond_signal(&q->space);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int approf_writer_start(ApprofWriterQueue **out, ApprofSweepWriter *w, ApprofWriterPlace place,
                        void *ctx)
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
    q->place = place;
    q->ctx = ctx;
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

/* The producer's filled slots shown to the writer (lock held): tail
 * moves to ptail, their rows' bytes are counted, a sleeping writer woken
 * once WRITER_WAKE tuples wait. The filled slots and the counts are the
 * producer's alone until then (tail is read and written only under the
 * lock, ptail and pbytes only by the producer), so the writer never sees
 * a slot half filled. */
static void publish(ApprofWriterQueue *q)
{
    q->queued_bytes += q->pbytes;
    q->pbytes = 0;
    q->tail = q->ptail;
    if (q->writer_waiting && q->tail - q->head >= WRITER_WAKE)
        pthread_cond_signal(&q->more);
}

/* The producer's slot once the queue has room for `need` bytes of rows:
 * waits while every slot is queued or the rows would pass the budget (a
 * tuple larger than the budget alone goes in once the queue is empty).
 * 0 with *slot, or the writer's failure. */
static int slot_wait(ApprofWriterQueue *q, size_t need, WriterSlot **slot)
{
    int rc;
    /* room in the producer's view (ptail and pbytes are its own) */
    if (!__atomic_load_n(&q->rc, __ATOMIC_ACQUIRE) &&
        q->ptail - q->seen_head < WRITER_SLOTS &&
        (q->ptail == q->seen_head || q->seen_bytes + q->pbytes + need <= WRITER_BYTES)) {
        *slot = &q->slots[q->ptail % WRITER_SLOTS];
        return 0;
    }
    pthread_mutex_lock(&q->mu);
    /* what the writer is to empty, shown to it first */
    publish(q);
    while (!q->rc && (q->tail - q->head == WRITER_SLOTS ||
                      (q->tail != q->head && q->queued_bytes + need > WRITER_BYTES))) {
        q->producer_waiting = 1;
        if (q->writer_waiting) /* full in bytes before WRITER_WAKE tuples */
            pthread_cond_signal(&q->more);
        pthread_cond_wait(&q->space, &q->mu);
    }
    rc = q->rc;
    *slot = &q->slots[q->tail % WRITER_SLOTS];
    q->seen_head = q->head;
    q->seen_bytes = q->queued_bytes;
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* The slot at tail is the producer's until it is queued: its buffers
 * grown, kept_bytes follows them. */
static void slot_grown(ApprofWriterQueue *q, size_t before, const WriterSlot *s)
{
    size_t after = slot_kept(s);
    if (after == before)
        return;
    pthread_mutex_lock(&q->mu);
    q->kept_bytes += after - before;
    pthread_mutex_unlock(&q->mu);
}

/* Queues the producer's slot: filled, and shown to the writer with the
 * slots filled before it once WRITER_PUBLISH wait. */
static void slot_queue(ApprofWriterQueue *q, WriterSlot *s, const CostdbEntry *e, size_t n)
{
    s->n = n < 2 ? n : 2;
    /* the used bytes only (costdb_entry_copy): a full space hands over
     * millions of entries, most with an empty error text, and the slot's
     * lines are the writer's, on the other processor, until the copy */
    for (size_t i = 0; i < s->n; i++)
        costdb_entry_copy(&s->e[i], &e[i]);
    q->ptail++;
    q->pbytes += s->bytes;
    double now = costdb_monotonic_seconds();
    if (q->ptail - q->tail < WRITER_PUBLISH && now - q->published_at < WRITER_PUBLISH_SECONDS)
        return;
    q->published_at = now;
    pthread_mutex_lock(&q->mu);
    publish(q);
    q->seen_head = q->head;
    q->seen_bytes = q->queued_bytes;
    pthread_mutex_unlock(&q->mu);
}

int approf_writer_reserve(ApprofWriterQueue *q, size_t n_pl, CostdbPlacement **rows)
{
    WriterSlot *s;
    size_t before;
    int rc = slot_wait(q, n_pl * sizeof **rows, &s);
    if (rc < 0)
        return rc;
    before = slot_kept(s);
    rc = util_grow_zero((void **)&s->pl, &s->pl_cap, n_pl, sizeof *s->pl);
    slot_grown(q, before, s);
    if (rc < 0)
        return APPROF_ENOMEM;
    *rows = s->pl;
    return 0;
}

void approf_writer_submit(ApprofWriterQueue *q, const CostdbEntry *e, size_t n, size_t n_pl)
{
    WriterSlot *s = &q->slots[q->ptail % WRITER_SLOTS];
    s->compact = 0;
    s->n_pl = n_pl;
    s->bytes = n_pl * sizeof *s->pl;
    slot_queue(q, s, e, n);
}

int approf_writer_put_compact(ApprofWriterQueue *q, size_t k, const CostdbEntry *e, size_t n,
                              const ApprofSlotPlacement *pl, size_t n_pl, int specs_kept)
{
    WriterSlot *s;
    size_t text = 0, before, at = 0;
    int rc;
    /* a row whose spec is the row before's (the same interned text: a
     * stage's layers repeat their layouts) shares its copy; texts that
     * outlive the queue are not copied at all */
    for (size_t i = 0; i < n_pl && !specs_kept; i++)
        if (!i || pl[i].spec != pl[i - 1].spec)
            text += (size_t)pl[i].spec_len + 1;
    rc = slot_wait(q, n_pl * sizeof *pl + text, &s);
    if (rc < 0)
        return rc;
    before = slot_kept(s);
    rc = util_grow((void **)&s->cpl, &s->cpl_cap, n_pl, sizeof *s->cpl) < 0 ||
         util_grow((void **)&s->text, &s->text_cap, text, 1) < 0;
    slot_grown(q, before, s);
    if (rc)
        return APPROF_ENOMEM;
    /* the specs into the slot's text (their lengths came with them), the
     * rows pointing at them */
    if (specs_kept && n_pl)
        memcpy(s->cpl, pl, n_pl * sizeof *pl);
    for (size_t i = 0; i < n_pl && !specs_kept; i++) {
        s->cpl[i] = pl[i];
        if (i && pl[i].spec == pl[i - 1].spec) {
            s->cpl[i].spec = s->cpl[i - 1].spec;
            continue;
        }
        s->cpl[i].spec = s->text + at;
        memcpy(s->text + at, pl[i].spec, (size_t)pl[i].spec_len + 1);
        at += (size_t)pl[i].spec_len + 1;
    }
    s->compact = 1;
    s->specs_kept = specs_kept;
    s->k = k;
    s->n_pl = n_pl;
    s->bytes = n_pl * sizeof *pl + text;
    slot_queue(q, s, e, n);
    return 0;
}

int approf_writer_stop(ApprofWriterQueue *q, double *busy)
{
    int rc;
    if (!q)
        return 0;
    pthread_mutex_lock(&q->mu);
    publish(q);
    q->closing = 1;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    rc = q->rc;
    if (busy)
        *busy = q->busy;
    for (size_t i = 0; i < WRITER_SLOTS; i++) {
        free(q->slots[i].pl);
        free(q->slots[i].cpl);
        free(q->slots[i].text);
    }
    free(q->key);
    pthread_cond_destroy(&q->space);
    pthread_cond_destroy(&q->more);
    pthread_mutex_destroy(&q->mu);
    free(q);
    return rc;
}
