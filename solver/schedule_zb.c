/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pass orders of the zero-bubble schedules PyTorch runs
 * (torch/distributed/pipelining/schedules.py at commit 1fd7abc2, the
 * version docs/solver.md cites), and their iteration times. Each device's
 * backward is two passes, B (the input gradient, which the previous
 * virtual stage waits for) and W (the weight gradient, which nothing waits
 * for). ScheduleInterleavedZeroBubble (its _get_1f1b_rank_ops with
 * enable_zero_bubble): v chunks per device placed round robin (virtual
 * stage c n + rank), micro-batches in rounds of m = B / max(1, B / n);
 * (v - 1) m + n - 1 - rank warm-up forwards, then each step a forward while
 * any is left and a B, the chunk of the step's forward advancing every m
 * steps and the B's chunk going backwards; from the (rank + 1)-th B on a W
 * follows each B, the W still owed run last. On one chunk this is ZB-H1.
 * ScheduleZBVZeroBubble (Qi et al., NeurIPS 2024, section 6 of the ZB
 * paper): two chunks per device, device r holding virtual stages r and
 * 2 n - 1 - r, so the last device runs the V's bottom two back to back;
 * warm-up of 2 (n - r) - 1 forwards of the first chunk, r pairs of
 * second- and first-chunk forwards, n - r second-chunk F, B, W triples;
 * steady F B W of each chunk in turn; a cool-down of r pairs of B's, then
 * n - r first-chunk B, W pairs and the W still owed. PyTorch plans the V
 * for max(2 n - 1, B) micro-batches and drops the passes of those it does
 * not have; so does this.
 *
 * The time of the round-robin order has a closed form (schedule.h); the
 * V's is the makespan of its order, each pass started as soon as its
 * device is free and its inputs are done (list scheduling, as
 * reports/schedule_zb.c simulates it with transfers).
 */
#include <math.h>
#include <stdlib.h>

#include "schedule.h"

/* Round robin (interleaved ZB, ZB-H1 at v = 1); see the file comment. */
static int izb_order(int v, int B, int n, int r, ApsolvePass *out)
{
    int rounds = B / n > 1 ? B / n : 1, m = B / rounds, total = B * v, warm, k = 0, nb = 0,
        nw = 0;
    int *count = calloc(2 * (size_t)v, sizeof(int));
    ApsolvePass *bp = malloc((size_t)total * sizeof *bp);
    if (!count || !bp) {
        free(count);
        free(bp);
        return -1;
    }
    warm = (v - 1) * m + n - 1 - r;
    if (warm > total)
        warm = total;
    for (int op = 0; op < total + warm; op++) {
        if (op < total) {
            int c = (op / m) % v;
            out[k++] = (ApsolvePass){0, c * n + r, count[c]++};
            if (op < warm)
                continue;
        }
        int c = v - 1 - ((op - warm) / m) % v;
        bp[nb] = (ApsolvePass){1, c * n + r, count[v + c]++};
        out[k++] = bp[nb++];
        if (op - warm >= r) {
            out[k] = bp[nw++];
            out[k++].op = 2;
        }
    }
    while (nw < nb) {
        out[k] = bp[nw++];
        out[k++].op = 2;
    }
    free(count);
    free(bp);
    return k;
}

