/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The solver's side of the cost database: building an ApsolveProblem from a
 * sweep's submeshes, configs and ModuleProfileResult entries (docs/alpa-semantics.md
 * "Memory feasibility"), and storing a plan with its stages and inputs.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "collective.h"
#include "costdb.h"
#include "costdb_rows.h"
#include "page_populate.h"
#include "problem_unfilled.h"
#include "solver_int.h"
#include "unfit_share.h"

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* costdb_stage_rows hands over the 'ok' entries only; a cost that is
 * infinite or negative is no stage either. */
static int entry_ok(const CostdbStageCost *e)
{
    return isfinite(e->compute_cost) && e->compute_cost >= 0;
}

/* The load on two threads (ApsolveOptions.load_threads >= 2;
 * docs/performance.md, "apsolve's wall time on the 126-layer file"). The
 * second thread makes the problem's tables (apsolve_problem_new_unfilled:
 * about 0.25 GB on the 126-layer 405B file, the pages of the filled ones
 * faulted in; cost and max_n_succ_stages are filled as the entries are
 * put, fill_to) while the calling one reads the sweep's cost rows, which come
 * before the first entry (costdb_stage_pair_runs); then it puts the
 * entries that fit (put_ok: the cost, phase, memory and apply tables,
 * whose pages it faults in) from batches the walk hands over in its order,
 * while the walk goes on. The entries out of memory (put_unfit: the unfit
 * table and its share, which put_ok neither reads nor writes) the walk
 * puts itself, in its order (the writer was the slower of the two:
 * docs/perf-apsdense.md). Each table is written by the same calls in the
 * same order as at one thread: the same problem (docs/performance.md
 * "apsolve's load by runs of a block's configs"). */
enum { OK_BATCH = 4096, OK_BUFS = 4 };

typedef struct OkEntry {
    size_t idx;
    CostdbStageCost ph0, ph1;
} OkEntry;

typedef struct LoadCtx LoadCtx;

typedef struct LoadJob {
    int L, hosts, gpus, S, C;
    const ApsolveOptions *opt;
    LoadCtx *lc; /* put_unfit's */
    ApsolveProblem *p;
    int rc, made; /* apsolve_problem_new's status, once made */
    int put_rc;   /* APSOLVE_ENOMEM once an entry's memory figures found no room (put_ok's
                   * writer's; read after the walk) */
    size_t filled; /* cells 0 .. filled - 1 of cost and max_n_succ_stages hold their
                    * entry or apsolve_problem_new's value (the tables are made unfilled:
                    * fill_to; the rest filled after the walk); put_ok's writer's */
    int started, joined;
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    OkEntry *buf[OK_BUFS];
    size_t len[OK_BUFS];
    unsigned put, got; /* batches handed over, and written; put - got <= OK_BUFS */
    size_t fill;       /* entries in buf[put % OK_BUFS], not yet handed over */
    int ended;         /* no batch after those handed over */
} LoadJob;

static inline int put_ok(const ApsolveOptions *opt, ApsolveProblem *p, size_t idx,
                  const CostdbStageCost *ph0, const CostdbStageCost *ph1);
static inline void put_unfit(LoadCtx *c, size_t idx, const CostdbStageCost *ph0,
                      const CostdbStageCost *ph1);
static void populate_figs(LoadCtx *c, ApsolveProblem *p, size_t more);
static void populate_unfit(LoadCtx *c, ApsolveProblem *p);

/* Before put_ok writes cell idx (the whole cell: cost and
 * max_n_succ_stages): the cells from j->filled up to it filled as
 * apsolve_problem_new would, so that every cell below j->filled is
 * initialized whatever the entries' order (the walk's is ascending, each
 * gap filled just before the entry after it is written: one pass over
 * the tables, not a fill and then the entries). */
static inline void fill_to(LoadJob *j, ApsolveProblem *p, size_t idx)
{
    if (idx > j->filled)
        apsolve_problem_fill_cells(p, j->filled, idx);
    if (idx >= j->filled)
        j->filled = idx + 1;
}

/* Entry idx, which fits, put: put_ok (the first failure kept, the
 * entries that fit after it not put). */
static void put_one(LoadJob *j, ApsolveProblem *p, size_t idx, const CostdbStageCost *ph0,
                    const CostdbStageCost *ph1)
{
    if (!j->put_rc) {
        fill_to(j, p, idx);
        j->put_rc = put_ok(j->opt, p, idx, ph0, ph1);
    }
}

