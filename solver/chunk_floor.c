/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lower bounds of the plans a chunked schedule's search can return
 * (solver_int.h, apsolve_chunk_floor; session_search.c, try_chunks;
 * docs/performance.md, "apsolve at scale: options shared across stage and
 * chunk counts"). A plan of n stages, each of whole chunks of v layers,
 * runs B micro-batches through its largest stage under every chunked
 * schedule (interleaved 1F1B: (sum + (v B - 1) max) / v >= B max, as
 * sum >= max; interleaved ZB and ZBV: every device works B x its stage,
 * dp.c's dp_bound), and its full estimate adds transfers and the apply
 * step, so B x its largest stage cost bounds both from below. Two floors
 * of that largest cost, from the table alone:
 *
 * - the least largest cost over the ways of cutting the layers into
 *   exactly n stages of whole chunks, each stage priced at its cheapest
 *   (submesh, config): the plan is one such cut, priced no lower;
 * - the least work (cost x devices, at its cheapest) of such a cut over
 *   the problem's D devices: the plan's stages use at most D devices and
 *   work at least that, so one of them costs at least work / D (the
 *   largest cost times D is at least the sum of cost x devices).
 *
 * ZB-V's fill floor (f->root; docs/performance.md, "ZB-V's fill floor per stage count"):
 * under ZB-V (v = 2) a plan of n stages pays the fill of its V, which the
 * floors above do not see. Stage k (on d_k devices; the plan's d_k sum to
 * the D devices, evaluate.c apsolve_plan_price) has the entry's fwd f_k,
 * bwd b_k and weight-gradient part w_k of it, and cost c_k. Its objective
 * (evaluate.c, apsolve_plan_price) and its full estimate (full_estimate.c)
 * are T - S + M plus terms >= 0 (the apply step, 2 x the transfers, and
 * the periods' excess over the costs), where T = base_time(2, B, sum c,
 * max c) or max period, S = base_time(2, B, sum (f + b), max (f + b)) and M
 * the makespan of PyTorch's V order (schedule_zb.c, zb_makespan: S - M is
 * apsolve_schedule_zb_saving). When every entry has c >= f + b, T >= S, so
 * both are at least M. M is a list schedule's makespan, so at least the
 * length of any chain of its passes: micro-batch 0's forwards through the
 * 2n chunks and its input-gradient passes back (each half its device's
 * f_k and b_k - w_k), M >= sum_k x_k with x_k = f_k + b_k - w_k. With
 * W_k <= d_k x_k the least d x (f + b - w) of stage k's layers over
 * submeshes and configs, Cauchy-Schwarz gives
 *   (sum_k sqrt W_k)^2 <= sum_k (W_k / d_k) x sum_k d_k <= D sum_k x_k,
 * so (least over n-cuts of sum_k sqrt W_k)^2 / D bounds every plan of n
 * stages from below; each[n] is raised to it / B. Entries with c < f + b
 * (up to 1e-12 of it), f < 0 or w outside 0 .. b leave root NULL (no fill
 * floor). Rounding (sums in other orders, the square root) is far inside
 * apsolve_chunk_skip's margin of 1e-9. Under best (apsolve_stage_floor_under,
 * tau = best / B, with that margin): a plan whose objective or full
 * estimate is below best has B x each stage's cost below it (the first
 * claim above), so each stage is an entry of cost below tau and W_k may be
 * taken over those entries alone; then every plan of n stages is at or
 * above min(best, B x each[n]), and B x each[n] >= best leaves n out
 * exactly as before. This drops the uneven cuts (one stage of most layers)
 * that make the unrestricted sum of roots small.
 *
 * ZB-V's path floor (f->x; docs/performance.md, "ZB-V's path floor and
 * device paths, interleaved ZB's sum floor"): a longer path of the same
 * list schedule, and the devices counted exactly. M is the length of the
 * longest path through its passes (each starts when its device's previous
 * pass and its inputs are done).
 * One path: micro-batch 0's forwards through chunks 0 .. 2n - 2 (f_0 / 2 +
 * sum_{k >= 1} f_k, chunk 0 and the others twice on devices 1 .. n - 1);
 * then device 0's own passes in its order from F(2n - 1, 0) to B(2n - 1,
 * B - 1), among them every F and B of chunk 2n - 1 for micro-batches 0 ..
 * B - 1 (a chunk's passes run in micro-batch order, each F before its B),
 * B (f_0 + b_0 - w_0) / 2 at least; then micro-batch B - 1's input
 * gradients back through chunks 2n - 2 .. 0 (sum_{k >= 1} (b_k - w_k) +
 * (b_0 - w_0) / 2) and its W on chunk 0 (w_0 / 2). In all
 *   M >= sum_k x_k + ((B - 1) x_0 + w_0) / 2,
 * x_k = f_k + b_k - w_k as above, stage 0 the one holding layer 0. With
 * x(i, j, s) the least x of stage i..j's configs on submesh s (cost <= tau,
 * as above), a DP over (first layer, devices used, stages) gives the least
 * of that sum over every cut into n stages of whole chunks whose submeshes'
 * devices sum to exactly D (evaluate.c: a plan on fewer is infeasible),
 * the first stage weighed ((B + 1) x + w) / 2 on its own config: every plan
 * of n stages under best is one such cut, priced no lower (its memory rule
 * and config left out only lower it), so each[n] is raised to it / B
 * exactly as the fill floor is. Skipped (no raise) when the DP's tables
 * would pass PATH_CELLS cells.
 *
 * ZB-V's device paths (paths_open), one path per device r: micro-batch 0's
 * forwards through chunks 0 .. r - 1; device r's passes in its order from
 * its first, F(r, 0), to F(2n - 1 - r, 0); micro-batch 0's forwards on to
 * the V's end and its input gradients back to chunk 2n - r (x_k / 2 of
 * each device k < r); device r's passes from B(2n - 1 - r, 0) to B(r, B -
 * 1); micro-batch B - 1's input gradients through chunks r - 1 .. 0 and
 * its W on chunk 0. Each step is an edge of the list schedule (the next
 * pass on the device, or an input), so
 *   M >= sum_{k<r} x_k + (a_r f_r + b_r' (b_r - w_r) + c_r w_r) / 2 + w_0 / 2,
 * a_r, b_r', c_r the F, B and W passes of device r's two segments, counted
 * on PyTorch's order (apsolve_schedule_zb_order at n, B: the V's order
 * drops passes of micro-batches >= B). On the 24-layer 405B's 8-stage
 * plan the path of its largest stage is its makespan exactly. A plan of n
 * stages below best (cost <= tau = best / B per stage, as above) has every
 * such path below U = B tau; the DP of paths_open asks whether any cut of n
 * stages on exactly D devices can, each stage priced by the least f, b - w
 * and w of its configs on its submesh (each no higher than the plan's),
 * and when none can, each[n] is +inf: no plan of n stages is under best,
 * and every one is at or above min(best, B x each[n]) as before. The
 * counts are tried from both ends inward, each end until one stays open,
 * and the transitions are capped (PATH_WORK per call); a count not tried
 * or not decided keeps its other floors. With the search's options
 * (f->opt: ZB-V's search in session_search.c try_chunks) each stage is
 * priced instead at one config the count's DP may put there under its
 * memory rule (chunk_floor_mem.c has the proof), and every count is tried:
 * on the 126-layer 405B that closes 11 of the 17 middle counts.
 *
 * Interleaved ZB's sum floor (f->x's fifth table, the least cost of each
 * (i, j, submesh) under tau; docs/performance.md, the section above): its
 * objective is (sum c + (v B - 1) max c) / v less (n - 1) x the least
 * fill of its stages / v (evaluate.c, schedule_zb.c
 * apsolve_schedule_zb_saving), its full estimate that with
 * the periods for the costs plus terms >= 0. With phi the largest fill /
 * cost of the entries under tau (f->fill; fill <= b <= c, so phi <= 1
 * where every entry has c >= f + b, checked as above), the least fill is
 * at most the mean, sum fill / n <= phi sum c / n, so the objective is at
 * least ((1 - (n - 1) phi / n) sum c + (v B - 1) max c) / v: sum c at least
 * the least over cuts on exactly D devices (the path floor's DP on the
 * least costs), max c at least the largest-stage floor above. Under tau
 * as the fill floor is (a plan under best has every stage below tau).
 *
 * A chunk count whose floor, at every stage count its schedule allows,
 * reaches the best full estimate so far cannot give a plan that beats it,
 * so skipping it changes no outcome; the search of a v that is not skipped
 * runs whole, so its plan and its counts are the ones it had.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "solver_int.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A state of one row of paths_open's level: its least prefix and devices. */
typedef struct PathState {
    double pre;
    int d;
} PathState;

/* Prefix ascending (devices ascending among equal prefixes). */
static int cmp_state(const void *a, const void *b)
{
    const PathState *x = a, *y = b;
    if (x->pre != y->pre)
        return x->pre < y->pre ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d);
}

