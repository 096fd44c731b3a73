/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search step of a session (session_int.h): candidates (a sweep
 * at one micro-batch size with its loaded problem), the schedule choice
 * when --schedule is not given, and the search over every micro-batch size
 * with a sweep, keeping the best plan with the candidate it was made on.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "chunk_first.h"
#include "clock.h"
#include "costdb.h"
#include "frameworks.h"
#include "plural.h"
#include "schedule.h"
#include "search_pool.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

/* The least cost of a stage of at least v layers that starts at layer 0
 * or ends at layer L - 1, whichever is larger: every plan whose stages hold
 * whole chunks of v layers has such a first and last stage, so B x this is
 * a lower bound of its time under every chunked schedule (interleaved 1F1B
 * and interleaved ZB take at least B x their largest stage: the bubble
 * term (sum - max) / v, less ZB's fill of at most a stage's cost per
 * boundary, is not negative), and of its full estimate, which adds
 * transfers and the apply step. Non-decreasing in v (fewer ranges). */
static double chunk_bound(const ApsolveProblem *p, int v)
{
    double first = INFINITY, last = INFINITY;
    int L = p->num_layers;
    for (int j = v - 1; j < L; j++)
        for (int s = 0; s < p->num_submeshes; s++)
            for (int k = 0; k < p->num_configs; k++) {
                double a = p->cost[apsolve_index(p, 0, j, s, k)];
                double b = p->cost[apsolve_index(p, L - 1 - j, L - 1, s, k)];
                first = a < first ? a : first;
                last = b < last ? b : last;
            }
    return first > last ? first : last;
}

/* The chunked schedules' searches side by side (chunked, --threads): the families
 * (interleaved, interleaved ZB, ZB-V) each on a thread of its own, with its own copy of
 * the candidate, table (lent: ChunkTask.lend) and stage floor; the problem is only read.
 * The database is read under lock. Each family publishes its best full estimate so far
 * (best[f]); a later family (in the serial order) takes the least of the earlier ones'
 * as its plan to beat too, a bar that is never below the one the serial search would
 * give it (the earlier families' final bests): chunked then combines the families' plans
 * in the serial order (docs/performance.md, "apsolve's independent searches on several
 * cores"). NULL: the serial search. */
typedef struct ChunkRun {
    pthread_mutex_t lock;
    pthread_cond_t news;              /* the interleaved family ended */
    double base;                      /* every family's first plan to beat */
    double best[3];
    int ended;                        /* the interleaved family ended */
    int zb;                           /* -1, or whether the zero-bubble families run
                                       * (apsolve_zero_bubble_known), said by the first */
} ChunkRun;

static void chunk_lock(ChunkRun *cr)
{
    if (cr)
        pthread_mutex_lock(&cr->lock);
}

static void chunk_unlock(ChunkRun *cr)
{
    if (cr)
        pthread_mutex_unlock(&cr->lock);
}

/* Family fam's best so far is price; ended: it has ended (its best
 * unchanged). */
static void chunk_publish(ChunkRun *cr, int fam, double price, int ended)
{
    if (!cr)
        return;
    pthread_mutex_lock(&cr->lock);
    if (price < cr->best[fam])
        cr->best[fam] = price;
    if (ended && fam == 0) {
        cr->ended = 1;
        pthread_cond_broadcast(&cr->news);
    }
    pthread_mutex_unlock(&cr->lock);
}

/* The plan to beat of family fam's search: best, its own, or an earlier
 * family's best so far where that is lower. */
static double chunk_bar_now(ChunkRun *cr, int fam, double best)
{
    chunk_lock(cr);
    for (int f = 0; cr && f < fam; f++)
        best = cr->best[f] < best ? cr->best[f] : best;
    chunk_unlock(cr);
    return best;
}

/* Whether try_chunks keeps il (a v's plan) over best: *price its full
 * estimate when it does. */
static int chunk_keeps(Costdb *db, ChunkRun *cr, const ApsolveCand *c, const ApsolvePlan *il,
                       int verdict, double best, double *price)
{
    ApsolveFwVerdict fv;
    int keeps;
    if (!il->feasible || (verdict && il->n_stages <= 1))
        return 0;
    chunk_lock(cr);
    keeps = (!verdict ||
             (apsolve_plan_frameworks(db, c->sweep, c->sw.dtype, il, &fv) == 0 && fv.runs)) &&
            (*price = apsolve_full_price(db, c->sweep, il)) < best;
    chunk_unlock(cr);
    return keeps;
}

