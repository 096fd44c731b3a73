/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exact elimination of the strategy ILP (ilp.h): the working problem in
 * local strategy indices, and variable elimination of what dynamic
 * programming solves exactly, each step a minimum over the eliminated
 * node(s) for every choice of what stays, with an argmin table for the
 * back-substitution:
 *   - a node with one strategy is folded into its neighbours' costs;
 *   - a node of degree 0 or 1 (trees, chains);
 *   - with series-parallel elimination, a node of degree 2 (series
 *     reduction; parallel edges add up, so residual blocks and attention
 *     reduce to nothing), and a *twin pair*: two adjacent nodes x and y whose
 *     other neighbours are the same two nodes a and c (x of degree 3, y's
 *     other neighbours among a and c). Eliminating both at once is
 *     eliminating the 2-separator {a, c}'s side, min over (x, y) for every
 *     (a, c), and leaves an edge a-c, so what was not series-parallel
 *     because of the pair (the K4 minor a, x, y, c) becomes series-parallel.
 *     A mixture-of-experts layer has one: the router's output feeds both the
 *     dispatch and the combine (zoo_llama.c's moe()), and with the residual
 *     around the block the router, the dispatch, the norm before them and
 *     the combine after them form a K4 (docs/architecture.md, "Exact
 *     structure exploitation before CBC").
 * Variable elimination is exact in any order (Bertele and Brioschi,
 * Nonserial Dynamic Programming, 1972); what is left goes to CBC or the
 * exhaustive search (ilp.c).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "sharding/ilp_int.h"

/* Largest k_y * k_z matrix a degree-2 or pair elimination may create. */
#define ELIM2_MAX_PAIRS (1 << 14)
/* Largest k_a * k_c * k_x * k_y a twin-pair elimination may take (a few
 * milliseconds at most; a CBC solve of the same core takes longer). */
#define ELIM_PAIR_MAX_WORK (1L << 22)

void ilp_work_free(Work *w)
{
    ilp_arena_free(&w->arena);
    free(w->scratch);
    free(w->n);
    free(w->e);
    free(w->el);
}

static int other_end(const WEdge *e, int x)
{
    return e->u == x ? e->v : e->u;
}

static int find_edge(const Work *w, int u, int v)
{
    const WNode *a = &w->n[u];
    for (int i = 0; i < a->n_adj; i++) {
        const WEdge *e = &w->e[a->adj[i]];
        if (e->alive && ((e->u == u && e->v == v) || (e->u == v && e->v == u)))
            return a->adj[i];
    }
    return -1;
}

/* Adds r (k_u x k_v) into the table of edge id, one of whose ends is u. */
static void edge_accumulate(Work *w, int id, int u, const double *r)
{
    WEdge *e = &w->e[id];
    int v = other_end(e, u);
    int ku = w->n[u].k, kv = w->n[v].k;
    for (int i = 0; i < ku; i++)
        for (int j = 0; j < kv; j++) {
            double x = r[(size_t)i * kv + j];
            if (e->u == u)
                e->r[(size_t)i * kv + j] += x;
            else
                e->r[(size_t)j * ku + i] += x;
        }
}

/* Adds r (k_u x k_v, in the work's arena) to edge u-v, merging with an
 * existing one: the edge's id (its table is r when new), or a negative
 * error. */
static int work_add_edge(Work *w, int u, int v, double *r)
{
    int id = find_edge(w, u, v);
    if (id >= 0) {
        edge_accumulate(w, id, u, r);
        return id;
    }
    if (ilp_grow((void **)&w->e, &w->cap_e, w->ne + 1, sizeof(WEdge)))
        return APPROF_ENOMEM;
    int ends[2] = {u, v};
    for (int t = 0; t < 2; t++) {
        WNode *a = &w->n[ends[t]];
        if (a->n_adj == a->cap_adj) {
            /* moved within the arena (the old room stays until the end) */
            int cap = a->cap_adj * 2 + 4;
            int *adj = ilp_arena_alloc(&w->arena, (size_t)cap * sizeof(int));
            if (!adj)
                return APPROF_ENOMEM;
            memcpy(adj, a->adj, (size_t)a->n_adj * sizeof(int));
            a->adj = adj;
            a->cap_adj = cap;
        }
        a->adj[a->n_adj++] = w->ne;
    }
    w->e[w->ne] = (WEdge){u, v, r, 1};
    return w->ne++;
}

/* The alive edges of x: the first three into nb_edges; the degree. */
static int degree(const Work *w, int x, int *nb_edges)
{
    int d = 0;
    const WNode *a = &w->n[x];
    for (int i = 0; i < a->n_adj; i++)
        if (w->e[a->adj[i]].alive) {
            if (d < 3)
                nb_edges[d] = a->adj[i];
            d++;
        }
    return d;
}

/* r entry of edge e for endpoint x at local a and the other at b. */
static double edge_at(const Work *w, const WEdge *e, int x, int a, int b)
{
    if (e->u == x)
        return e->r[(size_t)a * w->n[e->v].k + b];
    return e->r[(size_t)b * w->n[e->v].k + a];
}

static int push_elim(Work *w, Elim el, int *cap)
{
    if (ilp_grow((void **)&w->el, cap, w->nel + 1, sizeof(Elim)))
        return APPROF_ENOMEM;
    w->el[w->nel++] = el;
    return 0;
}

/* The cost of strategy i of node v under p's memory weight, m its memory
 * (0 when p gives none): the one expression a build and a replay share. */
static double weighed_cost(const ApprofIlp *p, int v, int i, double m)
{
    return p->cost[v][i] + p->weight * m;
}

int ilp_work_build(const ApprofIlp *p, Work *w)
{
    memset(w, 0, sizeof(*w));
    w->budget = p->budget;
    w->n = calloc((size_t)(p->n_nodes > 0 ? p->n_nodes : 1), sizeof(WNode));
    if (!w->n)
        return APPROF_ENOMEM;
    w->nn = p->n_nodes;
    for (int v = 0; v < p->n_nodes; v++) {
        WNode *a = &w->n[v];
        a->orig = ilp_arena_alloc(&w->arena, (size_t)p->k[v] * sizeof(int));
        a->c = ilp_arena_alloc(&w->arena, (size_t)p->k[v] * sizeof(double));
        a->m = ilp_arena_alloc(&w->arena, (size_t)p->k[v] * sizeof(double));
        if (!a->orig || !a->c || !a->m)
            return APPROF_ENOMEM;
        for (int i = 0; i < p->k[v]; i++) {
            double m = p->mem[v] ? p->mem[v][i] : 0.0;
            if (!isfinite(p->cost[v][i]) || (p->budget >= 0 && m > p->budget))
                continue;
            a->orig[a->k] = i;
            a->c[a->k] = weighed_cost(p, v, i, m);
            a->m[a->k] = m;
            a->k++;
        }
        if (a->k == 0)
            return APPROF_EINFEASIBLE;
        a->alive = 1;
        a->choice = -1;
    }
    /* every node's incident edges in one arena block, room for two more
     * each (an elimination's new edge) before adj_push moves them */
    size_t slots = 0;
    for (int e = 0; e < p->n_edges; e++) {
        w->n[p->eu[e]].cap_adj++;
        w->n[p->ev[e]].cap_adj++;
    }
    for (int v = 0; v < w->nn; v++)
        slots += (size_t)(w->n[v].cap_adj += 2);
    int *adj = ilp_arena_alloc(&w->arena, (slots ? slots : 1) * sizeof(int));
    w->e = malloc((size_t)(p->n_edges > 0 ? p->n_edges : 1) * sizeof(WEdge));
    if (!adj || !w->e)
        return APPROF_ENOMEM;
    w->cap_e = p->n_edges > 0 ? p->n_edges : 1;
    for (int v = 0; v < w->nn; v++) {
        w->n[v].adj = adj;
        adj += w->n[v].cap_adj;
    }
    for (int e = 0; e < p->n_edges; e++) {
        int u = p->eu[e], v = p->ev[e];
        int ku = w->n[u].k, kv = w->n[v].k;
        double *r = ilp_arena_alloc(&w->arena, (size_t)ku * (size_t)kv * sizeof(double));
        if (!r)
            return APPROF_ENOMEM;
        for (int i = 0; i < ku; i++)
            for (int j = 0; j < kv; j++)
                r[(size_t)i * kv + j] =
                    p->r[e][(size_t)w->n[u].orig[i] * p->k[v] + w->n[v].orig[j]];
        int rc = work_add_edge(w, u, v, r);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The arithmetic of each elimination step, shared by the elimination and
 * its replay (ilp_work_replay): the edges a step reads are named by id, so
 * a replay reads the same tables in the same order. */

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
static void fold_fixed(Work *w, int x, int e)
{
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[other_end(ed, x)];
    for (int j = 0; j < y->k; j++)
        y->c[j] += edge_at(w, ed, x, 0, j);
}

/* EL_DEG0: arg[0] the cheapest strategy of x; APPROF_EINFEASIBLE when
 * even that one is infinite. */
static int table_deg0(const Work *w, int x, int *arg)
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
static void fold_deg1(Work *w, int x, int e, int *arg)
{
    const WNode *a = &w->n[x];
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[other_end(ed, x)];
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
 * strategies is unrolled); the same sums and comparisons in the same
 * order for every kx. */
static inline __attribute__((always_inline)) void deg2_fill(
    int kx, int ky, int kz, const double *c, const double *r1, size_t si1, size_t sj1,
    const double *r2, size_t si2, size_t sl2, double *t, int *arg, double *r)
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
            r[(size_t)j * kz + l] = best;
        }
    }
}

/* EL_DEG2: x's best strategy for each pair of y's and z's (the other ends
 * of e1 and e2), the k_y x k_z table into r, the argmin into arg; 0 or
 * APPROF_ENOMEM. Each candidate is (c_x + r1) + r2 as written out in
 * full, the first sum kept per y's strategy, both tables read in place;
 * the first least candidate is taken. */
static int table_deg2(Work *w, int x, int e1, int e2, int *arg, double *r)
{
    const WNode *a = &w->n[x];
    const WEdge *d1 = &w->e[e1], *d2 = &w->e[e2];
    int kx = a->k, ky = w->n[other_end(d1, x)].k, kz = w->n[other_end(d2, x)].k;
    double stack[DEG2_STACK], *t = stack;
    size_t si1, sj1, si2, sl2;
    if (kx > DEG2_STACK && !(t = work_scratch(w, (size_t)kx)))
        return APPROF_ENOMEM;
    edge_strides(w, d1, x, &si1, &sj1);
    edge_strides(w, d2, x, &si2, &sl2);
#define DEG2_FILL(K) deg2_fill(K, ky, kz, a->c, d1->r, si1, sj1, d2->r, si2, sl2, t, arg, r)
    switch (kx) {
    case 2: DEG2_FILL(2); break;
    case 3: DEG2_FILL(3); break;
    case 4: DEG2_FILL(4); break;
    case 5: DEG2_FILL(5); break;
    case 6: DEG2_FILL(6); break;
    default: DEG2_FILL(kx); break;
    }
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

/* EL_PAIR: x and its twin y at their best for each pair of a's and c's,
 * e = {x-y, x-a, x-c, y-a or -1, y-c or -1}; the k_a x k_c table into r,
 * the argmin (x's choice * k_y + y's) into arg. 0 or APPROF_ENOMEM. The
 * tables are read in place (edge_strides). */
static int table_pair(Work *w, int x, const int e[5], int *arg, double *r)
{
    const WEdge *exy = &w->e[e[0]], *exa = &w->e[e[1]], *exc = &w->e[e[2]];
    const WEdge *eya = e[3] >= 0 ? &w->e[e[3]] : NULL, *eyc = e[4] >= 0 ? &w->e[e[4]] : NULL;
    int y = other_end(exy, x);
    const WNode *nx = &w->n[x], *ny = &w->n[y];
    int kx = nx->k, ky = ny->k, ka = w->n[other_end(exa, x)].k, kc = w->n[other_end(exc, x)].k;
    size_t need = (size_t)kx * ky + 2 * (size_t)kx + 2 * (size_t)ky;
    size_t sxy_i, sxy_j, sxa_i, sxa_s, sxc_i, sxc_u, sya_j = 0, sya_s = 0, syc_j = 0, syc_u = 0;
    /* base[i][j]: x at i and y at j with their edge; then the a and c
     * terms of x (ax, cx) and of y (ay, cy) */
    double stack[PAIR_STACK], *base = stack;
    if (need > PAIR_STACK && !(base = work_scratch(w, need)))
        return APPROF_ENOMEM;
    double *ax = base + (size_t)kx * ky, *cx = ax + kx, *ay = cx + kx, *cy = ay + ky;
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
        for (int j = 0; j < ky; j++)
            ay[j] = eya ? eya->r[(size_t)j * sya_j + (size_t)s * sya_s] : 0.0;
        for (int u = 0; u < kc; u++) {
            for (int i = 0; i < kx; i++)
                cx[i] = ax[i] + exc->r[(size_t)i * sxc_i + (size_t)u * sxc_u];
            for (int j = 0; j < ky; j++)
                cy[j] = ay[j] + (eyc ? eyc->r[(size_t)j * syc_j + (size_t)u * syc_u] : 0.0);
            int bi = 0;
            switch (kx * 8 + ky) {
            case 3 * 8 + 2: r[(size_t)s * kc + u] = pair_min(3, 2, base, cx, cy, &bi); break;
            case 4 * 8 + 3: r[(size_t)s * kc + u] = pair_min(4, 3, base, cx, cy, &bi); break;
            default: r[(size_t)s * kc + u] = pair_min(kx, ky, base, cx, cy, &bi); break;
            }
            arg[(size_t)s * kc + u] = bi;
        }
    }
    return 0;
}

/* The twin pair of x (degree 3, its edges nb[0..3)): a neighbour y whose
 * other alive edges all end at x's two other neighbours a and c. Eliminates
 * x and y into an edge a-c: 1 when done, 0 when x has no such neighbour
 * (or the tables would be too large), or a negative error. Of several
 * twins, the one with the least work. */
static int eliminate_pair(Work *w, int x, const int nb[3], int *cap_el)
{
    int best_t = -1, ey[3] = {-1, -1, -1};
    long best_work = 0;
    for (int t = 0; t < 3; t++) {
        int y = other_end(&w->e[nb[t]], x);
        int a = other_end(&w->e[nb[(t + 1) % 3]], x), c = other_end(&w->e[nb[(t + 2) % 3]], x);
        int ok = 1, ya = -1, yc = -1;
        const WNode *ny = &w->n[y];
        for (int i = 0; i < ny->n_adj && ok; i++) {
            const WEdge *e = &w->e[ny->adj[i]];
            if (!e->alive)
                continue;
            int o = other_end(e, y);
            if (o == a)
                ya = ny->adj[i];
            else if (o == c)
                yc = ny->adj[i];
            else if (o != x)
                ok = 0;
        }
        long ka = w->n[a].k, kc = w->n[c].k;
        long work = ka * kc * w->n[x].k * ny->k;
        if (!ok || ka * kc > ELIM2_MAX_PAIRS || work > ELIM_PAIR_MAX_WORK)
            continue;
        if (best_t < 0 || work < best_work) {
            best_t = t;
            best_work = work;
            ey[0] = nb[t];
            ey[1] = ya;
            ey[2] = yc;
        }
    }
    if (best_t < 0)
        return 0;
    Elim el = {EL_PAIR, x, -1, -1, NULL, -1, {ey[0], nb[(best_t + 1) % 3], nb[(best_t + 2) % 3],
                                              ey[1], ey[2]}, NULL, 0, NULL, -1};
    int y = other_end(&w->e[el.e[0]], x), a = other_end(&w->e[el.e[1]], x),
        c = other_end(&w->e[el.e[2]], x);
    size_t kac = (size_t)w->n[a].k * (size_t)w->n[c].k;
    el.y = a;
    el.z = c;
    el.twin = y;
    el.arg = ilp_arena_alloc(&w->arena, kac * sizeof(int));
    el.r = ilp_arena_alloc(&w->arena, kac * sizeof(double));
    if (!el.arg || !el.r || table_pair(w, x, el.e, el.arg, el.r))
        return APPROF_ENOMEM;
    for (int i = 0; i < 5; i++)
        if (el.e[i] >= 0)
            w->e[el.e[i]].alive = 0;
    el.dest = work_add_edge(w, a, c, el.r);
    if (el.dest < 0)
        return el.dest;
    int rc = push_elim(w, el, cap_el);
    if (rc)
        return rc;
    w->n[y].alive = 0;
    return 1;
}

/* Exact elimination (no memory budget): single-strategy nodes, degree 0,
 * degree 1 and (with sp) degree-2 nodes and twin pairs, repeated until
 * nothing changes. Which nodes go, in what order and along which edges
 * depends on the graph and the strategies' counts only, not on the costs
 * (ilp_work_replay relies on it). */
int ilp_work_eliminate(Work *w, int sp, ApprofIlpStats *st)
{
    int cap_el = 0, changed = 1;
    while (changed) {
        changed = 0;
        for (int x = 0; x < w->nn; x++) {
            WNode *a = &w->n[x];
            if (!a->alive)
                continue;
            int nb[3];
            int d = degree(w, x, nb);
            int rc = 0;
            Elim el = {EL_FIXED, x, -1, -1, NULL, -1, {-1, -1, -1, -1, -1}, NULL, 0, NULL, -1};
            if (a->k == 1) {
                el.fixed = ilp_arena_alloc(&w->arena, (size_t)(d > 0 ? d : 1) * sizeof(int));
                if (!el.fixed)
                    return APPROF_ENOMEM;
                for (int i = 0; i < a->n_adj; i++) {
                    WEdge *e = &w->e[a->adj[i]];
                    if (!e->alive)
                        continue;
                    fold_fixed(w, x, a->adj[i]);
                    el.fixed[el.n_fixed++] = a->adj[i];
                    e->alive = 0;
                }
                rc = push_elim(w, el, &cap_el);
            } else if (d == 0) {
                el.kind = EL_DEG0;
                el.arg = ilp_arena_alloc(&w->arena, sizeof(int));
                if (!el.arg)
                    return APPROF_ENOMEM;
                rc = table_deg0(w, x, el.arg);
                if (rc)
                    return rc;
                rc = push_elim(w, el, &cap_el);
            } else if (d == 1) {
                el.kind = EL_DEG1;
                el.e[0] = nb[0];
                el.y = other_end(&w->e[nb[0]], x);
                el.arg = ilp_arena_alloc(&w->arena, (size_t)w->n[el.y].k * sizeof(int));
                if (!el.arg)
                    return APPROF_ENOMEM;
                fold_deg1(w, x, nb[0], el.arg);
                w->e[nb[0]].alive = 0;
                rc = push_elim(w, el, &cap_el);
            } else if (d == 2 && sp) {
                int y = other_end(&w->e[nb[0]], x), z = other_end(&w->e[nb[1]], x);
                assert(y != z && w->n[y].alive && w->n[z].alive);  /* no self or parallel edges */
                size_t kyz = (size_t)w->n[y].k * (size_t)w->n[z].k;
                if (kyz > ELIM2_MAX_PAIRS)
                    continue;
                el.kind = EL_DEG2;
                el.y = y;
                el.z = z;
                el.e[0] = nb[0];
                el.e[1] = nb[1];
                el.arg = ilp_arena_alloc(&w->arena, kyz * sizeof(int));
                el.r = ilp_arena_alloc(&w->arena, kyz * sizeof(double));
                if (!el.arg || !el.r)
                    return APPROF_ENOMEM;
                if (table_deg2(w, x, nb[0], nb[1], el.arg, el.r))
                    return APPROF_ENOMEM;
                w->e[nb[0]].alive = 0;
                w->e[nb[1]].alive = 0;
                el.dest = work_add_edge(w, y, z, el.r);
                if (el.dest < 0)
                    return el.dest;
                rc = push_elim(w, el, &cap_el);
            } else if (d == 3 && sp) {
                rc = eliminate_pair(w, x, nb, &cap_el);
                if (rc <= 0) {
                    if (rc)
                        return rc;
                    continue;
                }
                rc = 0;
                st->eliminated++;  /* the twin */
                st->twin_pairs++;
            } else {
                continue;
            }
            if (rc)
                return rc;
            a->alive = 0;
            st->eliminated++;
            changed = 1;
        }
    }
    return 0;
}

int ilp_work_keep_built(Work *w)
{
    size_t n = 0;
    for (int e = 0; e < w->ne; e++)
        n += (size_t)w->n[w->e[e].u].k * (size_t)w->n[w->e[e].v].k;
    w->r_built = ilp_arena_alloc(&w->arena, (n ? n : 1) * sizeof(double));
    if (!w->r_built)
        return APPROF_ENOMEM;
    n = 0;
    for (int e = 0; e < w->ne; e++) {
        size_t kk = (size_t)w->n[w->e[e].u].k * (size_t)w->n[w->e[e].v].k;
        memcpy(w->r_built + n, w->e[e].r, kk * sizeof(double));
        n += kk;
    }
    w->ne_built = w->ne;
    w->n_restore = -1;
    return 0;
}

/* Lists the built edges whose tables a step of w's elimination adds into
 * (w->restore): the others keep their built tables through it. 0 or
 * APPROF_ENOMEM. */
static int list_restore(Work *w)
{
    size_t *at = ilp_arena_alloc(&w->arena, (size_t)(w->ne_built + 1) * sizeof(size_t));
    char *seen = ilp_arena_alloc(&w->arena, (size_t)w->ne_built + 1);
    if (!at || !seen)
        return APPROF_ENOMEM;
    size_t n = 0;
    for (int e = 0; e < w->ne_built; e++) {
        at[e] = n;
        seen[e] = 0;
        n += (size_t)w->n[w->e[e].u].k * (size_t)w->n[w->e[e].v].k;
    }
    int count = 0;
    for (int s = 0; s < w->nel; s++) {
        const Elim *el = &w->el[s];
        if (el->r && el->dest < w->ne_built && w->e[el->dest].r != el->r && !seen[el->dest]) {
            seen[el->dest] = 1;
            count++;
        }
    }
    w->restore = ilp_arena_alloc(&w->arena, (size_t)(count ? count : 1) * sizeof(int));
    w->restore_at = ilp_arena_alloc(&w->arena, (size_t)(count ? count : 1) * sizeof(size_t));
    if (!w->restore || !w->restore_at)
        return APPROF_ENOMEM;
    w->n_restore = 0;
    for (int e = 0; e < w->ne_built; e++)
        if (seen[e]) {
            w->restore[w->n_restore] = e;
            w->restore_at[w->n_restore++] = at[e];
        }
    return 0;
}

int ilp_work_replay(const ApprofIlp *p, Work *w)
{
    assert(w->nn == p->n_nodes && w->r_built);
    for (int v = 0; v < w->nn; v++) {
        WNode *a = &w->n[v];
        for (int i = 0; i < a->k; i++)
            a->c[i] = weighed_cost(p, v, a->orig[i], a->m[i]);
        a->choice = -1;
    }
    /* the built tables the last solve added into, as built */
    if (w->n_restore < 0 && list_restore(w))
        return APPROF_ENOMEM;
    for (int q = 0; q < w->n_restore; q++) {
        const WEdge *e = &w->e[w->restore[q]];
        size_t kk = (size_t)w->n[e->u].k * (size_t)w->n[e->v].k;
        memcpy(e->r, w->r_built + w->restore_at[q], kk * sizeof(double));
    }
    for (int s = 0; s < w->nel; s++) {
        const Elim *el = &w->el[s];
        switch (el->kind) {
        case EL_FIXED:
            for (int i = 0; i < el->n_fixed; i++)
                fold_fixed(w, el->x, el->fixed[i]);
            break;
        case EL_DEG0:
            if (table_deg0(w, el->x, el->arg))
                return APPROF_EINFEASIBLE;
            break;
        case EL_DEG1: fold_deg1(w, el->x, el->e[0], el->arg); break;
        case EL_DEG2:
            if (table_deg2(w, el->x, el->e[0], el->e[1], el->arg, el->r))
                return APPROF_ENOMEM;
            break;
        case EL_PAIR:
            if (table_pair(w, el->x, el->e, el->arg, el->r))
                return APPROF_ENOMEM;
            break;
        }
        /* a table added into an edge that was there, as work_add_edge did */
        if (el->r && w->e[el->dest].r != el->r)
            edge_accumulate(w, el->dest, el->y, el->r);
    }
    return 0;
}

double ilp_work_memory_floor(const Work *w)
{
    double floor = 0.0;
    for (int v = 0; v < w->nn; v++) {
        const WNode *a = &w->n[v];
        double least = a->m[0];
        for (int i = 1; i < a->k; i++)
            if (a->m[i] < least)
                least = a->m[i];
        floor += least;
    }
    return floor;
}

void ilp_work_backsubstitute(Work *w)
{
    for (int i = w->nel - 1; i >= 0; i--) {
        Elim *el = &w->el[i];
        assert(el->y < 0 || (w->n[el->y].choice >= 0 && w->n[el->y].choice < w->n[el->y].k));
        assert(el->z < 0 || (w->n[el->z].choice >= 0 && w->n[el->z].choice < w->n[el->z].k));
        switch (el->kind) {
        case EL_FIXED: w->n[el->x].choice = 0; break;
        case EL_DEG0: w->n[el->x].choice = el->arg[0]; break;
        case EL_DEG1: w->n[el->x].choice = el->arg[w->n[el->y].choice]; break;
        case EL_DEG2:
            w->n[el->x].choice =
                el->arg[(size_t)w->n[el->y].choice * w->n[el->z].k + w->n[el->z].choice];
            break;
        case EL_PAIR: {
            int code = el->arg[(size_t)w->n[el->y].choice * w->n[el->z].k + w->n[el->z].choice];
            int ky = w->n[el->twin].k;
            w->n[el->x].choice = code / ky;
            w->n[el->twin].choice = code % ky;
            break;
        }
        }
    }
}