/* f->root (the file comment) over the entries of cost at most tau: 0, or
 * -1 (root freed, left NULL) when the problem has no split of its backward
 * or an entry's split does not allow the fill floor. */
/* The most cells of a path floor's tables (f->x, and each DP level) */
#define PATH_CELLS ((size_t)1 << 22)
/* The most transitions of one call's device-path DPs (paths_open): a
 * work cap, never a floor (on the 126-layer 405B, n = 6, 7 and 26 .. 22
 * take about 60 million, n = 14 alone 9 million) */
#define PATH_WORK 200000000L

static int fill_roots(ApsolveStageFloor *f, double tau)
{
    const ApsolveProblem *p = f->p;
    int L = p->num_layers, S = p->num_submeshes;
    /* The last pass's least cost of each (i, j, s) over its entries of
     * cost <= its tau (x's fifth table, every range i <= j written by a
     * pass that ended), read at a lower tau only (the first pass, from
     * apsolve_stage_floor_roots, is at +inf): a submesh whose least was
     * above tau has no entry of cost <= tau now, each such entry having
     * been one of cost <= the last tau, so its configs are passed over
     * below whole, as one by one they would be. A NaN cost would have
     * ended the first pass (-1, no pass after it). */
    const double *least = f->x && tau < f->tau ? f->x + 4 * (size_t)L * L * S : NULL;
    f->tau = tau;
    f->fill = 0;
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++) {
            double r = INFINITY, fl;
            /* a range whose least cost (f->cost: over every submesh and
             * config, NaN left out) is above tau has every entry's cell
             * cost above tau or +inf: each is passed over below, so its
             * root and least figures are +inf without reading them */
            if (!(f->cost[(size_t)i * L + j] <= tau)) {
                for (int s = 0; f->x && s < S; s++)
                    for (int t = 0; t < 5; t++)
                        f->x[(size_t)t * L * L * S + ((size_t)i * L + j) * S + s] = INFINITY;
                f->root[(size_t)i * L + j] = INFINITY;
                continue;
            }
            for (int s = 0; s < S; s++) {
                double d = (double)p->submeshes[s].hosts * p->submeshes[s].gpus, xs = INFINITY,
                       fs = INFINITY, bs = INFINITY, ws = INFINITY, cs = INFINITY;
                int none = least && least[((size_t)i * L + j) * S + s] > tau;
                for (int k = 0; k < p->num_configs && !none; k++) {
                    size_t idx = apsolve_index(p, i, j, s, k);
                    double c = apsolve_cell_cost(p, idx, (size_t)s * p->num_configs + k), fw,
                           bw, wg;
                    if (isinf(c) || c > tau)
                        continue; /* no plan uses it; none under tau does */
                    fw = apsolve_times_at(p, idx)->fwd;
                    bw = apsolve_times_at(p, idx)->bwd;
                    wg = apsolve_times_at(p, idx)->wgrad;
                    if (!(fw >= 0 && wg >= 0 && wg <= bw && c >= (fw + bw) * (1 - 1e-12))) {
                        free(f->root);
                        free(f->x);
                        f->root = f->x = NULL;
                        return -1;
                    }
                    r = (fw + bw - wg) * d < r ? (fw + bw - wg) * d : r;
                    xs = fw + bw - wg < xs ? fw + bw - wg : xs;
                    fs = fw < fs ? fw : fs;
                    bs = bw - wg < bs ? bw - wg : bs;
                    ws = wg < ws ? wg : ws;
                    cs = c < cs ? c : cs;
                    /* fill <= b <= c: the ratio is at most 1, +inf at c = 0 only if fill > 0 */
                    fl = apsolve_schedule_zb_fill(fw, bw, wg);
                    if (fl > 0 && !(fl <= f->fill * c))
                        f->fill = c > 0 ? fl / c : INFINITY;
                }
                if (f->x) {
                    size_t at = ((size_t)i * L + j) * S + s, q = (size_t)L * L * S;
                    f->x[at] = xs;
                    f->x[q + at] = fs;
                    f->x[2 * q + at] = bs;
                    f->x[3 * q + at] = ws;
                    f->x[4 * q + at] = cs;
                }
            }
            f->root[(size_t)i * L + j] = sqrt(r);
        }
    return 0;
}