/* One v's search (apsolve_solve_shared), one stage count at a time into
 * cs (dp_counts.c), want scratch of nmax + 1. A count whose floor
 * (each[n]) reaches best holds only plans whose full estimate reaches it.
 * Below a plan to beat, the other counts are first searched cut at
 * apsolve_chunk_bar(best) (as apsolve_solve_shared_below): none at or
 * below the bar, and no plan of v is kept, *il NULL (docs/performance.md,
 * "Every chunked search cut at the plan to beat"); a count answering above
 * it (or infeasible) holds no plan at or below it, so is not the whole
 * search's best. The counts left are searched whole: their best is the
 * whole search's unless a count left out by its floor holds a better one.
 * When chunk_keeps keeps it (*keeps, *price), the other counts are
 * searched whole too and the whole search's plan and counts taken (judged
 * again if a floor's count holds it): each count is searched whole once
 * (docs/performance.md, "apsolve's chunked searches: each stage count
 * searched once"). */
static int chunk_solve(Costdb *db, ChunkRun *cr, const ApsolveCand *c, const ApsolveOptions *io,
                       ApsolveDpShared *sh, ApsolveCounts *cs, const double *each,
                       unsigned char *want, int nmax, int verdict, double best,
                       const ApsolveStageFloor *fl, ApsolvePlan **il, int *keeps, double *price)
{
    int e = 0, top;
    const ApsolvePlan *top_plan;
    *il = NULL;
    *keeps = 0;
    apsolve_counts_clear(cs);
    for (int n = 0; n <= nmax; n++)
        want[n] = !(each && apsolve_chunk_skip(each[n], io->micro_batches, best));
    if (best < INFINITY) {
        int ns[APSOLVE_MAX_LAYERS], count = 0, straddle_free;
        double bar;
        for (int n = 1; n <= nmax && count < APSOLVE_MAX_LAYERS; n++)
            if (want[n] && apsolve_schedule_valid((ApsolveSchedule)io->schedule,
                                                  io->virtual_stages, io->micro_batches, n,
                                                  NULL, 0))
                ns[count++] = n;
        chunk_lock(cr);
        straddle_free = apsolve_sweep_straddle_free(db, c->sweep);
        chunk_unlock(cr);
        bar = apsolve_chunk_bar_floor(c->p, io, best, ns, count, straddle_free, fl);
        if ((e = apsolve_solve_counts(c->p, io, sh, want, bar, cs)) != 0 ||
            !apsolve_counts_narrow(cs, want, bar))
            goto done;
    }
    if ((e = apsolve_solve_counts(c->p, io, sh, want, INFINITY, cs)) != 0)
        goto done;
    if ((top = apsolve_counts_best(cs)) < 0) {
        e = APSOLVE_EINFEASIBLE;
        goto done;
    }
    if (!(*keeps = chunk_keeps(db, cr, c, cs->plan[top], verdict, best, price)))
        goto done;
    top_plan = cs->plan[top];
    if ((e = apsolve_counts_whole(c->p, io, sh, cs, il)) == 0 && *il != top_plan)
        *keeps = chunk_keeps(db, cr, c, *il, verdict, best, price);
done:
    apsolve_counts_clear(cs);
    *keeps &= !e;
    return e;
}

/* One chunked schedule of the auto search (docs/solver.md, "Schedules"): for v = vmin ..
 * vmax model chunks per device (each stage's layers split into whole chunks:
 * io.whole_chunks, so v up to the layers; Megatron-LM runs vpp of 2 to 20 in its published
 * configurations), the DP's best plan under kind with v chunks, whose in-flight count is
 * the schedule's (apsolve_schedule_in_flight with v, through the options); it replaces *pl,
 * and c's options follow, when its full estimate (which pays v times the stage-boundary
 * transfers) is lower and, with verdict, a framework runs it as priced. The v are tried in
 * order and stop, exactly, once B x chunk_bound(v) reaches the best full estimate (no plan
 * of v or more chunks can beat it); a v whose floor (apsolve_chunk_floor: at each stage
 * count n its schedule allows, B x the least largest stage cost of a cut into n stages of
 * whole chunks, or of its least work over the D devices) reaches it at every n is skipped
 * before its options are made: none of its plans could beat the best (solver/chunk_floor.c
 * has the proof); a v that runs leaves out the stage counts whose own floor reaches it, and
 * searches them only when it wins (chunk_solve), so the plan and counts kept are the same.
 * From no plan to beat, the interleaved family searches the v its floors rank best first
 * (chunk_first.c: the same plan). 0, or an apsolve error other than infeasibility. */
