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
 * notices an order that can never finish; so is ZB-H1, whose backward is
 * two passes, B (the input gradient, which the previous stage waits for)
 * and W (the weight gradient, which nothing waits for), in the order of
 * PyTorch's ScheduleInterleavedZeroBubble on one stage per rank
 * (docs/solver.md, "Schedules"). The deadlock check runs a program
 * of blocking sends and receives with rendezvous semantics and reports the
 * wait-for cycle.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"
#include "schedule.h"

_Static_assert((int)APREPORT_SCHED_1F1B == (int)APSOLVE_SCHEDULE_1F1B &&
                   (int)APREPORT_SCHED_GPIPE == (int)APSOLVE_SCHEDULE_GPIPE &&
                   (int)APREPORT_SCHED_INTERLEAVED == (int)APSOLVE_SCHEDULE_INTERLEAVED &&
                   (int)APREPORT_SCHED_ZB_H1 == (int)APSOLVE_SCHEDULE_ZB_H1,
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

/* The schedule's activation and gradient sends between consecutive of V
 * virtual stages (V = S without interleaving; wrap: the send from the last
 * device's chunk to the first device's next chunk), each after the
 * forward (fend) or backward (bend) that produces it (micro-batch m of
 * virtual stage j at j x B + m), and the bubble fraction of the busy
 * times: what every simulation ends with. */
static void finish_simulation(ApreportSchedule *sc, const ApreportPipeline *p, int S, int V, int B,
                              double wrap, const double *fend, const double *bend)
{
    double busy = 0;
    for (int j = 0; j + 1 < V; j++) {
        int s = j % S, t = (j + 1) % S;
        double x = t > 0 ? (p->xfer ? p->xfer[s] : 0) : wrap;
        for (int m = 0; m < B; m++) {
            ApreportEvent *ev = &sc->events[sc->n_events++];
            ev->kind = APREPORT_EV_SEND_ACT;
            ev->stage = s;
            ev->peer = t;
            ev->micro_batch = m;
            ev->chunk = j / S;
            ev->start = fend[(size_t)j * B + m];
            ev->end = ev->start + x;
            ev = &sc->events[sc->n_events++];
            ev->kind = APREPORT_EV_SEND_GRAD;
            ev->stage = t;
            ev->peer = s;
            ev->micro_batch = m;
            ev->chunk = (j + 1) / S;
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
    sc = calloc(1, sizeof(*sc));
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
    sc->kind = APREPORT_SCHED_INTERLEAVED;
    sc->n_stages = S;
    sc->micro_batches = B;
    sc->virtual_stages = v;
    sc->peak_in_flight = calloc((size_t)S, sizeof(int));
    sc->in_flight = calloc((size_t)S, sizeof(double));
    sc->busy = calloc((size_t)S, sizeof(double));
    sc->events = calloc((size_t)S * per_stage + 2 * (size_t)(V - 1) * (size_t)B,
                        sizeof(ApreportEvent));
    if (!sc->peak_in_flight || !sc->in_flight || !sc->busy || !sc->events)
        goto cleanup;
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
            ApreportEvent *ev = &sc->events[sc->n_events++];
            ev->kind = fw ? APREPORT_EV_FWD : APREPORT_EV_BWD;
            ev->stage = s;
            ev->peer = -1;
            ev->micro_batch = m;
            ev->chunk = c;
            ev->start = fw ? fstart[i] : bstart[i];
            ev->end = fw ? fend[i] : bend[i];
            sc->busy[s] += ev->end - ev->start;
            if (ev->end > sc->iteration_time)
                sc->iteration_time = ev->end;
            inflight += fw ? 1 : -1;
            if (inflight > sc->peak_in_flight[s])
                sc->peak_in_flight[s] = inflight;
        }
        sc->in_flight[s] = (double)sc->peak_in_flight[s] / v;
    }
    finish_simulation(sc, p, S, V, B, wrap, fend, bend);
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

/* Passes of ZB-H1's stage s (see zb_pass) before its step j, counted from
 * the end of its warm-up: each step j holds a forward while any is left
 * (j < B - warm), the B of micro-batch j, and from j = s on a W. */
static long zb_steps(int j, int B, int warm, int s)
{
    return (long)j + (j < B - warm ? j : B - warm) + (j > s ? j - s : 0);
}

/* Pass idx (0 .. 3B - 1) of stage s of ZB-H1 on S stages: *op 0 forward,
 * 1 B, 2 W, of micro-batch *mb. PyTorch's _get_1f1b_rank_ops with
 * enable_zero_bubble and num_1f1b_microbatches = s: min(S - s - 1, B)
 * warm-up forwards; then each step a forward (while any is left) and a B,
 * followed by a W from the (s + 1)-th B on; the W still owed come last. */
static void zb_pass(int S, int B, int s, int idx, int *op, int *mb)
{
    int warm = S - s - 1 < B ? S - s - 1 : B, lo = 0, hi = B - 1;
    long i = idx - warm, off;
    if (idx < warm) {
        *op = 0, *mb = idx;
        return;
    }
    if (i >= zb_steps(B, B, warm, s)) {
        /* the W still owed, oldest first */
        *op = 2, *mb = (B > s ? B - s : 0) + (int)(i - zb_steps(B, B, warm, s));
        return;
    }
    while (lo < hi) { /* the last step that starts at or before i */
        int mid = lo + (hi - lo + 1) / 2;
        if (zb_steps(mid, B, warm, s) <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    off = i - zb_steps(lo, B, warm, s);
    if (lo < B - warm && off-- == 0) {
        *op = 0, *mb = warm + lo;
        return;
    }
    *op = off == 0 ? 1 : 2;
    *mb = off == 0 ? lo : lo - s;
}

/* ZB-H1 (see apreport_simulate): list scheduling as for interleaved. A
 * forward waits for the previous stage's forward plus the transfer; a B
 * for its own forward and the next stage's B plus the transfer; a W for
 * its own B. */
static int simulate_zb(const ApreportPipeline *p, ApreportSchedule **out)
{
    ApreportSchedule *sc = NULL;
    int S = p->n_stages, B = p->micro_batches, rc = APREPORT_ENOMEM, *pos = NULL;
    size_t n = (size_t)S * (size_t)B, per_stage = 3 * (size_t)B, done = 0;
    double *end[3] = {NULL, NULL, NULL}, *start[3] = {NULL, NULL, NULL}, *free_at = NULL;
    char why[160];
    if (!p->wgrad || !apsolve_schedule_valid(APSOLVE_SCHEDULE_ZB_H1, 1, B, S, why, sizeof why) ||
        (double)S * B > 1e8)
        return APREPORT_EINVAL;
    for (int k = 0; k < S; k++)
        if (!(p->wgrad[k] >= 0) || !(p->wgrad[k] <= p->bwd[k]))
            return APREPORT_EINVAL;
    sc = calloc(1, sizeof(*sc));
    for (int o = 0; o < 3; o++) {
        end[o] = malloc(n * sizeof(double));
        start[o] = malloc(n * sizeof(double));
    }
    pos = calloc((size_t)S, sizeof(int));
    free_at = calloc((size_t)S, sizeof(double));
    if (!sc || !end[0] || !end[1] || !end[2] || !start[0] || !start[1] || !start[2] || !pos ||
        !free_at)
        goto cleanup;
    for (size_t i = 0; i < n; i++)
        end[0][i] = end[1][i] = end[2][i] = -1;
    sc->kind = APREPORT_SCHED_ZB_H1;
    sc->n_stages = S;
    sc->micro_batches = B;
    sc->virtual_stages = 1;
    sc->peak_in_flight = calloc((size_t)S, sizeof(int));
    sc->in_flight = calloc((size_t)S, sizeof(double));
    sc->busy = calloc((size_t)S, sizeof(double));
    sc->events = calloc((size_t)S * per_stage + 2 * (size_t)(S - 1) * (size_t)B,
                        sizeof(ApreportEvent));
    if (!sc->peak_in_flight || !sc->in_flight || !sc->busy || !sc->events)
        goto cleanup;
    while (done < (size_t)S * per_stage) {
        int progress = 0;
        for (int s = 0; s < S; s++)
            while ((size_t)pos[s] < per_stage) {
                int op, m;
                zb_pass(S, B, s, pos[s], &op, &m);
                size_t i = (size_t)s * B + (size_t)m;
                double ready = free_at[s], dur;
                if (op == 0 && s > 0) {
                    if (end[0][i - B] < 0)
                        break;
                    if (end[0][i - B] + (p->xfer ? p->xfer[s - 1] : 0) > ready)
                        ready = end[0][i - B] + (p->xfer ? p->xfer[s - 1] : 0);
                }
                if (op == 1 && s + 1 < S) {
                    if (end[1][i + B] < 0)
                        break;
                    if (end[1][i + B] + (p->xfer ? p->xfer[s] : 0) > ready)
                        ready = end[1][i + B] + (p->xfer ? p->xfer[s] : 0);
                }
                if (op > 0) {
                    if (end[op - 1][i] < 0)
                        break;
                    if (end[op - 1][i] > ready)
                        ready = end[op - 1][i];
                }
                dur = op == 0 ? p->fwd[s] : op == 1 ? p->bwd[s] - p->wgrad[s] : p->wgrad[s];
                start[op][i] = ready;
                end[op][i] = free_at[s] = ready + dur;
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
            static const ApreportEventKind kinds[3] = {APREPORT_EV_FWD, APREPORT_EV_BWD,
                                                       APREPORT_EV_WGRAD};
            int op, m;
            zb_pass(S, B, s, (int)k, &op, &m);
            size_t i = (size_t)s * B + (size_t)m;
            ApreportEvent *ev = &sc->events[sc->n_events++];
            ev->kind = kinds[op];
            ev->stage = s;
            ev->peer = -1;
            ev->micro_batch = m;
            ev->start = start[op][i];
            ev->end = end[op][i];
            sc->busy[s] += ev->end - ev->start;
            if (ev->end > sc->iteration_time)
                sc->iteration_time = ev->end;
            /* a micro-batch's saved inputs stay until its W has run */
            inflight += op == 0 ? 1 : op == 2 ? -1 : 0;
            if (inflight > sc->peak_in_flight[s])
                sc->peak_in_flight[s] = inflight;
        }
        sc->in_flight[s] = sc->peak_in_flight[s];
    }
    finish_simulation(sc, p, S, S, B, 0, end[0], end[1]);
    *out = sc;
    sc = NULL;
    rc = 0;
cleanup:
    apreport_schedule_free(&sc);
    for (int o = 0; o < 3; o++) {
        free(end[o]);
        free(start[o]);
    }
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
        (kind != APREPORT_SCHED_1F1B && kind != APREPORT_SCHED_GPIPE &&
         kind != APREPORT_SCHED_INTERLEAVED && kind != APREPORT_SCHED_ZB_H1))
        return APREPORT_EINVAL;
    *out = NULL;
    if (kind == APREPORT_SCHED_ZB_H1)
        return simulate_zb(p, out);
    if (kind == APREPORT_SCHED_INTERLEAVED && p->virtual_stages > 1)
        return simulate_interleaved(p, p->virtual_stages, out);
    S = p->n_stages, B = p->micro_batches;
    size_t n = (size_t)S * (size_t)B;
    sc = calloc(1, sizeof(*sc));
    order = malloc(sizeof(int) * 2 * (size_t)B);
    fend = calloc(n, sizeof(double));
    bend = calloc(n, sizeof(double));
    fstart = calloc(n, sizeof(double));
    bstart = calloc(n, sizeof(double));
    if (!sc || !order || !fend || !bend || !fstart || !bstart)
        goto cleanup;
    sc->kind = kind;
    sc->n_stages = S;
    sc->micro_batches = B;
    sc->virtual_stages = 1;
    sc->peak_in_flight = calloc((size_t)S, sizeof(int));
    sc->in_flight = calloc((size_t)S, sizeof(double));
    sc->busy = calloc((size_t)S, sizeof(double));
    sc->events = calloc(2 * n + 2 * (size_t)(S - 1) * (size_t)B, sizeof(ApreportEvent));
    if (!sc->peak_in_flight || !sc->in_flight || !sc->busy || !sc->events)
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
            ApreportEvent *ev = &sc->events[sc->n_events++];
            ev->kind = fw ? APREPORT_EV_FWD : APREPORT_EV_BWD;
            ev->stage = s;
            ev->peer = -1;
            ev->micro_batch = b;
            ev->start = fw ? fstart[i] : bstart[i];
            ev->end = fw ? fend[i] : bend[i];
            sc->busy[s] += ev->end - ev->start;
            if (ev->end > sc->iteration_time)
                sc->iteration_time = ev->end;
            inflight += fw ? 1 : -1;
            if (inflight > sc->peak_in_flight[s])
                sc->peak_in_flight[s] = inflight;
        }
        sc->in_flight[s] = sc->peak_in_flight[s];
    }
    finish_simulation(sc, p, S, S, B, 0, fend, bend);
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

/* ---- send/recv program ---------------------------------------------------- */

typedef struct {
    double t;
    int src, dst, tag, chunk;
} Msg;

static int msg_cmp(const void *x, const void *y)
{
    const Msg *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->src != b->src)
        return a->src - b->src;
    if (a->tag != b->tag)
        return a->tag - b->tag;
    return a->chunk - b->chunk;
}

int apreport_comm_program(const ApreportSchedule *s, ApreportCommProgram **out)
{
    ApreportCommProgram *p = NULL;
    Msg *msgs = NULL;
    size_t nm = 0;
    int rc = APREPORT_ENOMEM;
    if (!s || !out)
        return APREPORT_EINVAL;
    *out = NULL;
    msgs = malloc(sizeof(Msg) * (s->n_events + 1));
    p = calloc(1, sizeof(*p));
    if (!msgs || !p)
        goto cleanup;
    p->n_stages = s->n_stages;
    p->ops = calloc((size_t)s->n_stages, sizeof(*p->ops));
    p->n_ops = calloc((size_t)s->n_stages, sizeof(size_t));
    if (!p->ops || !p->n_ops)
        goto cleanup;
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        if (e->kind != APREPORT_EV_SEND_ACT && e->kind != APREPORT_EV_SEND_GRAD)
            continue;
        msgs[nm].t = e->start;
        msgs[nm].src = e->stage;
        msgs[nm].dst = e->peer;
        msgs[nm].tag = e->micro_batch * 2 + (e->kind == APREPORT_EV_SEND_GRAD);
        msgs[nm].chunk = e->chunk;
        nm++;
    }
    qsort(msgs, nm, sizeof(Msg), msg_cmp);
    for (int st = 0; st < s->n_stages; st++) {
        size_t k = 0;
        for (size_t i = 0; i < nm; i++)
            k += msgs[i].src == st || msgs[i].dst == st;
        p->ops[st] = calloc(k ? k : 1, sizeof(ApreportCommOp));
        if (!p->ops[st])
            goto cleanup;
        for (size_t i = 0; i < nm; i++) {
            if (msgs[i].src != st && msgs[i].dst != st)
                continue;
            ApreportCommOp *op = &p->ops[st][p->n_ops[st]++];
            op->is_send = msgs[i].src == st;
            op->peer = op->is_send ? msgs[i].dst : msgs[i].src;
            op->tag = msgs[i].tag;
            op->chunk = msgs[i].chunk;
        }
    }
    *out = p;
    p = NULL;
    rc = 0;
cleanup:
    apreport_comm_program_free(&p);
    free(msgs);
    return rc;
}