/* ZB-V's path floor (the file comment) into pf[1 .. nmax], or with zbv 0
 * the least sum of stage costs (interleaved ZB's sum floor): +inf where no
 * cut of n stages of whole chunks of v layers on exactly D devices holds
 * entries of cost <= f->tau alone, 0 (no floor) without f->x or memory. */
static void path_floor(const ApsolveStageFloor *f, int v, int B, int nmax, int zbv, double *pf)
{
    const double *t = f->x + (zbv ? 0 : 4 * (size_t)f->L * f->L * f->p->num_submeshes);
    const ApsolveProblem *p = f->p;
    int L = f->L, D = f->D, S = p->num_submeshes;
    size_t row = (size_t)D + 1, cells = ((size_t)L + 1) * row;
    double *prev = NULL, *cur = NULL, *y = NULL;
    int *fin = NULL, *nfin = NULL;
    for (int n = 0; n <= nmax; n++)
        pf[n] = 0;
    if (!f->x || cells > PATH_CELLS)
        return;
    prev = malloc(cells * sizeof *prev);
    cur = malloc(cells * sizeof *cur);
    fin = malloc(cells * sizeof *fin);
    nfin = malloc(((size_t)L + 1) * sizeof *nfin);
    y = malloc((size_t)L * (size_t)S * sizeof *y);
    if (!prev || !cur || !fin || !nfin || !y)
        goto done;
    /* y: the first stage 0..j on submesh s, ((B + 1) x + w) / 2 at its least
     * (ZB-V), or its least cost */
    for (int j = 0; j < L; j++)
        for (int s = 0; s < S; s++) {
            double m = zbv ? INFINITY : t[(size_t)j * S + s];
            for (int k = 0; k < p->num_configs && zbv; k++) {
                size_t idx = apsolve_index(p, 0, j, s, k);
                double c = apsolve_cell_cost(p, idx, (size_t)s * p->num_configs + k),
                       wg = apsolve_times_at(p, idx)->wgrad,
                       x = apsolve_times_at(p, idx)->fwd + apsolve_times_at(p, idx)->bwd - wg, a;
                if (isinf(c) || c > f->tau)
                    continue;
                a = ((B + 1.0) * x + wg) / 2;
                m = a < m ? a : m;
            }
            y[(size_t)j * S + s] = m;
        }
    for (size_t q = 0; q < cells; q++)
        prev[q] = INFINITY;
    prev[(size_t)L * row] = 0; /* no stage: layer L reached on no device */
    for (int m = 1; m <= nmax && m * v <= L; m++) {
        double least = INFINITY;
        /* the devices of each row that m - 1 stages can end on */
        for (int i = 0; i <= L; i++) {
            nfin[i] = 0;
            for (int d = 0; d <= D; d++)
                if (!isinf(prev[(size_t)i * row + d]))
                    fin[(size_t)i * row + (size_t)nfin[i]++] = d;
        }
        /* n = m: the first stage 0..j, then m - 1 stages from j + 1 */
        for (int j = v - 1; j < L; j += v)
            for (int s = 0; s < S; s++) {
                int d = p->submeshes[s].hosts * p->submeshes[s].gpus;
                double a;
                if (d > D)
                    continue;
                a = y[(size_t)j * S + s] + prev[(size_t)(j + 1) * row + (size_t)(D - d)];
                least = a < least ? a : least;
            }
        pf[m] = least;
        /* level m: m stages from each row i >= 1 (none of them the first) */
        for (size_t q = 0; q < cells; q++)
            cur[q] = INFINITY;
        for (int i = L - v; i >= 1 && m < nmax; i -= v) /* rows a cut can start a stage at */
            for (int j = i + v - 1; j < L; j += v)
                for (int s = 0; s < S; s++) {
                    int d = p->submeshes[s].hosts * p->submeshes[s].gpus;
                    double xs = t[((size_t)i * L + j) * S + s];
                    const int *ds = fin + (size_t)(j + 1) * row;
                    if (isinf(xs))
                        continue;
                    for (int q = 0; q < nfin[j + 1]; q++) {
                        int e = ds[q] + d;
                        double a;
                        if (e > D)
                            continue;
                        a = xs + prev[(size_t)(j + 1) * row + (size_t)ds[q]];
                        if (a < cur[(size_t)i * row + (size_t)e])
                            cur[(size_t)i * row + (size_t)e] = a;
                    }
                }
        {
            double *tmp = prev;
            prev = cur;
            cur = tmp;
        }
    }
done:
    free(prev);
    free(cur);
    free(fin);
    free(nfin);
    free(y);
}