static int try_chunks(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, int kind, int vmin,
                      int vmax, int verdict, ApsolveDpShared *sh, ApsolveStageFloor *fl,
                      ChunkRun *cr, int fam)
{
    /* *pl NULL (plain_search): no plan to beat yet; cr: that plan chunked priced */
    double best = cr ? cr->base : *pl ? apsolve_full_price(db, c->sweep, *pl) : INFINITY,
           B = c->opt.micro_batches;
    int nmax = c->p->num_layers < c->p->num_devices ? c->p->num_layers : c->p->num_devices;
    int have_floor = fl != NULL, e = 0, keeps;
    double *each;
    unsigned char *want;
    ApsolveCounts cs;
    ApsolveChunkOrder order;
    if (c->opt.max_stages > 0 && c->opt.max_stages < nmax)
        nmax = c->opt.max_stages;
    each = malloc(((size_t)nmax + 1) * sizeof *each);
    want = malloc((size_t)nmax + 1);
    if (apsolve_counts_init(&cs, nmax) || !each || !want) {
        e = APSOLVE_ENOMEM;
        goto done;
    }
    /* the interleaved family from no plan to beat: the v its floors rank
     * best first, its full estimate the others' bar (chunk_first.c) */
    apsolve_chunk_order_start(&order, fl, kind, vmin,
                              vmax < c->p->num_layers ? vmax : c->p->num_layers,
                              c->opt.micro_batches, nmax, chunk_bar_now(cr, fam, best), each);
    for (int v; (v = apsolve_chunk_order_next(&order)) >= 0;) {
        ApsolveOptions io = c->opt;
        ApsolvePlan *il = NULL;
        double price, floor = INFINITY,
                      bar = apsolve_chunk_order_bar(&order, v, chunk_bar_now(cr, fam, best));
        if (B * chunk_bound(c->p, v) >= bar) /* not the first v: its bar is +inf */
            break;
        io.schedule = kind;
        io.virtual_stages = v;
        io.whole_chunks = 1;
        if (have_floor) {
            /* ZB-V's fill floor and interleaved ZB's sum floor over the
             * stage entries a plan under best can hold (chunk_floor.c) */
            if (kind == APSOLVE_SCHEDULE_ZBV || kind == APSOLVE_SCHEDULE_INTERLEAVED_ZB) {
                apsolve_stage_floor_roots(fl);
                apsolve_stage_floor_under(fl, bar / B * (1 + 1e-9));
            }
            /* ZB-V's device paths under the memory rule (chunk_floor_mem.c) */
            fl->opt = kind == APSOLVE_SCHEDULE_ZBV ? &io : NULL;
            apsolve_chunk_floor_each(fl, kind, v, c->opt.micro_batches, nmax, each);
            fl->opt = NULL;
            for (int n = 1; n <= nmax; n++)
                floor = each[n] < floor ? each[n] : floor;
            if (apsolve_chunk_skip(floor, c->opt.micro_batches, bar))
                continue;
        }
        e = chunk_solve(db, cr, c, &io, sh, &cs, have_floor ? each : NULL, want, nmax, verdict,
                        bar, fl, &il, &keeps, &price);
        if (e == APSOLVE_EINFEASIBLE) {
            e = 0;
            continue;
        }
        if (e)
            goto done;
        if (il && keeps) {
            apsolve_plan_free(pl);
            *pl = il;
            c->opt = io;
            best = price;
            apsolve_chunk_order_kept(&order, v);
            chunk_publish(cr, fam, price, 0);
        } else {
            apsolve_plan_free(&il);
        }
    }
done:
    apsolve_counts_free(&cs);
    free(each);
    free(want);
    return e;
}

/* The auto search's schedule choice when --schedule is not given (docs/
 * solver.md, "Schedules"): beside the 1F1B plan *pl of candidate c, the
 * best interleaved plan with v = 2 .. L model chunks per device
 * (Megatron-LM's virtual pipeline; the DP keeps only stage counts that
 * divide B and stages of whole chunks), by try_chunks. */
static int try_interleaved(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, ApsolveDpShared *sh,
                           ApsolveStageFloor *fl)
{
    if (c->opt.inference || c->opt.micro_batches < 2 || c->p->num_devices < 2)
        return 0;
    return try_chunks(db, c, pl, APSOLVE_SCHEDULE_INTERLEAVED, 2, c->p->num_layers, 0, sh, fl,
                      NULL, 0);
}

int apsolve_zero_bubble_known(const ApsolveCand *c)
{
    return !c->opt.inference && c->opt.micro_batches >= 2 && c->p->num_devices >= 2 &&
           apsolve_problem_wgrad_known(c->p);
}

