/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pipeline schedule simulation and the deadlock check of its blocking
 * send/recv order. The simulator is event-free: each stage has a fixed
 * order of forward and backward passes (GPipe or 1F1B); a pass starts when
 * the stage is free and its input has arrived (the previous stage's
 * forward plus the transfer, or the next stage's backward plus the
 * transfer); transfers use the link, not the stage. Iterating the stages
 * until no start time changes gives the schedule (a fixed point reached in
 * at most S * 2B sweeps because every dependency points to an earlier pass
 * of a neighbour). The interleaved schedule (Megatron-LM's order over model
 * chunks) is list-scheduled instead: each stage runs its next pass as soon
 * as that pass's inputs are done, which reaches the same fixed point and
 * notices an order that can never finish; so are the zero-bubble schedules
 * (schedule_zb.c). The send/recv program and its deadlock check are
 * schedule_comm.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"
#include "schedule.h"
#include "schedule_int.h"

_Static_assert((int)APREPORT_SCHED_1F1B == (int)APSOLVE_SCHEDULE_1F1B &&
                   (int)APREPORT_SCHED_GPIPE == (int)APSOLVE_SCHEDULE_GPIPE &&
                   (int)APREPORT_SCHED_INTERLEAVED == (int)APSOLVE_SCHEDULE_INTERLEAVED &&
                   (int)APREPORT_SCHED_ZB_H1 == (int)APSOLVE_SCHEDULE_ZB_H1 &&
                   (int)APREPORT_SCHED_INTERLEAVED_ZB == (int)APSOLVE_SCHEDULE_INTERLEAVED_ZB &&
                   (int)APREPORT_SCHED_ZBV == (int)APSOLVE_SCHEDULE_ZBV &&
                   (int)APREPORT_SCHED_COUNT == (int)APSOLVE_SCHEDULE_COUNT,
               "apreport's schedule kinds are the solver's");

const char *apreport_schedule_name(ApreportScheduleKind k)
{
    const char *n = apsolve_schedule_name((ApsolveSchedule)k);
    return n ? n : "1f1b";
}

/* Order of passes of stage s: entries are mb (forward) or -(mb + 1) (backward). */
static void stage_order(ApreportScheduleKind kind, int S, int B, int s, int *order)
{
    int k = 0;
    if (kind == APREPORT_SCHED_GPIPE) {
        for (int b = 0; b < B; b++)
            order[k++] = b;
        for (int b = 0; b < B; b++)
            order[k++] = -(b + 1);
        return;
    }
    int warm = S - s - 1 < B ? S - s - 1 : B, f = 0, bw = 0;
    for (; f < warm; f++)
        order[k++] = f;
    while (f < B) {
        order[k++] = f++;
        order[k++] = -(bw++ + 1);
    }
    while (bw < B)
        order[k++] = -(bw++ + 1);
}

/* Pass idx (0 .. 2 B v - 1) of stage s in Megatron-LM's interleaved order
 * on S stages with v chunks: the i-th forward runs chunk (i mod S v) / S of
 * micro-batch (i / S v) S + i mod S; the i-th backward the same micro-batch
 * of chunk v - 1 - (i mod S v) / S; warm-up forwards first, then forward
 * and backward alternately, then the remaining backwards. */
static void interleaved_pass(int S, int B, int v, int s, int idx, int *fw, int *chunk, int *mb)
{
    int total = B * v, warm = 2 * (S - s - 1) + (v - 1) * S, i;
    if (warm > total)
        warm = total;
    if (idx < warm) {
        *fw = 1, i = idx;
    } else if (idx < warm + 2 * (total - warm)) {
        int j = idx - warm;
        *fw = j % 2 == 0;
        i = *fw ? warm + j / 2 : j / 2;
    } else {
        *fw = 0, i = idx - warm - (total - warm);
    }
    *chunk = (i % (S * v)) / S;
    if (!*fw)
        *chunk = v - 1 - *chunk;
    *mb = i / (S * v) * S + i % S;
}

static void simulation_free(double *a, double *b, double *c, double *d)
{
    free(a);
    free(b);
    free(c);
    free(d);
}