/* ZB-V's device paths (the file comment) at n stages: 0 when no cut of n
 * stages of whole chunks of v layers on exactly D devices, every entry of
 * cost <= f->tau, has every path below U = B tau (then no plan of n stages
 * is under best); 1 when one may; -1 undecided (memory, or *budget of
 * transitions spent). A DP from layer 0 over (layer, devices) per stages
 * placed r, each state holding the least prefix sum_{k<r} x_k + w_0 / 2 of
 * the cuts that keep every path so far below U: a smaller prefix only
 * loosens the paths after it, so the least is enough. */
static int paths_open(const ApsolveStageFloor *f, const ApsolveZbLists *z, int v, int B, int n,
                      long *budget)
{
    const ApsolveProblem *p = f->p;
    int L = f->L, D = f->D, S = p->num_submeshes, per = 6 * B, open = -1;
    size_t row = (size_t)D + 1, cells = ((size_t)L + 1) * row, q = (size_t)L * L * S;
    double U = B * f->tau, *cur = malloc(cells * sizeof *cur), *nxt = malloc(cells * sizeof *nxt);
    /* fin: the states of this level, then those of the next */
    int *cnt = malloc(3 * (size_t)n * sizeof *cnt), *fin = malloc(2 * cells * sizeof *fin);
    ApsolvePass *ord = malloc((size_t)per * sizeof *ord);
    PathState *grp = malloc(row * sizeof *grp); /* a row's states, prefix ascending */
    size_t nfin = 0;
    if (!cur || !nxt || !cnt || !fin || !ord || !grp)
        goto done;
    /* per device r: the F, B and W passes of its two segments */
    for (int r = 0; r < n; r++) {
        int k = apsolve_schedule_zb_order(APSOLVE_SCHEDULE_ZBV, 2, B, n, r, ord),
            c1 = 2 * n - 1 - r, in = 1, *c = cnt + 3 * r;
        c[0] = c[1] = c[2] = 0;
        if (k != per)
            goto done;
        for (int t = 0; t < per; t++) {
            const ApsolvePass *ps = &ord[t];
            if (ps->op == 1 && ps->stage == c1 && ps->mb == 0)
                in = 1; /* B(c1, 0): the second segment starts */
            if (in)
                c[ps->op]++;
            if (ps->op == 0 && ps->stage == c1 && ps->mb == 0)
                in = 0; /* F(c1, 0) ends the first */
            if (ps->op == 1 && ps->stage == r && ps->mb == B - 1)
                break; /* B(c0, B - 1) ends the second */
        }
    }
    for (size_t t = 0; t < cells; t++)
        cur[t] = INFINITY;
    cur[0] = 0; /* layer 0, no device */
    fin[nfin++] = 0;
    for (int r = 0; r < n && nfin; r++) {
        const int *c = cnt + 3 * r;
        size_t nn = 0;
        for (size_t t = 0; t < cells; t++)
            nxt[t] = INFINITY;
        /* the level's states by row (first layer), devices ascending: each
         * (j, s) of a row is then priced once for all its states, and the
         * states read in a run; the level's states, least prefixes and
         * transitions (the budget) do not depend on the order visited */
        qsort(fin, nfin, sizeof *fin, cmp_int);
        for (size_t e = 0, e1; e < nfin; e = e1) {
            int i = fin[e] / (int)row;
            for (e1 = e; e1 < nfin && fin[e1] / (int)row == i; e1++) {
                grp[e1 - e].pre = cur[fin[e1]];
                grp[e1 - e].d = fin[e1] - i * (int)row;
            }
            /* by prefix: the states that pass a (j, s)'s test below are the
             * first ones (docs/performance.md, "apsolve's floors, third
             * round") */
            qsort(grp, e1 - e, sizeof *grp, cmp_state);
            for (int j = i + v - 1; j < L; j += v) {
                if (L - 1 - j < (n - 1 - r) * v || (r == n - 1 && j != L - 1))
                    continue;
                for (int s = 0; s < S; s++) {
                    size_t at = ((size_t)i * L + j) * S + s;
                    int dv = p->submeshes[s].hosts * p->submeshes[s].gpus;
                    /* with z, each config the count's DP may put at stage
                     * r (chunk_floor_mem.c), else the least figures */
                    size_t o0 = z ? z->at[at] : 0, o1 = z ? z->at[at + 1] : 1;
                    for (size_t o = o0; o < o1; o++) {
                        double seg, w0, xa;
                        if (z) {
                            const ApsolveZbCfg *g = &z->cfg[o];
                            if (!apsolve_zb_allowed(z, g->u, n, r))
                                continue;
                            w0 = r ? 0 : g->w / 2;
                            xa = g->x;
                            seg = (c[0] * g->f + c[1] * g->bw + c[2] * g->w) / 2;
                        } else {
                            w0 = r ? 0 : f->x[3 * q + at] / 2;
                            xa = f->x[at];
                            seg = (c[0] * f->x[q + at] + c[1] * f->x[2 * q + at] +
                                   c[2] * f->x[3 * q + at]) / 2;
                        }
                        if ((long)(e1 - e) > *budget) { /* a transition per state, as counted */
                            *budget = -1;
                            goto done;
                        }
                        *budget -= (long)(e1 - e);
                        for (size_t k = 0; k < e1 - e; k++) {
                            int e2 = grp[k].d + dv;
                            double pre = grp[k].pre, nx;
                            /* a path reaches U: no plan under best; the sums
                             * rise with pre (rounding is monotone), so the
                             * rest of the row's states reach it too */
                            if (!(pre + seg + w0 < U))
                                break;
                            if (e2 > D - (n - 1 - r))
                                continue;
                            if (r == n - 1 && e2 != D)
                                continue;
                            nx = pre + xa + w0;
                            if (nx < nxt[(size_t)(j + 1) * row + (size_t)e2]) {
                                if (isinf(nxt[(size_t)(j + 1) * row + (size_t)e2]))
                                    fin[nfin + nn++] = (j + 1) * (int)row + e2; /* after cur's */
                                nxt[(size_t)(j + 1) * row + (size_t)e2] = nx;
                            }
                        }
                    }
                }
            }
        }
        memmove(fin, fin + nfin, nn * sizeof *fin);
        nfin = nn;
        {
            double *t = cur;
            cur = nxt;
            nxt = t;
        }
    }
    open = nfin > 0; /* only (L, D) can be left after n stages */
done:
    free(cur);
    free(nxt);
    free(cnt);
    free(fin);
    free(ord);
    free(grp);
    return open;
}