/* The zero-bubble schedules a framework runs, when --schedule is not given
 * (docs/solver.md, "Schedules"): beside the plan *pl of candidate c, the
 * best plan under PyTorch's interleaved zero bubble with v = 2 .. L model
 * chunks per device and the best under its ZB-V (2 chunks), both of
 * whole-layer chunks (try_chunks); either replaces *pl when its full
 * estimate is lower and a framework runs it as priced (the verdict:
 * torchtitan only, and only a uniform pipeline in bf16 or fp32; a plan
 * none runs could never be launched). Not tried without every entry's
 * weight-gradient seconds (schema 12), nor for ZB-H1, which no framework
 * runs on one chunk per device. 0, or an apsolve error other than
 * infeasibility. */
static int try_zero_bubble(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, ApsolveDpShared *sh,
                           ApsolveStageFloor *fl)
{
    int e;
    if (!apsolve_zero_bubble_known(c))
        return 0;
    e = try_chunks(db, c, pl, APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, c->p->num_layers, 1, sh, fl,
                   NULL, 0);
    return e ? e : try_chunks(db, c, pl, APSOLVE_SCHEDULE_ZBV, 2, 2, 1, sh, fl, NULL, 0);
}

/* One family of the chunked schedules on a thread (chunked_threads). */
typedef struct ChunkTask {
    Costdb *db;
    ChunkRun *cr;
    ApsolveCand c;                    /* a copy: its options follow the family's plan */
    ApsolvePlan *pl;                  /* the family's plan, or NULL */
    ApsolveDpShared *sh;              /* chunked's table (the first family), or NULL: one of
                                       * its own */
    const ApsolveDpShared *lend;      /* sh NULL: the first family's, lent once it ended */
    int kind, vmax, verdict, e;
    ApsolveStageFloor fl;             /* the family's floor, when have */
    int have;
} ChunkTask;

/* The interleaved ZB family (task 1, which the pool starts beside the interleaved one):
 * whether the zero-bubble families run (a walk of every entry, no longer on the first
 * thread before any family starts), and both zero-bubble families' floors with their
 * roots (of p alone: as each family made its own), made while it would wait idle and
 * ZB-V's no longer on the thread that ends the interleaved family; then cr->zb. */
static void chunk_zb_ready(ChunkRun *cr, ChunkTask *t)
{
    int zb = apsolve_zero_bubble_known(&t[1].c);
    for (int f = 1; zb && f <= 2; f++)
        if ((t[f].have = apsolve_stage_floor_init_plain(&t[f].fl, t[f].c.p) == APSOLVE_OK))
            apsolve_stage_floor_roots(&t[f].fl);
    pthread_mutex_lock(&cr->lock);
    cr->zb = zb;
    pthread_cond_broadcast(&cr->news);
    pthread_mutex_unlock(&cr->lock);
}

static void chunk_task(void *ctx, int i)
{
    ChunkTask *t = (ChunkTask *)ctx + i;
    ApsolveDpShared *own = NULL;
    int zb;
    if (i == 1)
        chunk_zb_ready(t->cr, t - 1);
    else if (i == 0)
        t->have = apsolve_stage_floor_init_plain(&t->fl, t->c.p) == APSOLVE_OK;
    /* the zero-bubble families wait for the interleaved one's plan to beat
     * (started before them: the pool takes the tasks in order), the
     * serial search's: from a weaker one they search much more (a ZB
     * search from the interleaved family's first plan took 1.7 times the
     * serial ZB and ZB-V searches together) */
    pthread_mutex_lock(&t->cr->lock);
    while (i > 0 && (t->cr->zb < 0 || (t->cr->zb && !t->cr->ended)))
        pthread_cond_wait(&t->cr->news, &t->cr->lock);
    zb = t->cr->zb;
    pthread_mutex_unlock(&t->cr->lock);
    if (i > 0 && !zb)
        return; /* no zero-bubble family: none made its floor */
    if (!t->sh && !(own = apsolve_dp_shared_new())) {
        t->e = APSOLVE_ENOMEM;
    } else {
        /* the first family's table (seen after the lock) no longer changes, and this
         * family's would be the same (apsolve_dp_shared_borrow) */
        if (own && t->lend)
            apsolve_dp_shared_borrow(own, t->lend);
        t->e = try_chunks(t->db, &t->c, &t->pl, t->kind, 2, t->vmax, t->verdict,
                          own ? own : t->sh, t->have ? &t->fl : NULL, t->cr, i);
    }
    chunk_publish(t->cr, i, INFINITY, 1); /* a later family waits for none */
    if (t->have)
        apsolve_stage_floor_free(&t->fl);
    apsolve_dp_shared_free(own);
}

