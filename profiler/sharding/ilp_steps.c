/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arithmetic of each step of the strategy ILP's exact elimination
 * (ilp_elim.c), shared by the elimination and its replay (ilp_work_replay,
 * docs/performance.md "Memory levels by replay"): each step a minimum over
 * the eliminated node(s) for every choice of what stays, with an argmin
 * table for the back-substitution. One function per kind of step serves
 * both, so a replay's sums and comparisons are the elimination's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "sharding/ilp_int.h"

/* r entry of edge e for endpoint x at local a and the other at b. */
static double edge_at(const Work *w, const WEdge *e, int x, int a, int b)
{
    if (e->u == x)
        return e->r[(size_t)a * w->n[e->v].k + b];
    return e->r[(size_t)b * w->n[e->v].k + a];
}

/* The edges a step reads are named by id, so a replay reads the same
 * tables in the same order. */

/* A scratch buffer of n doubles (w's, valid until the next call). */
static double *work_scratch(Work *w, size_t n)
{
    if (n > w->cap_scratch) {
        double *b = realloc(w->scratch, n * sizeof(double));
        if (!b)
            return NULL;
        w->scratch = b;
        w->cap_scratch = n;
    }
    return w->scratch;
}

/* EL_FIXED: x's one strategy folded into the other end of edge e. */
void ilp_fold_fixed(Work *w, int x, int e)
{
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[ilp_other_end(ed, x)];
    for (int j = 0; j < y->k; j++)
        y->c[j] += edge_at(w, ed, x, 0, j);
}

/* EL_DEG0: arg[0] the cheapest strategy of x; APPROF_EINFEASIBLE when
 * even that one is infinite. */
int ilp_table_deg0(const Work *w, int x, int *arg)
{
    const WNode *a = &w->n[x];
    arg[0] = 0;
    for (int i = 1; i < a->k; i++)
        if (a->c[i] < a->c[arg[0]])
            arg[0] = i;
    return isfinite(a->c[arg[0]]) ? 0 : APPROF_EINFEASIBLE;
}

/* EL_DEG1: x's best strategy for each of y's (the other end of e) folded
 * into y's costs, the argmin into arg. */
void ilp_fold_deg1(Work *w, int x, int e, int *arg)
{
    const WNode *a = &w->n[x];
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[ilp_other_end(ed, x)];
    for (int j = 0; j < y->k; j++) {
        double best = INFINITY;
        arg[j] = 0;
        for (int i = 0; i < a->k; i++) {
            double v = a->c[i] + edge_at(w, ed, x, i, j);
            if (v < best) {
                best = v;
                arg[j] = i;
            }
        }
        y->c[j] += best;
    }
}

/* Where edge e's entry for x at i and the other end at j lies: e->r[i *
 * *si + j * *sj], the layout edge_at reads, taken once per table so that
 * a step's loops read the tables in place. */
static void edge_strides(const Work *w, const WEdge *e, int x, size_t *si, size_t *sj)
{
    if (e->u == x) {
        *si = (size_t)w->n[e->v].k;
        *sj = 1;
    } else {
        *si = 1;
        *sj = (size_t)w->n[e->v].k;
    }
}

/* Largest x whose c_x + r1 a degree-2 step keeps on the stack. */
#define DEG2_STACK 64

/* The k_y x k_z table of a degree-2 step (table_deg2) for kx strategies
 * of x: inlined for each small kx (a constant there, so the loop over x's
 * strategies is unrolled), and for the pairs of kx and kz that make most
 * of llama-3-8b's full sweep also kz (docs/performance.md "The degree-2
 * steps by the count of z's strategies"); the same sums and comparisons
 * in the same order for every kx and kz. */
static inline __attribute__((always_inline)) void deg2_fill(
    int kx, int ky, int kz, const double *c, const double *r1, size_t si1, size_t sj1,
    const double *r2, size_t si2, size_t sl2, double *t, int *arg, double *r, size_t rj,
    size_t rl, int add)
{
    for (int j = 0; j < ky; j++) {
        const double *row = r1 + (size_t)j * sj1;
        for (int i = 0; i < kx; i++)
            t[i] = c[i] + row[(size_t)i * si1];
        for (int l = 0; l < kz; l++) {
            const double *col = r2 + (size_t)l * sl2;
            double best = INFINITY;
            int bi = 0;
            for (int i = 0; i < kx; i++) {
                double v = t[i] + col[(size_t)i * si2];
                if (v < best) {
                    best = v;
                    bi = i;
                }
            }
            arg[(size_t)j * kz + l] = bi;
            if (add)
                r[(size_t)j * rj + (size_t)l * rl] += best;
            else
                r[(size_t)j * rj + (size_t)l * rl] = best;
        }
    }
}