void apsolve_stage_floor_under(ApsolveStageFloor *f, double tau)
{
    if (f->root && tau != f->tau)
        fill_roots(f, tau);
}

int apsolve_stage_floor_init(ApsolveStageFloor *f, const ApsolveProblem *p)
{
    int rc = apsolve_stage_floor_init_plain(f, p);
    if (rc == APSOLVE_OK)
        apsolve_stage_floor_roots(f);
    return rc;
}

void apsolve_stage_floor_roots(ApsolveStageFloor *f)
{
    const ApsolveProblem *p = f->p;
    int L = f->L;
    if (f->roots)
        return;
    f->roots = 1;
    if (p->times &&
        (f->root = malloc((size_t)L * (size_t)L * sizeof *f->root))) {
        size_t xs = 5 * (size_t)L * (size_t)L * (size_t)p->num_submeshes;
        f->x = xs <= PATH_CELLS ? malloc(xs * sizeof *f->x) : NULL; /* NULL: no path floor */
        fill_roots(f, INFINITY);
    }
}

int apsolve_stage_floor_init_plain(ApsolveStageFloor *f, const ApsolveProblem *p)
{
    int L = p->num_layers;
    f->L = L;
    f->D = p->num_devices;
    f->cost = malloc((size_t)L * (size_t)L * sizeof *f->cost);
    f->work = malloc((size_t)L * (size_t)L * sizeof *f->work);
    f->root = f->x = NULL;
    f->tau = INFINITY;
    f->roots = 0;
    f->opt = NULL;
    f->p = p;
    f->g = malloc(((size_t)L + 1) * 3 * sizeof *f->g);
    if (!f->cost || !f->work || !f->g) {
        apsolve_stage_floor_free(f);
        return APSOLVE_ENOMEM;
    }
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++) {
            double c = INFINITY, w = INFINITY;
            for (int s = 0; s < p->num_submeshes; s++) {
                double d = (double)p->submeshes[s].hosts * p->submeshes[s].gpus;
                for (int k = 0; k < p->num_configs; k++) {
                    double x = p->cost[apsolve_index(p, i, j, s, k)];
                    c = x < c ? x : c; /* NaN: never less */
                    w = x * d < w ? x * d : w;
                }
            }
            f->cost[(size_t)i * L + j] = c;
            f->work[(size_t)i * L + j] = w;
        }
    return APSOLVE_OK;
}