double rep_sched_link(const ApreportPipeline *p, ApsolveSchedule kind, int v, double wrap, int j)
{
    int S = p->n_stages, a = apsolve_schedule_stage_device(kind, v, S, j),
        b = apsolve_schedule_stage_device(kind, v, S, j + 1);
    if (a == b)
        return 0;
    if (a - b == 1 || b - a == 1)
        return p->xfer ? p->xfer[a < b ? a : b] : 0;
    return wrap;
}

int rep_sched_chunk(ApsolveSchedule kind, int S, int j)
{
    return kind == APSOLVE_SCHEDULE_ZBV ? j >= S : j / S;
}

ApreportSchedule *rep_schedule_new(ApreportScheduleKind kind, int S, int B, int v, size_t n_events)
{
    ApreportSchedule *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return NULL;
    sc->kind = kind;
    sc->n_stages = S;
    sc->micro_batches = B;
    sc->virtual_stages = v;
    sc->peak_in_flight = calloc((size_t)S, sizeof(int));
    sc->in_flight = calloc((size_t)S, sizeof(double));
    sc->busy = calloc((size_t)S, sizeof(double));
    sc->events = calloc(n_events, sizeof(ApreportEvent));
    if (!sc->peak_in_flight || !sc->in_flight || !sc->busy || !sc->events)
        apreport_schedule_free(&sc);
    return sc;
}

void rep_add_pass(ApreportSchedule *sc, int s, ApreportEventKind ev_kind, int mb, int chunk,
                  double start, double end, int delta, int *inflight)
{
    ApreportEvent *ev = &sc->events[sc->n_events++];
    ev->kind = ev_kind;
    ev->stage = s;
    ev->peer = -1;
    ev->micro_batch = mb;
    ev->chunk = chunk;
    ev->start = start;
    ev->end = end;
    sc->busy[s] += end - start;
    if (end > sc->iteration_time)
        sc->iteration_time = end;
    *inflight += delta;
    if (*inflight > sc->peak_in_flight[s])
        sc->peak_in_flight[s] = *inflight;
}

void rep_finish_simulation(ApreportSchedule *sc, const ApreportPipeline *p, ApsolveSchedule kind,
                           int v, int V, double wrap, const double *fend, const double *bend)
{
    int S = p->n_stages, B = p->micro_batches;
    double busy = 0;
    for (int j = 0; j + 1 < V; j++) {
        int s = apsolve_schedule_stage_device(kind, v, S, j),
            t = apsolve_schedule_stage_device(kind, v, S, j + 1);
        double x = rep_sched_link(p, kind, v, wrap, j);
        if (s == t) /* the V's bottom: both chunks on one device, nothing sent */
            continue;
        for (int m = 0; m < B; m++) {
            ApreportEvent *ev = &sc->events[sc->n_events++];
            ev->kind = APREPORT_EV_SEND_ACT;
            ev->stage = s;
            ev->peer = t;
            ev->micro_batch = m;
            ev->chunk = rep_sched_chunk(kind, S, j);
            ev->start = fend[(size_t)j * B + m];
            ev->end = ev->start + x;
            ev = &sc->events[sc->n_events++];
            ev->kind = APREPORT_EV_SEND_GRAD;
            ev->stage = t;
            ev->peer = s;
            ev->micro_batch = m;
            ev->chunk = rep_sched_chunk(kind, S, j + 1);
            ev->start = bend[(size_t)(j + 1) * B + m];
            ev->end = ev->start + x;
        }
    }
    for (int s = 0; s < S; s++)
        busy += sc->busy[s];
    sc->bubble_fraction = sc->iteration_time > 0 ? 1.0 - busy / (S * sc->iteration_time) : 0;
}

/* The interleaved schedule, v >= 2 (see apreport_simulate). Virtual stage
 * j = chunk S + s; its forward of micro-batch m waits for virtual stage
 * j - 1 plus the boundary transfer (the wrap from stage S - 1 to stage 0
 * takes the largest transfer), its backward for virtual stage j + 1 and
 * its own forward. */