/* The V; see the file comment. Passes of micro-batches >= B are dropped. */
static int zbv_order(int B, int n, int r, ApsolvePass *out)
{
    int nm = 2 * n - 1 > B ? 2 * n - 1 : B, k = 0;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0, w0, w1, c0 = r, c1 = 2 * n - 1 - r;
#define PUSH(o, st, mb)                                                                          \
    do {                                                                                       \
        if ((mb) < B)                                                                          \
            out[k++] = (ApsolvePass){(o), (st), (mb)};                                         \
    } while (0)
    for (int i = 0; i < 2 * (n - r) - 1; i++, f0++)
        PUSH(0, c0, f0);
    for (int i = 0; i < r; i++, f0++, f1++) {
        PUSH(0, c1, f1);
        PUSH(0, c0, f0);
    }
    for (int i = 0; i < n - r; i++, f1++, b1++) {
        PUSH(0, c1, f1);
        PUSH(1, c1, b1);
        PUSH(2, c1, b1);
    }
    while (f1 < f0 || f0 < nm) {
        if (f0 < nm) {
            PUSH(0, c0, f0);
            f0++;
        }
        PUSH(1, c0, b0);
        PUSH(2, c0, b0);
        b0++;
        PUSH(0, c1, f1);
        PUSH(1, c1, b1);
        PUSH(2, c1, b1);
        f1++, b1++;
    }
    w0 = b0, w1 = b1;
    for (int i = 0; i < r; i++, b0++, b1++) {
        PUSH(1, c0, b0);
        PUSH(1, c1, b1);
    }
    for (int i = 0; i < n - r; i++, b0++, w0++) {
        PUSH(1, c0, b0);
        PUSH(2, c0, w0);
    }
    for (; w1 < b1; w1++)
        PUSH(2, c1, w1);
    for (; w0 < b0; w0++)
        PUSH(2, c0, w0);
#undef PUSH
    return k;
}

int apsolve_schedule_zb_order(ApsolveSchedule s, int v, int B, int n, int rank, ApsolvePass *out)
{
    if (!out || rank < 0 || rank >= n || !apsolve_schedule_valid(s, v, B, n, NULL, 0))
        return -1;
    if (s == APSOLVE_SCHEDULE_ZB_H1)
        return izb_order(1, B, n, rank, out);
    if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB)
        return izb_order(v > 1 ? v : 1, B, n, rank, out);
    if (s == APSOLVE_SCHEDULE_ZBV)
        return zbv_order(B, n, rank, out);
    return -1;
}

int apsolve_schedule_stage_device(ApsolveSchedule s, int v, int n, int j)
{
    int V = n * (int)apsolve_schedule_transfer_factor(s, v);
    if (n < 1 || j < 0 || j >= V)
        return -1;
    if (s == APSOLVE_SCHEDULE_ZBV)
        return j < n ? j : 2 * n - 1 - j;
    return j % n;
}

double apsolve_schedule_time_izb(int v, int B, const double *fwd, const double *bwd,
                                 const double *wgrad, size_t n)
{
    double sum = 0, max = 0;
    if (v < 1)
        v = 1;
    if (!fwd || !bwd || !wgrad || n == 0 || n > (size_t)B ||
        !apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED_ZB, v, B, (int)n, NULL, 0))
        return NAN;
    for (size_t k = 0; k < n; k++) {
        double c = fwd[k] + bwd[k];
        sum += c;
        max = c > max ? c : max;
    }
    /* interleaved 1F1B's T (schedule.c), less the schedule's saving (NaN
     * for a W outside 0..bwd) */
    return apsolve_schedule_base_time(v, B, sum, max) -
           apsolve_schedule_zb_saving(APSOLVE_SCHEDULE_INTERLEAVED_ZB, v, B, fwd, bwd, wgrad, n);
}

static double zb_makespan(ApsolveSchedule s, int v, int B, const double *fwd, const double *bwd,
                          const double *wgrad, size_t n);