/* chunked on up to threads threads: the families of try_interleaved and
 * try_zero_bubble side by side (ChunkRun), each from c's plan to beat
 * *pl, then combined in the serial order: a family's plan replaces the
 * best so far when its full estimate is lower, as try_chunks keeps it.
 * That is the serial search's plan: a family's search keeps the first v of
 * least full estimate among those below its plan to beat, and its bar
 * (pruning only) never leaves out a plan below the serial one's. The
 * errors are the first family's, in that order, that has one. */
static int chunked_threads(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, ApsolveDpShared *sh,
                           int threads)
{
    ChunkRun cr;
    ChunkTask t[3];
    int n = 0, e = 0;
    cr.base = *pl ? apsolve_full_price(db, c->sweep, *pl) : INFINITY;
    for (int f = 0; f < 3; f++)
        cr.best[f] = INFINITY;
    cr.ended = 0;
    cr.zb = -1;
    /* the zero-bubble families' tasks always: the first says whether they run */
    t[n++] = (ChunkTask){db, &cr, *c, NULL, sh, NULL, APSOLVE_SCHEDULE_INTERLEAVED,
                         c->p->num_layers, 0, 0, .have = 0};
    t[n++] = (ChunkTask){db, &cr, *c, NULL, NULL, sh, APSOLVE_SCHEDULE_INTERLEAVED_ZB,
                         c->p->num_layers, 1, 0, .have = 0};
    t[n++] = (ChunkTask){db, &cr, *c, NULL, NULL, sh, APSOLVE_SCHEDULE_ZBV, 2, 1, 0, .have = 0};
    if (pthread_mutex_init(&cr.lock, NULL))
        return APSOLVE_ENOMEM;
    if (pthread_cond_init(&cr.news, NULL)) {
        pthread_mutex_destroy(&cr.lock);
        return APSOLVE_ENOMEM;
    }
    apsolve_pool_run(threads, n, chunk_task, t);
    pthread_cond_destroy(&cr.news);
    pthread_mutex_destroy(&cr.lock);
    for (int f = 0; f < n && !e; f++)
        e = t[f].e;
    for (int f = 0; f < n; f++) {
        if (!e && t[f].pl && cr.best[f] < cr.base) {
            apsolve_plan_free(pl);
            *pl = t[f].pl;
            c->opt = t[f].c.opt;
            cr.base = cr.best[f];
        } else {
            apsolve_plan_free(&t[f].pl);
        }
    }
    return e;
}

/* The chunked schedules of c's problem (try_interleaved, then
 * try_zero_bubble) with one stage floor: the interleaved search reads its
 * cost and work, the zero-bubble ones its roots too, made once for both
 * (apsolve_stage_floor_init_plain) rather than the whole floor rebuilt by
 * each of the three (docs/performance.md, "apsolve on the 126-layer 405B:
 * the time by phase, and six exact cuts", 6). */
static int chunked(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, ApsolveDpShared *sh,
                   int threads)
{
    ApsolveStageFloor fl;
    int have, e;
    if (c->opt.inference || c->opt.micro_batches < 2 || c->p->num_devices < 2)
        return 0; /* neither tries a chunked schedule */
    if (threads > 1)
        return chunked_threads(db, c, pl, sh, threads);
    have = apsolve_stage_floor_init_plain(&fl, c->p) == APSOLVE_OK;
    e = try_interleaved(db, c, pl, sh, have ? &fl : NULL);
    if (e == 0)
        e = try_zero_bubble(db, c, pl, sh, have ? &fl : NULL);
    if (have)
        apsolve_stage_floor_free(&fl);
    return e;
}

/* The search without --schedule as it was: the 1F1B plan (headroom kept
 * where a plan keeps it), then the chunked schedules with its full
 * estimate as their plan to beat. */
static int plain_in_order(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, int threads)
{
    int e = apsolve_solve_keep_headroom(c->p, &c->opt, pl);
    if (e == 0) {
        /* one table of stage options for every chunked search of c->p (its
         * problem and objective stay) */
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        e = chunked(db, c, pl, sh, threads);
        apsolve_dp_shared_free(sh);
    }
    return e;
}

/* The first DPs alone of the 1F1B search under headroom h (its
 * feasibility, apsolve_solve_below with bar -inf); *odd when their plan is
 * not feasible (the whole search's may not be either). */