/* The problem's tables allocated, none of their pages touched (cost and
 * max_n_succ_stages filled as the entries are put: fill_to). */
static int table_alloc(LoadJob *j)
{
    return apsolve_problem_new_unpopulated(j->L, j->hosts, j->gpus, j->S, j->C, &j->p);
}

/* p's tables faulted in: cost and max_n_succ_stages, and calloc's zeroed
 * tables that the entries write into, by one call each instead of a fault
 * per page at the entries' first writes: the entries reach almost every
 * page of them (the 126-layer file: about 2 MB more resident, 26,500
 * faults fewer) */
static void table_populate(ApsolveProblem *p)
{
    size_t cells = apsolve_problem_cells(p);
    apsolve_problem_populate_unfilled(p);
    cdb_populate(p->apply_cost, cells * sizeof *p->apply_cost);
    cdb_populate(p->memory->slot, cells * sizeof *p->memory->slot);
    cdb_populate(p->times->slot, cells * sizeof *p->times->slot);
    if (p->unfit_table) /* made ahead: load_start */
        cdb_populate(p->unfit_table->slot, cells * sizeof *p->unfit_table->slot);
}

static int table_make(LoadJob *j)
{
    int rc = table_alloc(j);
    if (rc == APSOLVE_OK)
        table_populate(j->p);
    return rc;
}

/* The second thread: the tables' pages (allocated by load_start), then
 * the batches in order until the walk ends. */