void apreport_comm_program_free(ApreportCommProgram **p)
{
    if (!p || !*p)
        return;
    if ((*p)->ops)
        for (int s = 0; s < (*p)->n_stages; s++)
            free((*p)->ops[s]);
    free((*p)->ops);
    free((*p)->n_ops);
    free(*p);
    *p = NULL;
}

/* ---- deadlock check -------------------------------------------------------- */

static int matches(const ApreportCommOp *a, int a_stage, const ApreportCommOp *b, int b_stage)
{
    return a->is_send != b->is_send && a->peer == b_stage && b->peer == a_stage &&
           a->tag == b->tag && a->chunk == b->chunk;
}

/* First pair (s, t) whose programs list their common messages in different
 * orders; 0 and -1s when all pairs agree. */
static void pair_check(const ApreportCommProgram *p, ApreportDeadlock *d)
{
    for (int s = 0; s < p->n_stages; s++)
        for (int t = s + 1; t < p->n_stages; t++) {
            size_t i = 0, j = 0;
            for (;;) {
                while (i < p->n_ops[s] && p->ops[s][i].peer != t)
                    i++;
                while (j < p->n_ops[t] && p->ops[t][j].peer != s)
                    j++;
                if (i >= p->n_ops[s] || j >= p->n_ops[t]) {
                    if (i < p->n_ops[s] || j < p->n_ops[t]) {
                        d->pair_src = s, d->pair_dst = t;
                        return;
                    }
                    break;
                }
                if (!matches(&p->ops[s][i], s, &p->ops[t][j], t)) {
                    d->pair_src = s, d->pair_dst = t;
                    return;
                }
                i++, j++;
            }
        }
}