double apsolve_schedule_zb_saving(ApsolveSchedule s, int vpp, int B, const double *fwd,
                                  const double *bwd, const double *wgrad, size_t n)
{
    double fill = INFINITY, sum = 0, max = 0;
    if (!apsolve_schedule_zero_bubble(s))
        return 0;
    if (!fwd || !bwd || !wgrad)
        return NAN;
    for (size_t k = 0; k < n; k++) {
        double x = apsolve_schedule_zb_fill(fwd[k], bwd[k], wgrad[k]), c = fwd[k] + bwd[k];
        if (isnan(x) || !(wgrad[k] <= bwd[k]))
            return NAN;
        fill = x < fill ? x : fill;
        sum += c;
        max = c > max ? c : max;
    }
    if (s == APSOLVE_SCHEDULE_ZB_H1)
        vpp = 1;
    else if (s == APSOLVE_SCHEDULE_ZBV)
        /* no closed form: the makespan below the interleaved T of 2 chunks */
        return apsolve_schedule_base_time(2, B, sum, max) - zb_makespan(s, 2, B, fwd, bwd, wgrad, n);
    vpp = vpp > 1 ? vpp : 1;
    /* ZB-H1 and interleaved ZB: each of the n - 1 bubble slots filled by
     * the least fill of a stage, the chunks' 1/v of it */
    return n > 1 ? (double)(n - 1) * fill / vpp : 0.0;
}

/* The makespan of schedule s's order on n devices with v chunks each (each
 * 1/v of its device's seconds): list scheduling, transfers not counted. */
static double zb_makespan(ApsolveSchedule s, int v, int B, const double *fwd, const double *bwd,
                          const double *wgrad, size_t n)
{
    int N = (int)n, V = v * N, per = 3 * v * B, *pos = NULL;
    size_t cells = (size_t)V * (size_t)B, done = 0;
    double *end = NULL, *free_at = NULL, t = NAN;
    ApsolvePass *order = NULL;
    if (!fwd || !bwd || !wgrad || n == 0 || n > 4096 || B < 1 || B > 1 << 20)
        return NAN;
    for (size_t k = 0; k < n; k++)
        if (!(wgrad[k] >= 0) || !(wgrad[k] <= bwd[k]) || !(fwd[k] >= 0))
            return NAN;
    order = malloc((size_t)N * (size_t)per * sizeof *order);
    end = malloc(3 * cells * sizeof *end);
    pos = calloc(n, sizeof *pos);
    free_at = calloc(n, sizeof *free_at);
    if (!order || !end || !pos || !free_at)
        goto cleanup;
    for (int r = 0; r < N; r++)
        if (apsolve_schedule_zb_order(s, v, B, N, r, order + (size_t)r * per) != per)
            goto cleanup;
    for (size_t i = 0; i < 3 * cells; i++)
        end[i] = -1;
    t = 0;
    while (done < (size_t)N * per) {
        int progress = 0;
        for (int r = 0; r < N; r++)
            for (; pos[r] < per; pos[r]++, done++, progress = 1) {
                const ApsolvePass *ps = &order[(size_t)r * per + pos[r]];
                size_t i = (size_t)ps->stage * B + ps->mb;
                double ready = free_at[r], dep = 0, dur;
                if (ps->op == 0 && ps->stage > 0)
                    dep = end[i - B];
                else if (ps->op == 1 && ps->stage + 1 < V)
                    dep = end[cells + i + B] < 0 ? -1 : end[cells + i + B];
                if (dep >= 0 && ps->op == 1)
                    dep = end[i] < 0 ? -1 : (end[i] > dep ? end[i] : dep);
                if (ps->op == 2)
                    dep = end[cells + i];
                if (dep < 0)
                    break;
                ready = dep > ready ? dep : ready;
                dur = ps->op == 0 ? fwd[r] : ps->op == 1 ? bwd[r] - wgrad[r] : wgrad[r];
                end[ps->op * cells + i] = free_at[r] = ready + dur / v;
                t = free_at[r] > t ? free_at[r] : t;
            }
        if (!progress) {
            t = NAN; /* cannot happen for PyTorch's order: a guard */
            break;
        }
    }
cleanup:
    free(order);
    free(end);
    free(pos);
    free(free_at);
    return t;
}

double apsolve_schedule_time_zbv(int B, const double *fwd, const double *bwd,
                                 const double *wgrad, size_t n)
{
    return zb_makespan(APSOLVE_SCHEDULE_ZBV, 2, B, fwd, bwd, wgrad, n);
}