static int plain_feasible(const ApsolveProblem *p, ApsolveOptions *o, ApsolveDpShared *sh,
                          int h, int *odd)
{
    ApsolvePlan *f = NULL;
    int e;
    o->search_headroom = h;
    e = apsolve_solve_below_kept(p, o, sh, -INFINITY, 0, &f);
    *odd = e == APSOLVE_OK && !f->feasible;
    apsolve_plan_free(&f);
    return e;
}

/* The search without --schedule (plain_in_order's plan, counts, headroom
 * and options exactly), ordered so the 1F1B search has a plan to beat:
 * the 1F1B search's feasibility and headroom first (its first DPs), then
 * the chunked schedules from no plan to beat (try_chunks keeps the first
 * least full estimate C, as it does after a 1F1B plan that C beats), then
 * the 1F1B search cut at apsolve_plain_bar(C) (apsolve_solve_below): a
 * total_cost above the bar means the 1F1B plan's full estimate is above C,
 * and the chunked plan stays; else the 1F1B search runs whole and its plan
 * wins when its full estimate is at or below C (plain_in_order keeps it on
 * a tie). Where a plan the headroom rule reads is not feasible, the search
 * runs as it was. */
static int plain_search(Costdb *db, ApsolveCand *c, ApsolvePlan **pl, int threads)
{
    ApsolveOptions asked = c->opt, o = c->opt;
    ApsolvePlan *one = NULL;
    /* one table of stage options for the 1F1B searches, cut and whole, and
     * the chunked ones (apsolve_solve_below_kept: every range where 1F1B's
     * options split no stage into chunks, as apsolve_solve_shared builds
     * it; no table reads the headroom), built by the first; a 1F1B table
     * of whole chunks only is the cut searches' alone */
    ApsolveDpShared *sh = apsolve_dp_shared_new(), *own = NULL;
    int h = o.headroom_bytes > 0 || o.headroom_percent > 0, odd = 0, e;
    double C;
    *pl = NULL;
    e = sh ? plain_feasible(c->p, &o, sh, h, &odd) : APSOLVE_ENOMEM;
    if (!odd && h && e == APSOLVE_EINFEASIBLE)
        e = plain_feasible(c->p, &o, sh, 0, &odd);
    if (!odd && !e && apsolve_dp_shared_whole_only(sh) && !(own = apsolve_dp_shared_new()))
        e = APSOLVE_ENOMEM;
    if (odd || e)
        apsolve_dp_shared_free(sh);
    if (odd)
        return plain_in_order(db, c, pl, threads);
    c->opt.search_headroom = o.search_headroom;
    if (e)
        return e;
    e = chunked(db, c, pl, own ? own : sh, threads);
    apsolve_dp_shared_free(own);
    if (e) {
        apsolve_dp_shared_free(sh);
        return e;
    }
    C = *pl ? apsolve_full_price(db, c->sweep, *pl) : INFINITY;
    if (C < INFINITY) {
        double bar = apsolve_plain_bar(c->p, &o, C, apsolve_sweep_straddle_free(db, c->sweep));
        e = apsolve_solve_below_kept(c->p, &o, sh, bar, 1, &one);
        if (e == APSOLVE_OK && one->feasible && one->total_cost > bar) {
            apsolve_plan_free(&one);
            apsolve_dp_shared_free(sh);
            return 0;
        }
        apsolve_plan_free(&one);
    }
    e = apsolve_dp_shared_whole_only(sh) ? apsolve_solve(c->p, &o, &one)
                       : apsolve_solve_shared(c->p, &o, sh, &one);
    apsolve_dp_shared_free(sh);
    if (e == APSOLVE_OK && !one->feasible && o.search_headroom) {
        apsolve_plan_free(&one);
        apsolve_plan_free(pl);
        c->opt = asked;
        return plain_in_order(db, c, pl, threads);
    }
    if (e)
        return e;
    if (!*pl || apsolve_full_price(db, c->sweep, one) <= C) {
        apsolve_plan_free(pl);
        *pl = one;
        c->opt = o;
    } else {
        apsolve_plan_free(&one);
    }
    return 0;
}

/* Decides the best plan at micro-batch size m (the family's sweep k, own:
 * the main sweep): its candidate (main_c, or the sweep at B = G / m), solved
 * under the request's schedule or, without --schedule, the cheaper of 1F1B
 * and interleaved; says its objective when the search spans sizes; keeps
 * the plan, with its candidate, when it beats the best so far. An
 * infeasible size is skipped; any other solver error ends the run. */
