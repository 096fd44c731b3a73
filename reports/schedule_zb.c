/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Simulation of the zero-bubble schedules (docs/solver.md, "Schedules"):
 * ZB-H1, PyTorch's interleaved zero bubble over v model chunks per device
 * and its ZB-V, two chunks per device in a V. Each device runs the passes
 * of the solver's order (apsolve_schedule_zb_order: forward, B the input
 * gradient, W the weight gradient) list-scheduled as the interleaved
 * schedule is: a forward waits for the previous virtual stage's forward
 * plus the transfer between their devices (none on one device, as at the
 * V's bottom), a B for its own forward and the next virtual stage's B
 * plus the transfer, a W for its own B; each chunk takes 1/v of its
 * device's seconds. A micro-batch's saved inputs count as in flight from
 * its forward until its W has run.
 */
#include <stdlib.h>

#include "apreport.h"
#include "schedule.h"
#include "schedule_int.h"

int rep_simulate_zb(const ApreportPipeline *p, ApreportScheduleKind kind, ApreportSchedule **out)
{
    static const ApreportEventKind kinds[3] = {APREPORT_EV_FWD, APREPORT_EV_BWD,
                                               APREPORT_EV_WGRAD};
    ApsolveSchedule sk = (ApsolveSchedule)kind;
    ApreportSchedule *sc = NULL;
    ApsolvePass *order = NULL;
    int S = p->n_stages, B = p->micro_batches, rc = APREPORT_ENOMEM, *pos = NULL, v, V, per;
    size_t n, done = 0;
    double *end[3] = {NULL, NULL, NULL}, *start[3] = {NULL, NULL, NULL}, *free_at = NULL, wrap = 0;
    char why[160];
    v = sk == APSOLVE_SCHEDULE_ZBV                                          ? 2
        : sk == APSOLVE_SCHEDULE_INTERLEAVED_ZB && p->virtual_stages > 1 ? p->virtual_stages
                                                                           : 1;
    if (!p->wgrad || !apsolve_schedule_zero_bubble(sk) ||
        !apsolve_schedule_valid(sk, v, B, S, why, sizeof why) || v > 1024 ||
        (double)S * v * B > 1e8)
        return APREPORT_EINVAL;
    for (int k = 0; k < S; k++)
        if (!(p->wgrad[k] >= 0) || !(p->wgrad[k] <= p->bwd[k]))
            return APREPORT_EINVAL;
    V = S * v;
    per = 3 * B * v;
    n = (size_t)V * (size_t)B;
    for (int k = 0; p->xfer && k + 1 < S; k++)
        if (p->xfer[k] > wrap)
            wrap = p->xfer[k];
    sc = rep_schedule_new(kind, S, B, v, (size_t)S * per + 2 * (size_t)(V - 1) * (size_t)B);
    order = malloc((size_t)S * (size_t)per * sizeof *order);
    for (int o = 0; o < 3; o++) {
        end[o] = malloc(n * sizeof(double));
        start[o] = malloc(n * sizeof(double));
    }
    pos = calloc((size_t)S, sizeof(int));
    free_at = calloc((size_t)S, sizeof(double));
    if (!sc || !order || !end[0] || !end[1] || !end[2] || !start[0] || !start[1] || !start[2] ||
        !pos || !free_at)
        goto cleanup;
    for (int s = 0; s < S; s++)
        if (apsolve_schedule_zb_order(sk, v, B, S, s, order + (size_t)s * per) != per) {
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
    for (size_t i = 0; i < n; i++)
        end[0][i] = end[1][i] = end[2][i] = -1;
    /* List scheduling: every round runs each device as far as its inputs
     * allow; a round without progress means the order cannot finish. */
    while (done < (size_t)S * per) {
        int progress = 0;
        for (int s = 0; s < S; s++)
            for (; pos[s] < per; pos[s]++, done++, progress = 1) {
                const ApsolvePass *ps = &order[(size_t)s * per + pos[s]];
                int j = ps->stage, op = ps->op;
                size_t i = (size_t)j * B + (size_t)ps->mb;
                double ready = free_at[s], dur;
                if (op == 0 && j > 0) {
                    double x = rep_sched_link(p, sk, v, wrap, j - 1);
                    if (end[0][i - B] < 0)
                        break;
                    ready = end[0][i - B] + x > ready ? end[0][i - B] + x : ready;
                }
                if (op == 1 && j + 1 < V) {
                    double x = rep_sched_link(p, sk, v, wrap, j);
                    if (end[1][i + B] < 0)
                        break;
                    ready = end[1][i + B] + x > ready ? end[1][i + B] + x : ready;
                }
                if (op > 0) {
                    if (end[op - 1][i] < 0)
                        break;
                    ready = end[op - 1][i] > ready ? end[op - 1][i] : ready;
                }
                dur = op == 0 ? p->fwd[s] : op == 1 ? p->bwd[s] - p->wgrad[s] : p->wgrad[s];
                start[op][i] = ready;
                end[op][i] = free_at[s] = ready + dur / v;
            }
        if (!progress) {
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
    }
    for (int s = 0; s < S; s++) {
        int inflight = 0;
        for (int k = 0; k < per; k++) {
            const ApsolvePass *ps = &order[(size_t)s * per + k];
            size_t i = (size_t)ps->stage * B + (size_t)ps->mb;
            /* a micro-batch's saved inputs stay until its W has run */
            rep_add_pass(sc, s, kinds[ps->op], ps->mb, rep_sched_chunk(sk, S, ps->stage),
                         start[ps->op][i], end[ps->op][i],
                         ps->op == 0 ? 1 : ps->op == 2 ? -1 : 0, &inflight);
        }
        sc->in_flight[s] = (double)sc->peak_in_flight[s] / v;
    }
    rep_finish_simulation(sc, p, sk, v, V, wrap, end[0], end[1]);
    *out = sc;
    sc = NULL;
    rc = 0;
cleanup:
    apreport_schedule_free(&sc);
    for (int o = 0; o < 3; o++) {
        free(end[o]);
        free(start[o]);
    }
    free(order);
    free(pos);
    free(free_at);
    return rc;
}
