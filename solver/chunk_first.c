/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chunked family's first plan to beat (chunk_first.h; docs/
 * performance.md, "A plan to beat first for the interleaved family").
 *
 * try_chunks keeps a v's plan when its full estimate is strictly below the
 * best so far, v ascending, so from no plan to beat the family ends on the
 * first v of least full estimate P (the winner w). Searched with first
 * (full estimate X) ahead of the others, and the bar of each v taken from
 * apsolve_chunk_order_bar, it ends on w too:
 *
 * - a v < first is kept when below the best so far, or at X while the
 *   best is still first's (the next double above X as its bar; every cut
 *   of try_chunks is exact for "below the bar", so a plan at X is kept);
 *   the ascending pass over v < first thus ends on the first v of least
 *   full estimate among those at or below X, if any;
 * - first itself is searched whole from no bar, its plan kept when
 *   feasible (its full estimate X);
 * - a v > first is kept only strictly below the best so far.
 *
 * If w < first, P <= X: the pass over v < first ends on w, and no v >
 * first is below P. If w = first, every v < first is above X (not kept)
 * and none after is below X. If w > first, every v <= first is above P
 * and w is the first v > first at P, kept over whatever came before
 * (above P). A v's plan and full estimate do not depend on its bar when
 * kept (chunk_solve then searches every count whole), so the plan, its
 * counts and options are the family's from no plan to beat. The bound
 * and floor cuts of try_chunks leave out only v whose plans are all at or
 * above the bar, none of them kept under either order.
 */
#include <math.h>

#include "chunk_first.h"
#include "schedule.h"

void apsolve_chunk_order_init(ApsolveChunkOrder *o, int vmin, int vmax, int first)
{
    o->vmin = vmin;
    o->vmax = vmax;
    o->first = first >= vmin && first <= vmax ? first : -1;
    o->at = o->first >= 0 ? vmin - 1 : vmin;
    o->first_won = 0;
}

int apsolve_chunk_order_next(ApsolveChunkOrder *o)
{
    if (o->first >= 0 && o->at == o->vmin - 1) {
        o->at = o->vmin;
        return o->first;
    }
    if (o->at == o->first)
        o->at++;
    return o->at <= o->vmax ? o->at++ : -1;
}

double apsolve_chunk_order_bar(const ApsolveChunkOrder *o, int v, double best)
{
    if (o->first >= 0 && v < o->first && o->first_won && isfinite(best))
        return nextafter(best, INFINITY);
    return best;
}

void apsolve_chunk_order_kept(ApsolveChunkOrder *o, int v)
{
    o->first_won = v == o->first;
}

void apsolve_chunk_order_start(ApsolveChunkOrder *o, const ApsolveStageFloor *f, int kind,
                               int vmin, int vmax, int B, int nmax, double bar, double *each)
{
    apsolve_chunk_order_init(o, vmin, vmax,
                             f && kind == APSOLVE_SCHEDULE_INTERLEAVED && isinf(bar)
                                 ? apsolve_chunk_first_v(f, kind, vmin, vmax, B, nmax, each)
                                 : -1);
}

int apsolve_chunk_first_v(const ApsolveStageFloor *f, int kind, int vmin, int vmax, int B,
                          int nmax, double *each)
{
    int best = -1;
    double least = INFINITY;
    for (int v = vmin; v <= vmax && v <= f->L; v++) {
        apsolve_chunk_floor_each(f, kind, v, B, nmax, each);
        for (int n = 1; n <= nmax; n++) {
            double t;
            if (!isfinite(each[n]))
                continue;
            t = apsolve_schedule_base_time(v, B, n * each[n], each[n]);
            if (t < least) {
                least = t;
                best = v;
            }
        }
    }
    return best;
}