/* The strides of out's table by y's and z's strategies (edge_strides). */
static void step_out_strides(const Work *w, const StepOut *out, int kz, double **r, size_t *rj,
                             size_t *rl)
{
    if (out->acc) {
        *r = out->acc->r;
        edge_strides(w, out->acc, out->y, rj, rl);
    } else {
        *r = out->r;
        *rj = (size_t)kz;
        *rl = 1;
    }
}

/* EL_DEG2: x's best strategy for each pair of y's and z's (the other ends
 * of e1 and e2), the k_y x k_z table into out, the argmin into arg; 0 or
 * APPROF_ENOMEM. Each candidate is (c_x + r1) + r2 as written out in
 * full, the first sum kept per y's strategy, both tables read in place;
 * the first least candidate is taken. */
int ilp_table_deg2(Work *w, int x, int e1, int e2, int *arg, const StepOut *out)
{
    const WNode *a = &w->n[x];
    const WEdge *d1 = &w->e[e1], *d2 = &w->e[e2];
    int kx = a->k, ky = w->n[ilp_other_end(d1, x)].k, kz = w->n[ilp_other_end(d2, x)].k;
    double stack[DEG2_STACK], *t = stack;
    size_t si1, sj1, si2, sl2;
    if (kx > DEG2_STACK && !(t = work_scratch(w, (size_t)kx)))
        return APPROF_ENOMEM;
    double *r;
    size_t rj, rl;
    edge_strides(w, d1, x, &si1, &sj1);
    edge_strides(w, d2, x, &si2, &sl2);
    step_out_strides(w, out, kz, &r, &rj, &rl);
#define DEG2_FILL(K, KZ, ADD) \
    deg2_fill(K, ky, KZ, a->c, d1->r, si1, sj1, d2->r, si2, sl2, t, arg, r, rj, rl, ADD)
#define DEG2_SWITCH(ADD) \
    switch (kx * 8 + kz) { \
    case 3 * 8 + 2: DEG2_FILL(3, 2, ADD); break; \
    case 4 * 8 + 2: DEG2_FILL(4, 2, ADD); break; \
    case 4 * 8 + 3: DEG2_FILL(4, 3, ADD); break; \
    case 4 * 8 + 4: DEG2_FILL(4, 4, ADD); break; \
    case 4 * 8 + 5: DEG2_FILL(4, 5, ADD); break; \
    case 5 * 8 + 2: DEG2_FILL(5, 2, ADD); break; \
    case 5 * 8 + 3: DEG2_FILL(5, 3, ADD); break; \
    case 5 * 8 + 4: DEG2_FILL(5, 4, ADD); break; \
    case 5 * 8 + 5: DEG2_FILL(5, 5, ADD); break; \
    case 5 * 8 + 6: DEG2_FILL(5, 6, ADD); break; \
    default: \
        switch (kx) { \
        case 2: DEG2_FILL(2, kz, ADD); break; \
        case 3: DEG2_FILL(3, kz, ADD); break; \
        case 4: DEG2_FILL(4, kz, ADD); break; \
        case 5: DEG2_FILL(5, kz, ADD); break; \
        case 6: DEG2_FILL(6, kz, ADD); break; \
        default: DEG2_FILL(kx, kz, ADD); break; \
        } \
    }
    if (out->acc) {
        DEG2_SWITCH(1)
    } else {
        DEG2_SWITCH(0)
    }
#undef DEG2_SWITCH
#undef DEG2_FILL
    return 0;
}

/* Largest scratch of doubles a twin-pair step keeps on the stack. */
#define PAIR_STACK 256

/* The least base[i][j] + cx[i] + cy[j] (the first in i, then j), its
 * i * ky + j into *arg: inlined for the twin pairs' usual sizes (3 x 2
 * and 4 x 3 strategies make nearly all of llama-3-8b's full sweep,
 * docs/performance.md), constants there, so the loops are unrolled; the
 * same sums and comparisons in the same order for every size. */
static inline __attribute__((always_inline)) double pair_min(int kx, int ky, const double *base,
                                                             const double *cx, const double *cy,
                                                             int *arg)
{
    double best = INFINITY;
    int bi = 0;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++) {
            double v = base[(size_t)i * ky + j] + cx[i] + cy[j];
            if (v < best) {
                best = v;
                bi = i * ky + j;
            }
        }
    *arg = bi;
    return best;
}

/* pair_min when y has no edge to a or c (cy all +0.0, the sum 0.0 + 0.0 of
 * its absent terms): the least base[i][j] + cx[i], plus 0.0. Adding +0.0
 * changes no value but -0.0 (to +0.0, equal to it in every comparison) and
 * keeps NaN NaN, so each candidate compares as base[i][j] + cx[i] + cy[j]
 * does, the same one is taken (ties included), and its value plus 0.0 is
 * that candidate's: bit for bit pair_min's answer, one sum fewer a
 * candidate and no cy to fill (docs/performance.md "The twin pairs without
 * the twin's outer edges"). */
