/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's worker threads (sweep_workers.h). One mutex guards the pool:
 * the next tuple to hand out, the window of slots the results wait in, the
 * stop flag and the first failure. A worker takes index i of todo[] only
 * while i < delivered + window, so at most `window` results (entries and
 * placements) are held at once, and puts its result in slot i % window; the
 * main thread hands the slots on in index order, polling between results.
 * It is not woken for each result: it looks every HAND_ON_US while the head
 * slot is not ready (a worker wakes it at once only when a tuple fails or
 * the worker ends). Workers block SIGINT and SIGTERM so that the handler
 * runs on the main thread, and read no flag but the pool's.
 */
#include "sweep_workers.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table_alloc.h"

/* How often the main thread looks for ready results. Woken by each result
 * instead, the run switched context 17,500 times on gpt3-39b 64 layers 8x8
 * with 2 workers (0.26 s of system time); looking every millisecond, 2,200
 * to 3,100 times (0.14 to 0.16 s), and the run took 1.39 s against 1.43 s
 * (medians of 10, each build in turn; docs/performance.md). The window
 * holds thousands of results per worker, so a millisecond's delay idles no
 * worker; it also bounds how late a stop is seen. */
#define HAND_ON_US 1000L

typedef enum { SLOT_EMPTY, SLOT_BUSY, SLOT_READY, SLOT_FAILED } SlotState;

/* A slot's placement buffer stays with the slot: the worker that takes
 * index i profiles into slot i % window's buffer (grown as needed) and the
 * main thread hands it on without freeing it, so that no tuple allocates
 * or frees its placements, nor frees memory of another thread. The rows
 * are the compact ones (tensor, role, interned spec: sweep_int.h); the
 * main thread makes the costdb rows as it hands them on (sweep_run.c), so
 * a result waiting in the window is small and the main thread reads 16
 * bytes per placement that another processor wrote, not a kilobyte. */
typedef struct {
    SlotState state;
    CostdbEntry e[2];
    ApprofSlotPlacement *pl;
    size_t pl_cap;
    int n_pl;
} Slot;

typedef struct Pool {
    pthread_mutex_t mu;
    pthread_cond_t ready;        /* a tuple failed, or a worker ended */
    pthread_cond_t space;        /* the window moved on, or stop */
    const ApprofSweepConfig *cfg;
    const ApprofTuple *tuples;
    const size_t *todo;          /* NULL: the tuples 0 .. n_todo - 1 */
    size_t n_todo;
    int *lane;                   /* [n_todo]: the worker a tuple belongs to */
    int n_live;                  /* workers that started (lanes are mod this) */
    int go;                      /* n_live is final: workers may take tuples */
    size_t delivered;            /* indices handed on by the main thread */
    size_t window;
    Slot *slots;
    int stop;
    int fail_rc;                 /* first (lowest index) tuple failure */
    size_t fail_i;
} Pool;

typedef struct Worker {
    Pool *pool;
    Sweep *sw;                   /* worker 0: the caller's; others: own */
    Sweep own;                   /* a copy of the caller's with its own backend,
                                  * sharding context and reuse table */
    ApprofSweepSummary sum;      /* t_sharding, t_costing, reused of this worker */
    pthread_t thread;
    int started;
    int index;                   /* j: this worker's lane */
    size_t cursor;               /* next index of todo[] it looks at */
} Worker;

/* Which worker profiles each tuple. Stages alike enough to share a cached
 * result (program templates by key, Pareto sets by structure, the ILP
 * cache: ranges [i, j] and [i+1, j+1] of a transformer, on any config that
 * gives the same ILP) have the same number of operators, which both keys
 * include; so the tuples are dealt in classes of one operator count, each
 * class to one worker (docs/architecture.md, "No rework per tuple"): the
 * classes largest first (tuples x operators, a proxy of their cost) to the
 * worker with the least so far. Neighbouring tuples (ranges [i, j] and
 * [i, j+1]) fall in different classes, so the workers share every part of
 * the tuple order: results are handed on in that order through a window of
 * slots, and a worker given a long run of tuples (a whole submesh's group)
 * left the other waiting on the window. Where the classes are too few to
 * spread (profile mode individual: single layers, mostly alike), the
 * tuples on one logical mesh of one submesh (a group) go to one worker,
 * groups dealt largest first in the same way. */