static int simulate_interleaved(const ApreportPipeline *p, int v, ApreportSchedule **out)
{
    ApreportSchedule *sc = NULL;
    int S = p->n_stages, B = p->micro_batches, V, rc = APREPORT_ENOMEM;
    size_t n, per_stage, done = 0, *pos = NULL;
    double *fstart = NULL, *fend = NULL, *bstart = NULL, *bend = NULL, *free_at = NULL, wrap = 0;
    char why[160];
    if (!apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, v, B, S, why, sizeof why) ||
        v > 1024 || (double)S * v * B > 1e8)
        return APREPORT_EINVAL;
    V = S * v;
    n = (size_t)V * (size_t)B;
    per_stage = 2 * (size_t)B * (size_t)v;
    for (int k = 0; p->xfer && k + 1 < S; k++)
        if (p->xfer[k] > wrap)
            wrap = p->xfer[k];
    sc = rep_schedule_new(APREPORT_SCHED_INTERLEAVED, S, B, v,
                          (size_t)S * per_stage + 2 * (size_t)(V - 1) * (size_t)B);
    fstart = malloc(n * sizeof(double));
    fend = malloc(n * sizeof(double));
    bstart = malloc(n * sizeof(double));
    bend = malloc(n * sizeof(double));
    pos = calloc((size_t)S, sizeof(size_t));
    free_at = calloc((size_t)S, sizeof(double));
    if (!sc || !fstart || !fend || !bstart || !bend || !pos || !free_at)
        goto cleanup;
    for (size_t i = 0; i < n; i++)
        fend[i] = bend[i] = -1;
    /* List scheduling: every round runs each stage as far as its inputs
     * allow; a round without progress means the order cannot finish. */
    while (done < (size_t)S * per_stage) {
        int progress = 0;
        for (int s = 0; s < S; s++)
            while (pos[s] < per_stage) {
                int fw, c, m;
                interleaved_pass(S, B, v, s, (int)pos[s], &fw, &c, &m);
                int j = c * S + s;
                size_t i = (size_t)j * B + m;
                double ready = free_at[s];
                if (fw && j > 0) {
                    double x = s > 0 ? (p->xfer ? p->xfer[s - 1] : 0) : wrap;
                    if (fend[i - B] < 0)
                        break;
                    ready = fend[i - B] + x > ready ? fend[i - B] + x : ready;
                }
                if (!fw && j + 1 < V) {
                    double x = s + 1 < S ? (p->xfer ? p->xfer[s] : 0) : wrap;
                    if (bend[i + B] < 0)
                        break;
                    ready = bend[i + B] + x > ready ? bend[i + B] + x : ready;
                }
                if (!fw) {
                    if (fend[i] < 0)
                        break;
                    ready = fend[i] > ready ? fend[i] : ready;
                }
                double e = ready + (fw ? p->fwd[s] : p->bwd[s]) / v;
                (fw ? fstart : bstart)[i] = ready;
                (fw ? fend : bend)[i] = e;
                free_at[s] = e;
                pos[s]++;
                done++;
                progress = 1;
            }
        if (!progress) {
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
    }
    for (int s = 0; s < S; s++) {
        int inflight = 0;
        for (size_t k = 0; k < per_stage; k++) {
            int fw, c, m;
            interleaved_pass(S, B, v, s, (int)k, &fw, &c, &m);
            size_t i = (size_t)(c * S + s) * B + m;
            rep_add_pass(sc, s, fw ? APREPORT_EV_FWD : APREPORT_EV_BWD, m, c,
                         fw ? fstart[i] : bstart[i], fw ? fend[i] : bend[i], fw ? 1 : -1,
                         &inflight);
        }
        sc->in_flight[s] = (double)sc->peak_in_flight[s] / v;
    }
    rep_finish_simulation(sc, p, APSOLVE_SCHEDULE_INTERLEAVED, v, V, wrap, fend, bend);
    *out = sc;
    sc = NULL;
    rc = 0;
cleanup:
    apreport_schedule_free(&sc);
    simulation_free(fstart, fend, bstart, bend);
    free(pos);
    free(free_at);
    return rc;
}