static void *load_job(void *arg)
{
    LoadJob *j = arg;
    int rc = APSOLVE_OK;
    table_populate(j->p);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->made = 1;
    pthread_cond_broadcast(&j->cv);
    for (;;) {
        const OkEntry *b;
        size_t n;
        while (rc == APSOLVE_OK && j->got == j->put && !j->ended)
            pthread_cond_wait(&j->cv, &j->mu);
        if (rc != APSOLVE_OK || j->got == j->put)
            break;
        b = j->buf[j->got % OK_BUFS];
        n = j->len[j->got % OK_BUFS];
        pthread_mutex_unlock(&j->mu);
        populate_figs(j->lc, j->p, n); /* the batch's figures' pages, before it */
        for (size_t k = 0; k < n; k++)
            put_one(j, j->p, b[k].idx, &b[k].ph0, &b[k].ph1);
        pthread_mutex_lock(&j->mu);
        j->got++;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Starts the second thread when threads > 1 and it starts (the tables,
 * its buffers, lock and thread); else the load runs on the calling thread
 * alone. The tables are allocated here, on the calling thread: glibc's
 * calloc leaves the main heap's fresh memory as the kernel zeroed it,
 * while on the second thread's heap it cleared the apply and slot tables
 * with a page fault per page (some 19,000 on the 126-layer file) before
 * their populate came. */
static void load_start(LoadJob *j, int threads)
{
    int k = 0, mu = 0, cv = 0;
    if (threads < 2)
        return;
    if ((j->rc = table_alloc(j)) != APSOLVE_OK) {
        j->made = 1; /* the load ends with it (load_tables) */
        return;
    }
    /* the unfit table too, here (calloc's fresh memory of the main heap,
     * not cleared) and its slots populated by the second thread while the
     * cost rows are read: made by the walk's first out-of-memory put,
     * calloc cleared 28 MB of reused heap with a fault per page on the
     * 126-layer file. Dropped after the walk when no figure came
     * (load_unfit_end): the table the walk would have made, or none. */
    (void)apsolve_unfit_table_new(j->p);
    for (k = 0; k < OK_BUFS; k++)
        if (!(j->buf[k] = malloc(OK_BATCH * sizeof *j->buf[k])))
            break;
    mu = k == OK_BUFS && pthread_mutex_init(&j->mu, NULL) == 0;
    cv = mu && pthread_cond_init(&j->cv, NULL) == 0;
    j->started = cv && pthread_create(&j->tid, NULL, load_job, j) == 0;
    if (!j->started) {
        if (cv)
            pthread_cond_destroy(&j->cv);
        if (mu)
            pthread_mutex_destroy(&j->mu);
        for (k = 0; k < OK_BUFS; k++) {
            free(j->buf[k]);
            j->buf[k] = NULL;
        }
        table_populate(j->p); /* made here after all */
        j->made = 1;
    }
}

/* The tables (made here when no thread makes them): their status. */
static int load_tables(LoadJob *j)
{
    if (!j->started) {
        if (!j->made) {
            j->rc = table_make(j);
            j->made = 1;
        }
        return j->rc;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->made)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    return j->rc;
}

/* Entry idx (fit: both phases fit) put now, or, when it fits, handed to
 * the second thread: the batch being filled, handed over when full (then
 * the next buffer waited for). */
static void load_put(LoadJob *j, ApsolveProblem *p, size_t idx, int fit,
                     const CostdbStageCost *ph0, const CostdbStageCost *ph1)
{
    OkEntry *e;
    if (!fit) { /* the unfit table's: on this thread at any count */
        put_unfit(j->lc, idx, ph0, ph1);
        return;
    }
    if (!j->started) { /* put_one's calls, here where the compiler inlines them */
        if (!j->put_rc) {
            fill_to(j, p, idx);
            j->put_rc = put_ok(j->opt, p, idx, ph0, ph1);
        }
        return;
    }
    e = &j->buf[j->put % OK_BUFS][j->fill++];
    e->idx = idx;
    e->ph0 = *ph0;
    e->ph1 = *ph1;
    if (j->fill < OK_BATCH)
        return;
    pthread_mutex_lock(&j->mu);
    j->len[j->put % OK_BUFS] = j->fill;
    j->put++;
    j->fill = 0;
    pthread_cond_broadcast(&j->cv);
    while (j->put - j->got >= OK_BUFS)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

/* The walk's end: the last batch handed over, the second thread's writes
 * waited for, its thread and buffers released; the tables' status (made
 * here when no entry asked for them). */
static int load_end(LoadJob *j)
{
    if (!j->started)
        return load_tables(j) ? j->rc : j->put_rc;
    pthread_mutex_lock(&j->mu);
    if (j->fill) {
        j->len[j->put % OK_BUFS] = j->fill;
        j->put++;
        j->fill = 0;
    }
    j->ended = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->tid, NULL);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    for (int k = 0; k < OK_BUFS; k++) {
        free(j->buf[k]);
        j->buf[k] = NULL;
    }
    j->started = 0;
    return j->rc ? j->rc : j->put_rc;
}

/* An unfit table made ahead (load_start) that got no figure dropped: the
 * walk makes one only to put a figure in it (apsolve_unfit_share_flush);
 * its slots are all 0 then, as a problem without one reads them. */
static void load_unfit_end(ApsolveProblem *p)
{
    if (!p || !p->unfit_table || p->unfit_table->n)
        return;
    free(p->unfit_table->slot);
    free(p->unfit_table->figs);
    free(p->unfit_table);
    p->unfit_table = NULL;
}

/* The entries come in runs of pairs of phases (costdb_stage_pair_runs),
 * the configs of one (i, j, s) one after the other: its first cell and whether the
 * problem has it are kept for the next entry. */
struct LoadCtx {
    LoadJob *job; /* p's maker, and the writer of the entries that fit */
    ApsolveProblem *p;
    const ApsolveOptions *opt;
    int i, j, s;  /* the range and submesh of base; i = -1: none yet */
    int in;       /* 0 <= i <= j < L and 0 <= s < S */
    size_t base;  /* apsolve_index(p, i, j, s, 0) where in */
    ApsolveUnfitShare share; /* the out-of-memory figures held, each once (put_unfit's, on
                              * the walk's thread) */
    /* the bytes of the memory and times figures populated ahead
     * (populate_figs: the thread that puts the entries that fit) */
    size_t memory_ahead, times_ahead;
    /* the unfit figures' bytes populated ahead, and whether the unfit
     * table's slots were (populate_unfit: the walk's thread) */
    size_t unfit_ahead;
    int unfit_slots_ahead;
};

/* The arrays the puts append to (the memory and times figures here, the
 * unfit figures in populate_unfit) populated ahead of the appends: a
 * stretch of pages a call rather than a fault each at their first write
 * (page_populate.h; the 126-layer file, 1.2 M memory and times figures),
 * up to more figures past those held and beyond. Called by the thread
 * that puts the entries that fit: the tables' sizes are its own. The
 * writer calls it before each batch with the batch's length (after it,
 * the pages of a batch of 4,096 figures, 128 KB, were a third of them
 * written, and faulted, before the call that populated them:
 * docs/perf-apsdense.md); the walk at one thread after each run (a few
 * figures). */
static void populate_figs(LoadCtx *c, ApsolveProblem *p, size_t more)
{
    const ApsolveMemoryTable *m = p->memory;
    const ApsolveTimesTable *t = p->times;
    cdb_populate_ahead(m->figs, m->cap * sizeof *m->figs, (m->n + more) * sizeof *m->figs,
                       &c->memory_ahead);
    cdb_populate_ahead(t->figs, t->cap * sizeof *t->figs, (t->n + more) * sizeof *t->figs,
                       &c->times_ahead);
}

/* populate_figs' work for the unfit table, on the walk's thread (which
 * puts the entries out of memory) after its puts of a run. */
static void populate_unfit(LoadCtx *c, ApsolveProblem *p)
{
    const ApsolveUnfitTable *u = p->unfit_table;
    if (!u)
        return;
    if (!c->unfit_slots_ahead) {
        cdb_populate(u->slot, apsolve_problem_cells(p) * sizeof *u->slot);
        c->unfit_slots_ahead = 1;
    }
    cdb_populate_ahead(u->figs, u->cap * sizeof *u->figs, u->n * sizeof *u->figs,
                       &c->unfit_ahead);
}

/* The memory and apply seconds of an entry from its two phases. */
static void entry_figures(const ApsolveOptions *opt, const CostdbStageCost *ph0,
                          const CostdbStageCost *ph1, ApsolveMemory *m, double *apply)
{
    m->peak = max64(ph0->peak_memory, ph1->peak_memory);
    m->intermediate = max64(ph0->intermediate_size, ph1->intermediate_size);
    m->initial = max64(ph0->initial_size, ph1->initial_size);
    /* The smaller known free memory of the two phases. */
    m->avail = ph0->available_memory > 0 && ph1->available_memory > 0
                   ? (ph0->available_memory < ph1->available_memory ? ph0->available_memory
                                                                    : ph1->available_memory)
                   : max64(ph0->available_memory, ph1->available_memory);
    if (opt->memory_budget > 0)
        m->avail = opt->memory_budget;
    /* apply_cost is per entry, not per phase: the larger known one; any
     * unknown (< 0, NaN) phase makes it unknown. */
    *apply = !(ph0->apply_cost >= 0) || !(ph1->apply_cost >= 0) || !isfinite(ph0->apply_cost) ||
                     !isfinite(ph1->apply_cost)
                 ? -1.0
                 : ph0->apply_cost > ph1->apply_cost ? ph0->apply_cost : ph1->apply_cost;
}

/* The seconds of phase e: its cost, or the time computed for a phase
 * judged out of memory (unfit_cost); < 0 none. */
static double phase_seconds(const CostdbStageCost *e)
{
    return entry_ok(e) ? e->compute_cost : e->unfit_cost > 0 && isfinite(e->unfit_cost)
                                              ? e->unfit_cost : -1.0;
}

/* An entry out of memory in a phase, both phases' times known: its figures
 * in p's unfit table (apsolve_unfit_put), its cost +inf. The same memory and
 * objective rules as put_entry's. */
static inline void put_unfit(LoadCtx *c, size_t idx, const CostdbStageCost *ph0,
                      const CostdbStageCost *ph1)
{
    ApsolveProblem *p = c->p;
    /* The figures follow from the two phases' cost rows alone (and the
     * options, the same for the whole load): the pair of their ids keys
     * them, and an entry whose pair was put before takes the figures that
     * put gave without computing them again (the 126-layer 405B file:
     * 1,745,172 such entries, 105,948 pairs; docs/performance.md
     * "apsolve's load path: out-of-memory figures by their cost rows"). */
    uint64_t key = ph0->cost_id && ph1->cost_id ? (uint64_t)ph0->cost_id << 32 | ph1->cost_id
                                                : 0;
    double t0, t1;
    ApsolveUnfit u;
    if (!p->times || !p->memory ||
        (key && apsolve_unfit_share_put_known(&c->share, p, idx, key) != 0))
        return;
    t0 = phase_seconds(ph0);
    t1 = phase_seconds(ph1);
    if (t0 < 0 || t1 < 0)
        return;
    u.fwd = t0;
    u.bwd = c->opt->inference ? 0 : t1;
    entry_figures(c->opt, ph0, ph1, &u.memory, &u.apply);
    /* without memory the entry stays +inf, as stored; figures already
     * held for another entry are shared (unfit_share.h) */
    (void)apsolve_unfit_share_put_keyed(&c->share, p, idx, key, &u);
}

/* Entry idx, both of whose phases fit, from its forward (ph0) and
 * backward (ph1) phases: APSOLVE_OK, or APSOLVE_ENOMEM (no room for its
 * memory figures; the load fails). */
static inline int put_ok(const ApsolveOptions *opt, ApsolveProblem *p, size_t idx,
                  const CostdbStageCost *ph0, const CostdbStageCost *ph1)
{
    ApsolveMemory m;
    int rc;
    entry_figures(opt, ph0, ph1, &m, &p->apply_cost[idx]);
    /* Inference runs the forward module only (docs/solver.md
     * "Objectives"): no backward pass in the stage cost. */
    p->cost[idx] = opt->inference ? ph0->compute_cost : ph0->compute_cost + ph1->compute_cost;
    /* schema 12's split of the backward (unknown: < 0, read as NULL) */
    rc = apsolve_times_put(p, idx,
                           &(ApsolveTimes){ph0->compute_cost,
                                           opt->inference ? 0 : ph1->compute_cost,
                                           opt->inference       ? 0
                                           : ph1->wgrad_cost >= 0 ? ph1->wgrad_cost
                                                                  : -1.0});
    p->max_n_succ_stages[idx] = apsolve_memory_mnss(&m);
    return rc != APSOLVE_OK ? rc : apsolve_memory_put(p, idx, &m);
}

/* Entry idx from its forward (ph0) and backward (ph1) phases. */
static void put_entry(LoadCtx *c, ApsolveProblem *p, size_t idx, const CostdbStageCost *ph0,
                      const CostdbStageCost *ph1)
{
    /* not both finite and >= 0: put_unfit's (the cell stays +inf) */
    load_put(c->job, p, idx, entry_ok(ph0) && entry_ok(ph1), ph0, ph1);
}

/* A run of entries (costdb_stage_pair_runs: one range and submesh, configs
 * e->config_index .. + n - 1), in order; the cell of the run's first
 * config found once. */
static int put_run(void *ctx, const CostdbStageKey *e, int n, const CostdbStageCost *const *fwd,
                   const CostdbStageCost *const *bwd)
{
    LoadCtx *c = ctx;
    ApsolveProblem *p;
    int lo = 0, hi = n;
    if (!c->p) { /* the first entry: the tables made (LoadJob) */
        if (load_tables(c->job) != APSOLVE_OK)
            return 1; /* ends the walk; the caller reports the tables' status */
        c->p = c->job->p;
    }
    p = c->p;
    if (e->start_layer != c->i || e->end_layer != c->j || e->submesh_index != c->s) {
        c->i = e->start_layer;
        c->j = e->end_layer;
        c->s = e->submesh_index;
        c->in = c->i >= 0 && c->j >= c->i && c->j < p->num_layers && c->s >= 0 &&
                c->s < p->num_submeshes;
        c->base = c->in ? apsolve_index(p, c->i, c->j, c->s, 0) : 0;
    }
    if (!c->in)
        return 0; /* outside the sweep's enumeration: ignored */
    /* the configs within 0 .. num_configs - 1 (others ignored) */
    if (e->config_index < 0)
        lo = -e->config_index < n ? -e->config_index : n;
    if (e->config_index > p->num_configs - n)
        hi = p->num_configs - e->config_index > lo ? p->num_configs - e->config_index : lo;
    for (int k = lo; k < hi; k++)
        if (fwd[k])
            put_entry(c, p, c->base + (size_t)(e->config_index + k), fwd[k], bwd[k]);
    if (!c->job->started) /* else the writer's (load_job) */
        populate_figs(c, p, 0);
    populate_unfit(c, p);
    return 0;
}

int apsolve_problem_from_db(struct Costdb *db, int64_t sweep_id, const ApsolveOptions *opt,
                            ApsolveProblem **out)
{
    return apsolve_problem_from_db_msg(db, sweep_id, opt, out, NULL, 0);
}

int apsolve_problem_from_db_msg(struct Costdb *db, int64_t sweep_id, const ApsolveOptions *opt,
                                ApsolveProblem **out, char *err, size_t errlen)
{
    CostdbSweep sw;
    CostdbSubmesh *subs = NULL;
    CostdbConfig *cfgs = NULL;
    LoadCtx lc;
    LoadJob job = {0};
    size_t ns = 0, nc = 0, k;
    ApsolveProblem *p = NULL;
    int S = 0, C = 0, L, rc, e;

    if (err && errlen)
        err[0] = '\0';
    if (!db || !opt || !out)
        return APSOLVE_EINVAL;
    *out = NULL;
    if (costdb_sweep_get(db, sweep_id, &sw) || costdb_sweep_submeshes(db, sweep_id, &subs, &ns) ||
        costdb_sweep_configs(db, sweep_id, &cfgs, &nc)) {
        rc = APSOLVE_EDB;
        goto cleanup;
    }
    L = sw.num_layers;
    for (k = 0; k < ns; k++)
        if (subs[k].index + 1 > S)
            S = subs[k].index + 1;
    for (k = 0; k < nc; k++)
        if (cfgs[k].config_index + 1 > C)
            C = cfgs[k].config_index + 1;
    /* Say which limit a sweep breaks (the database is input: any of them can) */
    if (err && errlen) {
        if (L < 1 || L > APSOLVE_MAX_LAYERS)
            snprintf(err, errlen, "%d layers: the solver takes 1 to %d", L, APSOLVE_MAX_LAYERS);
        else if (sw.cluster_hosts < 1 || sw.cluster_gpus < 1 ||
                 (int64_t)sw.cluster_hosts * sw.cluster_gpus > APSOLVE_MAX_DEVICES)
            snprintf(err, errlen, "cluster %dx%d: the solver takes 1 to %d devices",
                     sw.cluster_hosts, sw.cluster_gpus, APSOLVE_MAX_DEVICES);
        else if (S > APSOLVE_MAX_SUBMESHES)
            snprintf(err, errlen, "submesh index %d: the solver takes at most %d submeshes",
                     S - 1, APSOLVE_MAX_SUBMESHES);
        else if (C > APSOLVE_MAX_CONFIGS)
            snprintf(err, errlen, "config index %d: the solver takes at most %d configs per "
                     "submesh", C - 1, APSOLVE_MAX_CONFIGS);
    }
    job.L = L;
    job.hosts = sw.cluster_hosts;
    job.gpus = sw.cluster_gpus;
    job.S = S ? S : 1;
    job.C = C ? C : 1;
    job.opt = opt;
    if (!apsolve_problem_shape_ok(job.L, job.hosts, job.gpus, job.S, job.C)) {
        rc = APSOLVE_EINVAL;
        goto cleanup;
    }
    /* The entries, streamed into the problem without an array of them;
     * the tables made meanwhile (LoadJob) */
    memset(&lc, 0, sizeof lc);
    lc.job = &job;
    lc.opt = opt;
    job.lc = &lc;
    lc.i = -1;
    load_start(&job, opt->load_threads);
    lc.unfit_slots_ahead = job.p && job.p->unfit_table; /* made ahead, populated there */
    rc = costdb_stage_pair_runs(db, sweep_id, put_run, &lc);
    e = load_end(&job);
    p = job.p;
    /* the cells after the last entry put (the writer has ended) */
    if (p)
        apsolve_problem_fill_cells(p, job.filled, apsolve_problem_cells(p));
    /* the figures' last puts (out of memory: dropped, as put_unfit's) */
    if (!rc && !e)
        (void)apsolve_unfit_share_flush(&lc.share, p);
    apsolve_unfit_share_free(&lc.share);
    load_unfit_end(p);
    if (e || rc) {
        rc = e ? e : APSOLVE_EDB;
        goto cleanup;
    }
    p->sweep_id = sweep_id;
    for (k = 0; k < ns; k++) {
        if (subs[k].index < 0)
            continue;
        p->submeshes[subs[k].index].hosts = subs[k].hosts;
        p->submeshes[subs[k].index].gpus = subs[k].gpus_per_host;
    }
    for (k = 0; k < nc; k++) {
        ApsolveConfig *cf;
        if (cfgs[k].submesh_index < 0 || cfgs[k].submesh_index >= S || cfgs[k].config_index < 0)
            continue;
        cf = &p->configs[cfgs[k].submesh_index * C + cfgs[k].config_index];
        cf->valid = 1;
        cf->logical_a = cfgs[k].logical_a;
        cf->logical_b = cfgs[k].logical_b;
        cf->force_batch_dim = cfgs[k].force_batch_dim;
        /* Out-of-range variant fields (a corrupt row) make the config
         * unusable rather than plain. */
        cf->variant = cfgs[k].variant;
        if (!costdb_variant_valid(cf->variant))
            cf->valid = 0;
    }
    *out = p;
    p = NULL;
    rc = APSOLVE_OK;
cleanup:
    apsolve_problem_free(&p);
    free(subs);
    free(cfgs);
    return rc;
}

int apsolve_plan_store(struct Costdb *db, const ApsolveProblem *p, const ApsolveOptions *opt,
                       const ApsolvePlan *plan, const char *kind, const char *options_json,
                       int64_t *plan_id)
{
    CostdbPlan cp;
    CostdbPlanStage *st = NULL;
    int rc;

    if (!db || !p || !opt || !plan || !kind)
        return APSOLVE_EINVAL;
    memset(&cp, 0, sizeof cp);
    cp.sweep_id = p->sweep_id;
    snprintf(cp.kind, sizeof cp.kind, "%s", kind);
    snprintf(cp.objective, sizeof cp.objective, "%s", opt->inference ? "inference" : "training");
    cp.micro_batches = opt->micro_batches;
    cp.global_batch = plan->global_batch;
    cp.memory_budget = opt->memory_budget;
    cp.max_stages = opt->max_stages;
    cp.cost = plan->cost;
    /* NaN: not estimated, stored as NULL (costdb_plan_put) */
    cp.full_cost = plan->has_full_cost ? plan->full_cost : NAN;
    /* a plan with a non-finite cost is never feasible */
    cp.feasible = plan->feasible && isfinite(plan->cost);
    cp.solve_seconds = plan->solve_seconds;
    if (options_json && strlen(options_json) >= sizeof cp.options)
        return APSOLVE_EINVAL;
    snprintf(cp.options, sizeof cp.options, "%s", options_json ? options_json : "");
    costdb_now(cp.created_at, sizeof cp.created_at);
    st = calloc(plan->n_stages ? plan->n_stages : 1, sizeof *st);
    if (!st)
        return APSOLVE_ENOMEM;
    for (size_t k = 0; k < plan->n_stages; k++) {
        const ApsolveStage *s = &plan->stages[k];
        st[k].stage_index = (int)k;
        st[k].start_layer = s->start_layer;
        st[k].end_layer = s->end_layer;
        st[k].submesh_index = s->submesh;
        st[k].submesh_hosts = s->hosts;
        st[k].submesh_gpus = s->gpus;
        st[k].config_index = s->config;
        st[k].logical_a = s->logical_a;
        st[k].logical_b = s->logical_b;
        st[k].force_batch_dim = s->force_batch_dim;
        st[k].fwd_cost = s->fwd_cost;
        st[k].bwd_cost = s->bwd_cost;
        if (p->memory && s->submesh >= 0 && s->config >= 0)
            st[k].peak_memory = apsolve_memory_at(p, apsolve_index(p, s->start_layer,
                                                                   s->end_layer, s->submesh,
                                                                   s->config))->peak;
        st[k].memory_needed = s->memory_needed;
        st[k].available_memory = s->available_memory;
    }
    rc = costdb_plan_put(db, &cp, st, plan->n_stages) ? APSOLVE_EDB : APSOLVE_OK;
    if (!rc && plan_id)
        *plan_id = cp.id;
    free(st);
    return rc;
}

int apsolve_stage_inputs(Costdb *db, int64_t sweep, int start, int end, int s, int c,
                         const char *what, CostdbFabric *f, CostdbPlacement **pl, size_t *n,
                         char *why, size_t len)
{
    CostdbSweep sw;
    CostdbHardware hw;
    *pl = NULL;
    *n = 0;
    if (costdb_sweep_get(db, sweep, &sw) < 0 || sw.hardware_id <= 0 ||
        costdb_hardware_get(db, sw.hardware_id, &hw) < 0) {
        snprintf(why, len, "sweep %lld has no hardware row to price %s", (long long)sweep, what);
        return -1;
    }
    costdb_fabric_from_hardware(&hw, f);
    if (costdb_placements_get(db, sweep, start, end, s, c, pl, n) < 0) {
        snprintf(why, len, "layers %d-%d: placements: %s", start, end, costdb_errmsg(db));
        return -1;
    }
    return 0;
}
