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
    for (int i = 0; w->n && i < w->nn; i++)
        free(w->n[i].adj);
    ilp_arena_free(&w->arena);
    free(w->n);
    free(w->e);
    free(w->el);
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

/* Adds r (k_u x k_v, in the work's arena) to edge u-v, merging with an
 * existing one. */
static int work_add_edge(Work *w, int u, int v, double *r)
{
    int id = find_edge(w, u, v);
    if (id >= 0) {
        WEdge *e = &w->e[id];
        int ku = w->n[u].k, kv = w->n[v].k;
        for (int i = 0; i < ku; i++)
            for (int j = 0; j < kv; j++) {
                double x = r[(size_t)i * kv + j];
                if (e->u == u)
                    e->r[(size_t)i * kv + j] += x;
                else
                    e->r[(size_t)j * ku + i] += x;
            }
        return 0;
    }
    if (ilp_grow((void **)&w->e, &w->cap_e, w->ne + 1, sizeof(WEdge)))
        return APPROF_ENOMEM;
    int ends[2] = {u, v};
    for (int t = 0; t < 2; t++) {
        WNode *a = &w->n[ends[t]];
        if (ilp_grow((void **)&a->adj, &a->cap_adj, a->n_adj + 1, sizeof(int)))
            return APPROF_ENOMEM;
        a->adj[a->n_adj++] = w->ne;
    }
    w->e[w->ne] = (WEdge){u, v, r, 1};
    w->ne++;
    return 0;
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

static int other_end(const WEdge *e, int x)
{
    return e->u == x ? e->v : e->u;
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
            a->c[a->k] = p->cost[v][i] + p->weight * m;
            a->m[a->k] = m;
            a->k++;
        }
        if (a->k == 0)
            return APPROF_EINFEASIBLE;
        a->alive = 1;
        a->choice = -1;
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
        if (rc)
            return rc;
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
    WEdge *exy = &w->e[ey[0]], *exa = &w->e[nb[(best_t + 1) % 3]], *exc = &w->e[nb[(best_t + 2) % 3]];
    WEdge *eya = ey[1] >= 0 ? &w->e[ey[1]] : NULL, *eyc = ey[2] >= 0 ? &w->e[ey[2]] : NULL;
    int y = other_end(exy, x), a = other_end(exa, x), c = other_end(exc, x);
    const WNode *nx = &w->n[x], *ny = &w->n[y];
    int kx = nx->k, ky = ny->k, ka = w->n[a].k, kc = w->n[c].k;
    int *arg = ilp_arena_alloc(&w->arena, (size_t)ka * kc * sizeof(int));
    double *r = ilp_arena_alloc(&w->arena, (size_t)ka * kc * sizeof(double));
    /* base[i][j]: x at i and y at j with their edge; then the a and c
     * terms of x (ax, cx) and of y (ay, cy) */
    double *base = malloc(((size_t)kx * ky + 2 * (size_t)kx + 2 * (size_t)ky) * sizeof(double));
    if (!arg || !r || !base) {
        free(base);
        return APPROF_ENOMEM;
    }
    double *ax = base + (size_t)kx * ky, *cx = ax + kx, *ay = cx + kx, *cy = ay + ky;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++)
            base[(size_t)i * ky + j] = nx->c[i] + ny->c[j] + edge_at(w, exy, x, i, j);
    for (int s = 0; s < ka; s++) {
        for (int i = 0; i < kx; i++)
            ax[i] = edge_at(w, exa, x, i, s);
        for (int j = 0; j < ky; j++)
            ay[j] = eya ? edge_at(w, eya, y, j, s) : 0.0;
        for (int u = 0; u < kc; u++) {
            for (int i = 0; i < kx; i++)
                cx[i] = ax[i] + edge_at(w, exc, x, i, u);
            for (int j = 0; j < ky; j++)
                cy[j] = ay[j] + (eyc ? edge_at(w, eyc, y, j, u) : 0.0);
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
            arg[(size_t)s * kc + u] = bi;
            r[(size_t)s * kc + u] = best;
        }
    }
    free(base);
    exy->alive = exa->alive = exc->alive = 0;
    if (eya)
        eya->alive = 0;
    if (eyc)
        eyc->alive = 0;
    int rc = work_add_edge(w, a, c, r);
    if (!rc)
        rc = push_elim(w, (Elim){EL_PAIR, x, a, c, arg, y}, cap_el);
    if (rc)
        return rc;
    w->n[y].alive = 0;
    return 1;
}