int apreport_simulate(const ApreportPipeline *p, ApreportScheduleKind kind,
                      ApreportSchedule **out)
{
    ApreportSchedule *sc = NULL;
    int *order = NULL, S, B, rc = APREPORT_ENOMEM;
    double *fend = NULL, *bend = NULL, *fstart = NULL, *bstart = NULL;
    if (!p || !out || p->n_stages < 1 || p->micro_batches < 1 || !p->fwd || !p->bwd ||
        p->n_stages > 4096 || p->micro_batches > 1 << 20 ||
        (int)kind < 0 || (int)kind >= APSOLVE_SCHEDULE_COUNT)
        return APREPORT_EINVAL;
    *out = NULL;
    if (apsolve_schedule_zero_bubble((int)kind))
        return rep_simulate_zb(p, kind, out);
    if (kind == APREPORT_SCHED_INTERLEAVED && p->virtual_stages > 1)
        return simulate_interleaved(p, p->virtual_stages, out);
    S = p->n_stages, B = p->micro_batches;
    size_t n = (size_t)S * (size_t)B;
    sc = rep_schedule_new(kind, S, B, 1, 2 * n + 2 * (size_t)(S - 1) * (size_t)B);
    order = malloc(sizeof(int) * 2 * (size_t)B);
    fend = calloc(n, sizeof(double));
    bend = calloc(n, sizeof(double));
    fstart = calloc(n, sizeof(double));
    bstart = calloc(n, sizeof(double));
    if (!sc || !order || !fend || !bend || !fstart || !bstart)
        goto cleanup;
    /* Fixed point: recompute every stage from its predecessors until stable.
     * Start times only grow, so this terminates. */
    for (int iter = 0; iter < 2 * S * B + 4; iter++) {
        int changed = 0;
        for (int s = 0; s < S; s++) {
            double t = 0;
            double xin = s > 0 && p->xfer ? p->xfer[s - 1] : 0;
            double xout = s + 1 < S && p->xfer ? p->xfer[s] : 0;
            stage_order(kind, S, B, s, order);
            for (int k = 0; k < 2 * B; k++) {
                int fw = order[k] >= 0, b = fw ? order[k] : -order[k] - 1;
                size_t i = (size_t)s * B + b;
                double ready = t;
                if (fw && s > 0 && fend[i - B] + xin > ready)
                    ready = fend[i - B] + xin;
                if (!fw && s + 1 < S && bend[i + B] + xout > ready)
                    ready = bend[i + B] + xout;
                if (!fw && fend[i] > ready)
                    ready = fend[i];
                double *st = fw ? &fstart[i] : &bstart[i], *en = fw ? &fend[i] : &bend[i];
                double e = ready + (fw ? p->fwd[s] : p->bwd[s]);
                if (*st != ready || *en != e)
                    changed = 1;
                *st = ready;
                *en = e;
                t = e;
            }
        }
        if (!changed)
            break;
    }
    for (int s = 0; s < S; s++) {
        int inflight = 0;
        stage_order(kind, S, B, s, order);
        for (int k = 0; k < 2 * B; k++) {
            int fw = order[k] >= 0, b = fw ? order[k] : -order[k] - 1;
            size_t i = (size_t)s * B + b;
            rep_add_pass(sc, s, fw ? APREPORT_EV_FWD : APREPORT_EV_BWD, b, 0,
                         fw ? fstart[i] : bstart[i], fw ? fend[i] : bend[i], fw ? 1 : -1,
                         &inflight);
        }
        sc->in_flight[s] = sc->peak_in_flight[s];
    }
    rep_finish_simulation(sc, p, (ApsolveSchedule)kind, 1, S, 0, fend, bend);
    *out = sc;
    sc = NULL;
    rc = 0;
cleanup:
    apreport_schedule_free(&sc);
    free(order);
    free(fend);
    free(bend);
    free(fstart);
    free(bstart);
    return rc;
}

void apreport_schedule_free(ApreportSchedule **s)
{
    if (!s || !*s)
        return;
    free((*s)->events);
    free((*s)->peak_in_flight);
    free((*s)->in_flight);
    free((*s)->busy);
    free(*s);
    *s = NULL;
}