static uint64_t stage_ops(const Sweep *sw, const ApprofTuple *t)
{
    return (uint64_t)(sw->layering.op_end[t->end] - sw->layering.op_begin[t->start]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct OpsClass {
    uint64_t ops;
    double weight;
    int owner;
} OpsClass;

static int cmp_weight(const void *a, const void *b)
{
    const OpsClass *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight < y->weight ? 1 : -1;
    return (x->ops > y->ops) - (x->ops < y->ops);
}

static int cmp_class_ops(const void *a, const void *b)
{
    const OpsClass *x = a, *y = b;
    return (x->ops > y->ops) - (x->ops < y->ops);
}

/* Lanes by operator count; 0, or 1 (nothing set) where the classes are
 * fewer than 2n or memory is short. */
static int lanes_by_ops(const Sweep *sw, const size_t *todo, size_t n_todo, int n, int *lane)
{
    uint64_t *ops = malloc(n_todo * sizeof *ops);
    OpsClass *cls = NULL;
    double load[APPROF_SWEEP_MAX_WORKERS] = {0};
    size_t nc = 0;
    int rc = 1;
    if (!ops)
        return 1;
    for (size_t k = 0; k < n_todo; k++)
        ops[k] = stage_ops(sw, &sw->tuples[approf_todo_at(todo, k)]);
    qsort(ops, n_todo, sizeof *ops, cmp_u64);
    for (size_t k = 0; k < n_todo; k++)
        nc += k == 0 || ops[k] != ops[k - 1];
    if (nc < 2 * (size_t)n || !(cls = calloc(nc, sizeof *cls)))
        goto out;
    nc = 0;
    for (size_t k = 0; k < n_todo; k++) {
        if (k == 0 || ops[k] != ops[k - 1])
            cls[nc++].ops = ops[k];
        cls[nc - 1].weight += (double)ops[k];
    }
    qsort(cls, nc, sizeof *cls, cmp_weight);
    for (size_t c = 0; c < nc; c++) {
        int w = 0;
        for (int j = 1; j < n; j++)
            if (load[j] < load[w])
                w = j;
        load[w] += cls[c].weight;
        cls[c].owner = w;
    }
    qsort(cls, nc, sizeof *cls, cmp_class_ops);
    for (size_t k = 0; k < n_todo; k++) {
        OpsClass key = {stage_ops(sw, &sw->tuples[approf_todo_at(todo, k)]), 0, 0};
        const OpsClass *c = bsearch(&key, cls, nc, sizeof *cls, cmp_class_ops);
        lane[k] = c ? c->owner : 0;
    }
    rc = 0;
out:
    free(ops);
    free(cls);
    return rc;
}

static int tuple_group(const Sweep *sw, const ApprofTuple *t)
{
    const ApprofConfigChoice *c = &sw->configs[t->submesh][t->config];
    int base = t->config;
    /* the group: the first config of the submesh with this logical mesh */
    for (int i = 0; i < t->config; i++) {
        const ApprofConfigChoice *o = &sw->configs[t->submesh][i];
        if (o->logical_a == c->logical_a && o->logical_b == c->logical_b &&
            o->force_batch_dim == c->force_batch_dim) {
            base = i;
            break;
        }
    }
    return t->submesh * APPROF_MAX_CONFIGS + base;
}

static void assign_lanes(const Sweep *sw, const size_t *todo, size_t n_todo, int n, int *lane)
{
    if (lanes_by_ops(sw, todo, n_todo, n, lane) == 0)
        return;
    enum { MAXG = APPROF_MAX_SUBMESHES * APPROF_MAX_CONFIGS };
    size_t *count = calloc(MAXG, sizeof *count);
    int *owner = malloc(MAXG * sizeof *owner);
    size_t load[APPROF_SWEEP_MAX_WORKERS] = {0};
    if (!count || !owner) { /* no table: round-robin by group */
        for (size_t k = 0; k < n_todo; k++)
            lane[k] = tuple_group(sw, &sw->tuples[approf_todo_at(todo, k)]) % n;
        free(count);
        free(owner);
        return;
    }
    for (size_t k = 0; k < n_todo; k++)
        count[tuple_group(sw, &sw->tuples[approf_todo_at(todo, k)])]++;
    for (;;) {
        int g = -1, w = 0;
        for (int i = 0; i < MAXG; i++)
            if (count[i] && (g < 0 || count[i] > count[g]))
                g = i;
        if (g < 0)
            break;
        for (int j = 1; j < n; j++)
            if (load[j] < load[w])
                w = j;
        load[w] += count[g];
        owner[g] = w;
        count[g] = 0;
    }
    for (size_t k = 0; k < n_todo; k++)
        lane[k] = owner[tuple_group(sw, &sw->tuples[approf_todo_at(todo, k)])];
    free(count);
    free(owner);
}

int approf_sweep_default_workers(const Sweep *sw)
{
    if (!sw || !sw->backend.name || !strcmp(sw->backend.name, "model"))
        return 1;
    /* CUDA: one worker per device this process measures on */
    return sw->n_devices > 1 ? sw->n_devices : 1;
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Pool *p = w->pool;
    pthread_mutex_lock(&p->mu);
    while (!p->go && !p->stop)
        pthread_cond_wait(&p->space, &p->mu);
    for (;;) {
        int rc;
        size_t i;
        Slot *s;
        /* the next tuple of this worker's lane, in order */
        while (w->cursor < p->n_todo && p->lane[w->cursor] % p->n_live != w->index)
            w->cursor++;
        while (!p->stop && w->cursor < p->n_todo && w->cursor >= p->delivered + p->window)
            pthread_cond_wait(&p->space, &p->mu);
        if (p->stop || w->cursor >= p->n_todo)
            break;
        i = w->cursor++;
        s = &p->slots[i % p->window];
        s->state = SLOT_BUSY;
        pthread_mutex_unlock(&p->mu);

        /* a busy slot is this worker's alone until it is ready */
        rc = approf_sweep_profile_tuple(w->sw, p->cfg, &p->tuples[approf_todo_at(p->todo, i)], s->e, &s->pl,
                                        &s->pl_cap, &s->n_pl, &w->sum);

        pthread_mutex_lock(&p->mu);
        if (rc < 0) {
            s->state = SLOT_FAILED;
            if (!p->fail_rc || i < p->fail_i) {
                p->fail_rc = rc;
                p->fail_i = i;
            }
            p->stop = 1;
            pthread_cond_broadcast(&p->space);
            pthread_cond_signal(&p->ready);
        } else {
            s->state = SLOT_READY; /* the main thread looks every HAND_ON_US */
        }
    }
    pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Worker j > 0: its own backend (the kind the caller's resolved to, so that
 * "auto" cannot mix them), sharding context and reuse table. */
static int worker_open(Worker *w, Sweep *sw, const ApprofSweepConfig *cfg,
                       const ApprofSweepCallbacks *cb, int j, char *err, size_t errlen)
{
    ApprofSweepConfig wcfg = *cfg;
    char why[512] = "";
    int rc;
    w->own = *sw;
    w->own.db = NULL;
    w->own.shard = NULL;
    memset(&w->own.backend, 0, sizeof w->own.backend);
    memset(&w->own.reuse, 0, sizeof w->own.reuse);
    w->sw = &w->own;
    w->own.device_slot = j;
    wcfg.backend = sw->backend.name;
    rc = approf_sweep_open_backend(&w->own, &wcfg, cb, why, sizeof why);
    if (rc < 0) {
        snprintf(err, errlen, "worker %d: %s", j + 1, why[0] ? why : approf_strerror(rc));
        return rc;
    }
    rc = approf_shard_context_new(sw->graph, &sw->layering, &sw->hw, cfg->micro_batches,
                                  &w->own.shard);
    if (rc < 0)
        snprintf(err, errlen, "worker %d: sharding context: %s", j + 1, approf_strerror(rc));
    return rc;
}

static void worker_close(Worker *w)
{
    if (w->sw != &w->own)
        return;
    approf_shard_context_free(&w->own.shard);
    approf_backend_destroy(&w->own.backend);
    approf_sweep_reuse_free(&w->own.reuse);
}

static void deadline_in(struct timespec *ts, long us)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += us * 1000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += ts->tv_nsec / 1000000000L;
        ts->tv_nsec %= 1000000000L;
    }
}

/* Main thread: hands slot delivered % window on and empties it (its
 * placement buffer stays for the next tuple of the slot). */
static int hand_on(Pool *p, const ApprofSweepWorkHooks *hooks)
{
    Slot *s = &p->slots[p->delivered % p->window];
    int rc = hooks->put(hooks->ctx, approf_todo_at(p->todo, p->delivered), s->e, s->pl, (size_t)s->n_pl);
    pthread_mutex_lock(&p->mu);
    s->state = SLOT_EMPTY;
    p->delivered++;
    pthread_cond_broadcast(&p->space);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static int pool_init(Pool *p)
{
    pthread_condattr_t ca;
    int rc;
    if (pthread_mutex_init(&p->mu, NULL))
        return -1;
    if (pthread_condattr_init(&ca)) {
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&p->ready, &ca);
    pthread_condattr_destroy(&ca);
    if (rc) {
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    if (pthread_cond_init(&p->space, NULL)) {
        pthread_cond_destroy(&p->ready);
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    return 0;
}

static void pool_destroy(Pool *p)
{
    pthread_cond_destroy(&p->space);
    pthread_cond_destroy(&p->ready);
    pthread_mutex_destroy(&p->mu);
}

int approf_sweep_workers_run(Sweep *sw, const ApprofSweepConfig *cfg,
                             const ApprofSweepCallbacks *cb, const size_t *todo, size_t n_todo,
                             int workers, const ApprofSweepWorkHooks *hooks,
                             ApprofSweepSummary *sum, char *err, size_t errlen)
{
    Pool p;
    Worker *w = NULL;
    sigset_t block, old;
    int n = workers, started = 0, rc = 0, drain = 0;

    if (workers < 1 || workers > APPROF_SWEEP_MAX_WORKERS || !hooks || !hooks->put ||
        !hooks->poll) {
        snprintf(err, errlen, "--workers %d: not in [1, %d]", workers,
                 APPROF_SWEEP_MAX_WORKERS);
        return APPROF_EINVAL;
    }
    if (n_todo == 0)
        return 0;
    if ((size_t)n > n_todo)
        n = (int)n_todo;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.tuples = sw->tuples;
    p.todo = todo;
    p.n_todo = n_todo;
    /* enough for tuples of uneven cost (a cached stage takes microseconds,
     * a new ILP tens of milliseconds) not to idle the workers behind the
     * head of the order. gpt3-39b 64 layers 8x8 with 2 workers: each waited
     * 0.38 s of 1.8 s with 96 slots, 0.02 to 0.09 s with 1,056. The
     * 32-layer `--variants all` sweep (16 times the tuples) still waited
     * 1.4 s each of 6.8 s with 1,056 slots; with 4,128 the run takes 6.3 s
     * instead of 7.1 s (medians of 3), at 601 MB resident instead of 588,
     * and the 64-layer run is unchanged (1.48 s; 8,224 slots: 1.53 s,
     * 204 MB). A slot is its two entries (1.3 kB) and 16 bytes per
     * placement of the largest stage it held (ApprofSlotPlacement). The
     * total stays at most what 256 workers had with 512 slots each. */
    p.window = 2048 * (size_t)(n < 64 ? n : 64) + 32;
    if (p.window > n_todo)
        p.window = n_todo; /* every tuple has its slot: none is reused */
    /* a worker reads its slot before it writes it */
    p.slots = costdb_table_alloc(p.window, sizeof *p.slots);
    p.lane = malloc(n_todo * sizeof *p.lane);
    w = calloc((size_t)n, sizeof *w);
    if (!p.slots || !w || !p.lane) {
        free(p.slots);
        free(p.lane);
        free(w);
        return APPROF_ENOMEM;
    }
    assign_lanes(sw, todo, n_todo, n, p.lane);
    p.n_live = n;
    if (pool_init(&p) < 0) {
        free(p.slots);
        free(p.lane);
        free(w);
        snprintf(err, errlen, "cannot create the worker pool's locks");
        return APPROF_ENOMEM;
    }
    if (n > 1 && sw->backend.name && strcmp(sw->backend.name, "model") && n > sw->n_devices &&
        cb && cb->notice) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "--workers %d on %d device%s: workers share devices; their timings may "
                 "disturb each other", n, sw->n_devices, sw->n_devices == 1 ? "" : "s");
        cb->notice(cb->ctx, msg);
    }
    for (int j = 0; j < n && rc == 0; j++) {
        w[j].pool = &p;
        w[j].index = j;
        if (j == 0)
            w[j].sw = sw;
        else
            rc = worker_open(&w[j], sw, cfg, cb, j, err, errlen);
    }
    if (rc < 0)
        goto cleanup;

    /* the workers leave SIGINT/SIGTERM/SIGHUP to this thread */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (int j = 0; j < n; j++) {
        int e = pthread_create(&w[j].thread, NULL, worker_main, &w[j]);
        if (e) {
            if (started == 0) {
                snprintf(err, errlen, "cannot start a worker thread: %s", strerror(e));
                rc = APPROF_ENOMEM;
            }
            break; /* go on with those that started */
        }
        w[j].started = 1;
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* lanes over the workers that started (they are numbered 0..started-1) */
    pthread_mutex_lock(&p.mu);
    p.n_live = started > 0 ? started : 1;
    p.go = 1;
    pthread_cond_broadcast(&p.space);
    pthread_mutex_unlock(&p.mu);
    if (rc < 0)
        goto cleanup;

    pthread_mutex_lock(&p.mu);
    while (p.delivered < p.n_todo) {
        SlotState st = p.slots[p.delivered % p.window].state;
        int prc;
        if (st == SLOT_FAILED)
            break;
        if (st == SLOT_EMPTY && p.stop)
            break; /* never handed out, and never will be */
        pthread_mutex_unlock(&p.mu);
        prc = hooks->poll(hooks->ctx);
        if (prc < 0) {
            rc = prc;
            drain = prc == APPROF_EINTR;
            pthread_mutex_lock(&p.mu);
            break;
        }
        if (st == SLOT_READY) {
            rc = hand_on(&p, hooks);
            pthread_mutex_lock(&p.mu);
            if (rc < 0)
                break;
            continue;
        }
        pthread_mutex_lock(&p.mu);
        if (p.slots[p.delivered % p.window].state == st) {
            struct timespec ts;
            deadline_in(&ts, HAND_ON_US);
            pthread_cond_timedwait(&p.ready, &p.mu, &ts);
        }
    }
    p.stop = 1;
    pthread_cond_broadcast(&p.space);
    pthread_mutex_unlock(&p.mu);
    for (int j = 0; j < n; j++)
        if (w[j].started)
            pthread_join(w[j].thread, NULL);

    if (p.fail_rc && (rc == 0 || rc == APPROF_EINTR)) {
        const ApprofTuple *t = &sw->tuples[approf_todo_at(todo, p.fail_i)];
        rc = p.fail_rc;
        drain = 1;
        snprintf(err, errlen, "tuple (%d, %d, %d, %d): %s", t->start, t->end, t->submesh,
                 t->config, approf_strerror(rc));
    }
    /* stopped: what the workers finished is handed on, in order, up to the
     * first tuple not finished (a failed one, or one never started) */
    while (drain && p.delivered < p.n_todo &&
           p.slots[p.delivered % p.window].state == SLOT_READY) {
        int prc = hand_on(&p, hooks);
        if (prc < 0) {
            rc = prc;
            err[0] = '\0';
            break;
        }
    }

cleanup:
    for (int j = 0; j < n; j++) {
        sum->t_sharding += w[j].sum.t_sharding;
        sum->t_costing += w[j].sum.t_costing;
        sum->reused += w[j].sum.reused;
        if (w[j].sw == &w[j].own && w[j].own.shard) {
            /* worker 0's count is the caller's context, read by the caller */
            ApprofShardStats st;
            approf_shard_context_stats(w[j].own.shard, &st);
            sum->sharding_solved += st.solved;
            sum->sharding_cached += st.cached;
        }
        worker_close(&w[j]);
    }
    for (size_t i = 0; i < p.window; i++)
        free(p.slots[i].pl);
    free(p.slots);
    free(p.lane);
    free(w);
    pool_destroy(&p);
    return rc;
}
