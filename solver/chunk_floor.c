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
 * A chunk count whose floor, at every stage count its schedule allows,
 * reaches the best full estimate so far cannot give a plan that beats it,
 * so skipping it changes no outcome; the search of a v that is not skipped
 * runs whole, so its plan and its counts are the ones it had.
 */
#include <math.h>
#include <stdlib.h>

#include "schedule.h"
#include "solver_int.h"

int apsolve_stage_floor_init(ApsolveStageFloor *f, const ApsolveProblem *p)
{
    int L = p->num_layers;
    f->L = L;
    f->D = p->num_devices;
    f->cost = malloc((size_t)L * (size_t)L * sizeof *f->cost);
    f->work = malloc((size_t)L * (size_t)L * sizeof *f->work);
    f->g = malloc(((size_t)L + 1) * 2 * sizeof *f->g);
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
    free(f->g);
    f->cost = f->work = f->g = NULL;
}

void apsolve_chunk_floor_each(const ApsolveStageFloor *f, int kind, int v, int B, int nmax,
                              double *each)
{
    int L = f->L;
    /* g[i]: the least largest cost, h[i] the least work, of covering
     * layers i..L-1 by exactly m stages of whole chunks (m = 1, 2, ...) */
    double *g = f->g, *h = f->g + L + 1;
    for (int m = 0; m <= nmax; m++)
        each[m] = INFINITY;
    for (int i = 0; i <= L; i++)
        g[i] = h[i] = i == L ? 0 : INFINITY;
    for (int m = 1; m <= nmax && m * v <= L; m++) {
        /* in place, i ascending: row i reads rows > i of count m - 1 */
        for (int i = 0; i < L; i++) {
            double gi = INFINITY, hi = INFINITY;
            for (int j = i + v - 1; j < L; j += v) {
                double a = f->cost[(size_t)i * L + j], b = g[j + 1];
                double mx = a > b ? a : b, w = f->work[(size_t)i * L + j] + h[j + 1];
                gi = mx < gi ? mx : gi;
                hi = w < hi ? w : hi;
            }
            g[i] = gi;
            h[i] = hi;
        }
        g[L] = h[L] = INFINITY; /* m >= 1 stages cover at least one layer */
        if (apsolve_schedule_valid((ApsolveSchedule)kind, v, B, m, NULL, 0))
            each[m] = h[0] / f->D > g[0] ? h[0] / f->D : g[0];
    }
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