static int search_size(ApsolveRun *r, size_t k, int64_t m, int own, int64_t asked)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    ApsolveCand c;
    ApsolvePlan *pl = NULL;
    int e;
    if (own) {
        c = r->main_c;
    } else {
        if (apsolve_cand_load(r->db, a, r->bs[k].sweep_id, r->G, m, (int)(r->G / m), &c))
            return 1;
        c.opt.objective = a->opt.objective;
    }
    c.opt.schedule = a->schedule;
    c.opt.virtual_stages = a->virtual_stages;
    /* the search keeps the memory headroom; where no plan leaves it, the
     * best plan within the raw capacity is searched (and warned about) */
    e = a->schedule_set ? apsolve_solve_keep_headroom(c.p, &c.opt, &pl)
                        : plain_search(r->db, &c, &pl, apsolve_run_threads(r));
    if (e && e != APSOLVE_EINFEASIBLE) {
        apsolve_fail(a, APSOLVE_ERROR_FAILED, "solving sweep %lld (micro-batch size %lld): %s",
                     (long long)c.sweep, (long long)m, apsolve_strerror(e));
        apsolve_plan_free(&pl);
        if (!own)
            apsolve_cand_free(&c);
        return 1;
    }
    if (!a->quiet && r->nbs > 1 && !asked && e)
        apsolve_say(a, "micro-batch size %lld (sweep %lld, %d %s): infeasible",
                    (long long)m, (long long)c.sweep, c.opt.micro_batches,
                    costdb_plural(c.opt.micro_batches, "micro-batch", "micro-batches"));
    else if (!a->quiet && r->nbs > 1 && !asked)
        apsolve_say(a, "micro-batch size %lld (sweep %lld, %d %s): objective %.6g s%s%s%s",
                    (long long)m, (long long)c.sweep, c.opt.micro_batches,
                    costdb_plural(c.opt.micro_batches, "micro-batch", "micro-batches"),
                    pl->total_cost, pl->schedule != APSOLVE_SCHEDULE_1F1B ? " (" : "",
                    pl->schedule != APSOLVE_SCHEDULE_1F1B
                        ? apsolve_schedule_name((ApsolveSchedule)pl->schedule) : "",
                    pl->schedule != APSOLVE_SCHEDULE_1F1B ? ")" : "");
    /* a plan that keeps the headroom beats one that does not */
    if (!e && (!s->autop || c.opt.search_headroom > r->auto_c.opt.search_headroom ||
               (c.opt.search_headroom == r->auto_c.opt.search_headroom &&
                apsolve_plan_better(pl, s->autop)))) {
        apsolve_plan_free(&s->autop);
        s->autop = pl;
        apsolve_plan_batch(s->autop, &c);
        if (r->have_auto_c)
            apsolve_cand_free(&r->auto_c);
        r->have_auto_c = !own;
        r->auto_c = c;
    } else {
        apsolve_plan_free(&pl);
        if (!own)
            apsolve_cand_free(&c);
    }
    return 0;
}

/* Decides what an empty search means: why no plan (no size divides the
 * global batch, or apsolve_explain on the main candidate); without a given
 * plan that ends the run (exit 3), beside one it is said and the run goes
 * on with the given plan alone. */
static int no_auto_plan(ApsolveRun *r, size_t tried)
{
    const ApsolveRequest *a = r->a;
    ApsolveOptions o = r->main_c.opt;
    char err[512];
    o.schedule = a->schedule;
    o.virtual_stages = a->virtual_stages;
    if (!tried)
        snprintf(err, sizeof err, "no sweep's micro-batch size divides the global batch %lld",
                 (long long)r->G);
    else
        apsolve_explain(r->main_c.p, &o, err, sizeof err);
    if (!r->s->given)
        return apsolve_fail(a, APSOLVE_ERROR_INFEASIBLE, "no feasible plan: %s", err);
    apsolve_say(a, "no feasible plan: %s", err);
    return 0;
}

/* A sweep of Alpa's plain space only (no memory levels, recomputation or
 * ZeRO) whose auto plan pipelines the model or fills a device: the plans
 * an expert would weigh (ZeRO/FSDP data parallelism, recomputation,
 * Megatron-style sharding) are not in it; say which sweep option adds
 * them (on llama-3-8b 1x8 the whole space's plan is ZeRO-2 data
 * parallelism, 16 % faster than the plain space's two-stage pipeline:
 * bench/newcomer.sh). */