/* Exact elimination (no memory budget): single-strategy nodes, degree 0,
 * degree 1 and (with sp) degree-2 nodes and twin pairs, repeated until
 * nothing changes. */
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
            if (a->k == 1) {
                for (int i = 0; i < a->n_adj; i++) {
                    WEdge *e = &w->e[a->adj[i]];
                    if (!e->alive)
                        continue;
                    int y = other_end(e, x);
                    for (int j = 0; j < w->n[y].k; j++)
                        w->n[y].c[j] += edge_at(w, e, x, 0, j);
                    e->alive = 0;
                }
                rc = push_elim(w, (Elim){EL_FIXED, x, -1, -1, NULL, -1}, &cap_el);
            } else if (d == 0) {
                int *arg = ilp_arena_alloc(&w->arena, sizeof(int));
                if (!arg)
                    return APPROF_ENOMEM;
                arg[0] = 0;
                for (int i = 1; i < a->k; i++)
                    if (a->c[i] < a->c[arg[0]])
                        arg[0] = i;
                if (!isfinite(a->c[arg[0]]))
                    return APPROF_EINFEASIBLE;
                rc = push_elim(w, (Elim){EL_DEG0, x, -1, -1, arg, -1}, &cap_el);
            } else if (d == 1) {
                WEdge *e = &w->e[nb[0]];
                int y = other_end(e, x);
                int ky = w->n[y].k;
                int *arg = ilp_arena_alloc(&w->arena, (size_t)ky * sizeof(int));
                if (!arg)
                    return APPROF_ENOMEM;
                for (int j = 0; j < ky; j++) {
                    double best = INFINITY;
                    arg[j] = 0;
                    for (int i = 0; i < a->k; i++) {
                        double v = a->c[i] + edge_at(w, e, x, i, j);
                        if (v < best) {
                            best = v;
                            arg[j] = i;
                        }
                    }
                    w->n[y].c[j] += best;
                }
                e->alive = 0;
                rc = push_elim(w, (Elim){EL_DEG1, x, y, -1, arg, -1}, &cap_el);
            } else if (d == 2 && sp) {
                WEdge *e1 = &w->e[nb[0]], *e2 = &w->e[nb[1]];
                int y = other_end(e1, x);
                int z = other_end(e2, x);
                assert(y != z && w->n[y].alive && w->n[z].alive);  /* no self or parallel edges */
                int ky = w->n[y].k, kz = w->n[z].k;
                if ((long)ky * kz > ELIM2_MAX_PAIRS)
                    continue;
                int *arg = ilp_arena_alloc(&w->arena, (size_t)ky * kz * sizeof(int));
                double *r = ilp_arena_alloc(&w->arena, (size_t)ky * kz * sizeof(double));
                if (!arg || !r)
                    return APPROF_ENOMEM;
                for (int j = 0; j < ky; j++)
                    for (int l = 0; l < kz; l++) {
                        double best = INFINITY;
                        int bi = 0;
                        for (int i = 0; i < a->k; i++) {
                            double v = a->c[i] + edge_at(w, e1, x, i, j) + edge_at(w, e2, x, i, l);
                            if (v < best) {
                                best = v;
                                bi = i;
                            }
                        }
                        arg[(size_t)j * kz + l] = bi;
                        r[(size_t)j * kz + l] = best;
                    }
                e1->alive = 0;
                e2->alive = 0;
                rc = work_add_edge(w, y, z, r);
                if (rc)
                    return rc;
                rc = push_elim(w, (Elim){EL_DEG2, x, y, z, arg, -1}, &cap_el);
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