int apreport_deadlock_check(const ApreportCommProgram *p, ApreportDeadlock *d)
{
    size_t *pos = NULL;
    int S, *seen = NULL, rc = APREPORT_ENOMEM;
    if (!p || !d || p->n_stages < 1 || !p->ops || !p->n_ops)
        return APREPORT_EINVAL;
    memset(d, 0, sizeof(*d));
    d->pair_src = d->pair_dst = -1;
    S = p->n_stages;
    for (int s = 0; s < S; s++)
        for (size_t i = 0; i < p->n_ops[s]; i++)
            if (p->ops[s][i].peer < 0 || p->ops[s][i].peer >= S || p->ops[s][i].peer == s)
                return APREPORT_EINVAL;
    pos = calloc((unsigned)S, sizeof(size_t));
    seen = calloc((unsigned)S, sizeof(int));
    if (!pos || !seen)
        goto cleanup;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int s = 0; s < S; s++) {
            if (pos[s] >= p->n_ops[s])
                continue;
            const ApreportCommOp *op = &p->ops[s][pos[s]];
            int t = op->peer;
            if (pos[t] < p->n_ops[t] && matches(op, s, &p->ops[t][pos[t]], t)) {
                pos[s]++, pos[t]++;
                progress = 1;
            }
        }
    }
    pair_check(p, d);
    int start = -1;
    for (int s = 0; s < S && start < 0; s++)
        if (pos[s] < p->n_ops[s])
            start = s;
    if (start < 0) {
        if (d->pair_src >= 0)
            snprintf(d->message, sizeof(d->message),
                     "no deadlock, but stages %d and %d disagree on message order",
                     d->pair_src, d->pair_dst);
        rc = 0;
        goto cleanup;
    }
    d->deadlocked = 1;
    /* Each blocked stage waits on exactly one peer: walk until a stage
     * repeats (cycle) or a finished stage is reached (unmatched op). */
    for (int s = 0; s < S; s++)
        seen[s] = -1;
    int s = start, step = 0;
    while (pos[s] < p->n_ops[s] && seen[s] < 0) {
        seen[s] = step++;
        s = p->ops[s][pos[s]].peer;
    }
    size_t mlen = 0;
    if (pos[s] < p->n_ops[s]) {
        int first = s;
        do {
            if (d->cycle_len < APREPORT_MAX_CYCLE)
                d->cycle[d->cycle_len++] = s;
            s = p->ops[s][pos[s]].peer;
        } while (s != first);
        mlen = (size_t)snprintf(d->message, sizeof(d->message), "deadlock: wait-for cycle");
        for (int k = 0; k < d->cycle_len && mlen < sizeof(d->message); k++) {
            const ApreportCommOp *op = &p->ops[d->cycle[k]][pos[d->cycle[k]]];
            char chunk[32] = "";
            if (op->chunk)
                snprintf(chunk, sizeof(chunk), " chunk %d", op->chunk);
            mlen += (size_t)snprintf(d->message + mlen, sizeof(d->message) - mlen,
                                     "%s stage %d blocked in %s stage %d (micro-batch %d%s %s)",
                                     k ? ";" : "", d->cycle[k], op->is_send ? "send to" : "recv from",
                                     op->peer, op->tag / 2, chunk,
                                     op->tag % 2 ? "gradient" : "activation");
        }
    } else {
        const ApreportCommOp *op = &p->ops[start][pos[start]];
        snprintf(d->message, sizeof(d->message),
                 "deadlock: stage %d blocked in %s stage %d, which never posts the matching op",
                 start, op->is_send ? "send to" : "recv from", op->peer);
    }
    rc = 0;
cleanup:
    free(pos);
    free(seen);
    return rc;
}

int apreport_microbatch_warning(int stages, int micro_batches, char *buf, size_t len)
{
    if (buf && len)
        buf[0] = '\0';
    if (stages <= 1)
        return 0;
    if (micro_batches < stages) {
        snprintf(buf, len, "micro-batches (%d) < pipeline stages (%d): the pipeline never fills",
                 micro_batches, stages);
        return 1;
    }
    if (micro_batches < 2 * stages) {
        snprintf(buf, len,
                 "micro-batches (%d) < 2 x pipeline stages (%d): bubbles dominate "
                 "(rule of thumb: at least %d)", micro_batches, stages, 2 * stages);
        return 1;
    }
    return 0;
}