static void plain_space_note(const ApsolveRun *r)
{
    const ApsolveProblem *p = r->auto_c.p;
    const ApsolvePlan *pl = r->s->autop;
    int tight = 0;
    for (int i = 0; p && i < p->num_submeshes * p->num_configs; i++)
        if (p->configs[i].valid && !costdb_variant_is_plain(p->configs[i].variant))
            return;
    for (size_t k = 0; pl && k < pl->n_stages; k++)
        if (pl->stages[k].available_memory > 0 &&
            pl->stages[k].memory_needed > pl->stages[k].available_memory / 10 * 8)
            tight = 1;
    if (!pl || (pl->n_stages <= 1 && !tight))
        return;
    apsolve_say(r->a, "note: sweep %lld holds Alpa's plain space only (no memory levels, "
                "recomputation or ZeRO) and its best plan %s; approf sweep --variants all adds "
                "ZeRO (FSDP-style) data parallelism, recomputation and Megatron-style sharding "
                "for apsolve to choose from (docs/variants.md)", (long long)r->auto_c.sweep,
                pl->n_stages > 1 ? "is a pipeline" : "fills a device to 80 % or more");
}

/* Decides the auto plan's output: made on auto_c (when the main sweep won,
 * main_c with the schedule its plan chose), after the given plan; its
 * bubble warnings and the solve time: the whole auto search's since t0
 * (every schedule, size and step), then the chosen plan's own DP. */
static void keep_auto_plan(ApsolveRun *r, double t0)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    if (!r->have_auto_c) {
        int headroom = r->auto_c.opt.search_headroom;
        r->auto_c = r->main_c;
        r->auto_c.opt.search_headroom = headroom;
        r->auto_c.opt.schedule = s->autop->schedule;
        r->auto_c.opt.virtual_stages = s->autop->virtual_stages;
    }
    r->out_c[s->nout] = &r->auto_c;
    s->outs[s->nout++] = (ApsolveOutput){.label = "auto", .kind = "auto", .plan = s->autop};
    apsolve_warn_batches(a, s->autop, "auto");
    apsolve_warn_headroom(a, s->autop, "auto");
    if (!a->quiet)
        plain_space_note(r);
    if (!a->quiet)
        apsolve_say(a, "solved in %.3f ms: the whole auto search (every schedule, size and "
                    "step); the chosen plan's own DP %.3f ms (%ld threshold DPs over %ld "
                    "distinct stage costs)", (costdb_monotonic_seconds() - t0) * 1e3,
                    s->autop->solve_seconds * 1e3, s->autop->dp_evaluations,
                    s->autop->candidates);
}

/* The size the request pins: --micro-batch-size and --micro-batches pin
 * it, and so does --sweep unless --global-batch asks for the search; 0:
 * every size. */
static int64_t asked_size(const ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    return a->micro_batch_size > 0 || a->micro_batches > 0 ||
                   (a->sweep > 0 && a->global_batch <= 0)
               ? r->micro : 0;
}

int apsolve_size_searched(const ApsolveRun *r, size_t k, int64_t *m, int *own)
{
    int64_t asked = asked_size(r);
    if (k >= r->nbs && !(r->nbs == 0 && k == 0))
        return 0;
    *m = r->nbs ? r->bs[k].micro_batch_size : r->micro;
    *own = r->nbs == 0 || r->bs[k].sweep_id == r->main_c.sweep;
    if (asked > 0 && *m != asked)
        return 0;
    return *own || !(r->G <= 0 || *m <= 0 || r->G % *m || r->a->micro_batches > 0 ||
                     r->G / *m > COSTDB_MAX_MICRO_BATCHES);
}

/* The auto search step: decides which micro-batch sizes to try (every size
 * with a sweep in the family whose size divides the global batch, or only
 * the one asked for) and keeps the best objective over them; then partial
 * recomputation (session_autorl.c), activation offload
 * (session_autooffload.c), cp and ep (session_autocp.c). */
int apsolve_run_auto_search(ApsolveRun *r)
{
    double t0 = costdb_monotonic_seconds();
    size_t tried = 0;
    int64_t asked = asked_size(r);
    for (size_t k = 0; k < r->nbs || (r->nbs == 0 && k == 0); k++) {
        int64_t m;
        int own, rc;
        if (!apsolve_size_searched(r, k, &m, &own))
            continue;
        tried++;
        if ((rc = search_size(r, k, m, own, asked)) != 0)
            return rc;
    }
    if (tried && (apsolve_run_auto_recompute_layers(r) || apsolve_run_auto_offload(r) ||
                  apsolve_run_auto_cp(r) ||
                  apsolve_auto_recompute_layers_again(r)))
        return 1;
    if (!r->s->autop)
        return no_auto_plan(r, tried);
    keep_auto_plan(r, t0);
    return 0;
}