void apsolve_stage_floor_free(ApsolveStageFloor *f)
{
    free(f->cost);
    free(f->work);
    free(f->root);
    free(f->x);
    free(f->g);
    f->cost = f->work = f->root = f->x = f->g = NULL;
}

void apsolve_chunk_floor_each(const ApsolveStageFloor *f, int kind, int v, int B, int nmax,
                              double *each)
{
    int L = f->L;
    /* g[i]: the least largest cost, h[i] the least work, of covering
     * layers i..L-1 by exactly m stages of whole chunks (m = 1, 2, ...) */
    double *g = f->g, *h = f->g + L + 1, *r = f->g + 2 * (L + 1);
    int fill = kind == APSOLVE_SCHEDULE_ZBV && f->root; /* r[i]: the least sum of roots */
    /* interleaved ZB's sum floor (the file comment): its fill ratio at most 1 */
    int izb = kind == APSOLVE_SCHEDULE_INTERLEAVED_ZB && f->x && f->fill <= 1;
    double *pf = (fill || izb) && f->x ? malloc(((size_t)nmax + 1) * sizeof *pf) : NULL;
    long budget = PATH_WORK;
    /* the most stages a count of the schedule has: each[m] of a count m
     * past it is left +inf, and row m of the DPs below reads only rows of
     * fewer stages, so they stop there (interleaved 1F1B and interleaved
     * ZB allow no more than B stages) */
    int top = v >= 1 && L / v < nmax ? L / v : nmax;
    while (top >= 1 && !apsolve_schedule_valid((ApsolveSchedule)kind, v, B, top, NULL, 0))
        top--;
    if (pf)
        path_floor(f, v, B, top, fill, pf);
    for (int m = 0; m <= nmax; m++)
        each[m] = INFINITY;
    for (int i = 0; i <= L; i++)
        g[i] = h[i] = r[i] = i == L ? 0 : INFINITY;
    for (int m = 1; m <= top; m++) {
        /* in place, i ascending: row i reads rows > i of count m - 1. Only
         * the rows each[] reads through are made (docs/performance.md,
         * "apsolve's floors, third round"): row 0 reads rows i + kv
         * only, so rows of i % v != 0 never reach it; a row past L - m v
         * (fewer than m v layers left) and a row j + 1 past L - (m - 1) v
         * at count m - 1 are +inf, which no min below takes, so neither is
         * made nor read (a row left past that keeps count m - 1's figure,
         * and count m + 1 reads rows up to L - m v only) */
        int ilast = L - m * v, jlast = L - 1 - (m - 1) * v;
        for (int i = 0; i <= ilast; i += v) {
            double gi = INFINITY, hi = INFINITY;
            for (int j = i + v - 1; j <= jlast; j += v) {
                double a = f->cost[(size_t)i * L + j], b = g[j + 1];
                double mx = a > b ? a : b, w = f->work[(size_t)i * L + j] + h[j + 1];
                gi = mx < gi ? mx : gi;
                hi = w < hi ? w : hi;
            }
            g[i] = gi;
            h[i] = hi;
            if (fill) {
                double ri = INFINITY;
                for (int j = i + v - 1; j <= jlast; j += v) {
                    double x = f->root[(size_t)i * L + j] + r[j + 1];
                    ri = x < ri ? x : ri;
                }
                r[i] = ri;
            }
        }
        g[L] = h[L] = r[L] = INFINITY; /* m >= 1 stages cover at least one layer */
        if (apsolve_schedule_valid((ApsolveSchedule)kind, v, B, m, NULL, 0)) {
            each[m] = h[0] / f->D > g[0] ? h[0] / f->D : g[0];
            if (izb && pf) {
                double z = ((1 - (m - 1) * f->fill / m) * pf[m] + (v * (double)B - 1) * each[m]) /
                           v / B;
                each[m] = z > each[m] ? z : each[m];
            }
            if (fill && r[0] * r[0] / f->D / B > each[m])
                each[m] = r[0] * r[0] / f->D / B;
            if (fill && pf && pf[m] / B > each[m])
                each[m] = pf[m] / B;
        }
    }
    /* the device paths (a count none of whose plans is under best: none is
     * below it), from the fewest and the most stages inward, each end until
     * a count stays open (the middle ones, whose plans balance, stay open
     * on the files measured, unless priced under the memory rule) */
    if (fill && pf && isfinite(f->tau) && f->opt) {
        /* under the count's memory rule, one config per stage
         * (chunk_floor_mem.c): every count tried (the middle ones close) */
        ApsolveZbLists z;
        if (apsolve_zb_lists_build(&z, f, f->opt, v, nmax) == APSOLVE_OK) {
            for (int m = 1; m <= top && budget >= 0; m++)
                if (each[m] < f->tau && paths_open(f, &z, v, B, m, &budget) == 0)
                    each[m] = INFINITY;
            apsolve_zb_lists_free(&z);
            free(pf);
            return;
        }
    }
    for (int end = 0; fill && pf && isfinite(f->tau) && end < 2; end++)
        for (int k = 0; k < nmax; k++) {
            int m = end ? nmax - k : 1 + k, o;
            if (!(each[m] < f->tau))
                continue; /* left out already, or not a count */
            if ((o = paths_open(f, NULL, v, B, m, &budget)) != 0)
                break;
            each[m] = INFINITY;
        }
    free(pf);
}

double apsolve_chunk_floor(const ApsolveStageFloor *f, int kind, int v, int B, int nmax)
{
    double *each = malloc(((size_t)(nmax > 0 ? nmax : 0) + 1) * sizeof *each), floor = INFINITY;
    if (!each)
        return 0; /* no floor: nothing skipped */
    apsolve_chunk_floor_each(f, kind, v, B, nmax, each);
    for (int m = 1; m <= nmax; m++)
        floor = each[m] < floor ? each[m] : floor;
    free(each);
    return floor;
}

int apsolve_chunk_skip(double floor, int B, double best)
{
    return (double)B * floor * (1 - 1e-9) >= best;
}