static inline __attribute__((always_inline)) double pair_min_lone(int kx, int ky,
                                                                  const double *base,
                                                                  const double *cx, int *arg)
{
    double best = INFINITY;
    int bi = 0;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++) {
            double v = base[(size_t)i * ky + j] + cx[i];
            if (v < best) {
                best = v;
                bi = i * ky + j;
            }
        }
    *arg = bi;
    return best + 0.0;
}

/* EL_PAIR: x and its twin y at their best for each pair of a's and c's,
 * e = {x-y, x-a, x-c, y-a or -1, y-c or -1}; the k_a x k_c table into r,
 * the argmin (x's choice * k_y + y's) into arg. 0 or APPROF_ENOMEM. The
 * tables are read in place (edge_strides). */
int ilp_table_pair(Work *w, int x, const int e[5], int *arg, const StepOut *out)
{
    const WEdge *exy = &w->e[e[0]], *exa = &w->e[e[1]], *exc = &w->e[e[2]];
    const WEdge *eya = e[3] >= 0 ? &w->e[e[3]] : NULL, *eyc = e[4] >= 0 ? &w->e[e[4]] : NULL;
    int y = ilp_other_end(exy, x);
    const WNode *nx = &w->n[x], *ny = &w->n[y];
    int kx = nx->k, ky = ny->k, ka = w->n[ilp_other_end(exa, x)].k, kc = w->n[ilp_other_end(exc, x)].k;
    size_t need = (size_t)kx * ky + 2 * (size_t)kx + 2 * (size_t)ky;
    size_t sxy_i, sxy_j, sxa_i, sxa_s, sxc_i, sxc_u, sya_j = 0, sya_s = 0, syc_j = 0, syc_u = 0;
    /* base[i][j]: x at i and y at j with their edge; then the a and c
     * terms of x (ax, cx) and of y (ay, cy) */
    double stack[PAIR_STACK], *base = stack;
    if (need > PAIR_STACK && !(base = work_scratch(w, need)))
        return APPROF_ENOMEM;
    double *ax = base + (size_t)kx * ky, *cx = ax + kx, *ay = cx + kx, *cy = ay + ky;
    double *r;
    size_t rs, ru;
    step_out_strides(w, out, kc, &r, &rs, &ru);
    edge_strides(w, exy, x, &sxy_i, &sxy_j);
    edge_strides(w, exa, x, &sxa_i, &sxa_s);
    edge_strides(w, exc, x, &sxc_i, &sxc_u);
    if (eya)
        edge_strides(w, eya, y, &sya_j, &sya_s);
    if (eyc)
        edge_strides(w, eyc, y, &syc_j, &syc_u);
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++)
            base[(size_t)i * ky + j] =
                nx->c[i] + ny->c[j] + exy->r[(size_t)i * sxy_i + (size_t)j * sxy_j];
    for (int s = 0; s < ka; s++) {
        for (int i = 0; i < kx; i++)
            ax[i] = exa->r[(size_t)i * sxa_i + (size_t)s * sxa_s];
        if (!eya && !eyc) {
            for (int u = 0; u < kc; u++) {
                for (int i = 0; i < kx; i++)
                    cx[i] = ax[i] + exc->r[(size_t)i * sxc_i + (size_t)u * sxc_u];
                int bi = 0;
                double best;
                switch (kx * 8 + ky) {
                case 3 * 8 + 2: best = pair_min_lone(3, 2, base, cx, &bi); break;
                case 4 * 8 + 3: best = pair_min_lone(4, 3, base, cx, &bi); break;
                default: best = pair_min_lone(kx, ky, base, cx, &bi); break;
                }
                if (out->acc)
                    r[(size_t)s * rs + (size_t)u * ru] += best;
                else
                    r[(size_t)s * rs + (size_t)u * ru] = best;
                arg[(size_t)s * kc + u] = bi;
            }
            continue;
        }
        for (int j = 0; j < ky; j++)
            ay[j] = eya ? eya->r[(size_t)j * sya_j + (size_t)s * sya_s] : 0.0;
        for (int u = 0; u < kc; u++) {
            for (int i = 0; i < kx; i++)
                cx[i] = ax[i] + exc->r[(size_t)i * sxc_i + (size_t)u * sxc_u];
            for (int j = 0; j < ky; j++)
                cy[j] = ay[j] + (eyc ? eyc->r[(size_t)j * syc_j + (size_t)u * syc_u] : 0.0);
            int bi = 0;
            double best;
            switch (kx * 8 + ky) {
            case 3 * 8 + 2: best = pair_min(3, 2, base, cx, cy, &bi); break;
            case 4 * 8 + 3: best = pair_min(4, 3, base, cx, cy, &bi); break;
            default: best = pair_min(kx, ky, base, cx, cy, &bi); break;
            }
            if (out->acc)
                r[(size_t)s * rs + (size_t)u * ru] += best;
            else
                r[(size_t)s * rs + (size_t)u * ru] = best;
            arg[(size_t)s * kc + u] = bi;
        }
    }
    return 0;
}
