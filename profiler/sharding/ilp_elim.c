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
 * Each step's arithmetic is in ilp_steps.c.
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
    int v = ilp_other_end(e, u);
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
    if (w->ne == w->cap_e && ilp_grow((void **)&w->e, &w->cap_e, w->ne + 1, sizeof(WEdge)))
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

static int push_elim(Work *w, Elim el, int *cap)
{
    if (w->nel == *cap && ilp_grow((void **)&w->el, cap, w->nel + 1, sizeof(Elim)))
        return APPROF_ENOMEM;
    w->el[w->nel++] = el;
    return 0;
}

/* Every node's strategy costs under memory weight weight: its cost as
 * given plus weight times its memory (0 when p gives none), the one
 * expression a build and a replay share, over the nodes' slots end to end
 * (the slots past a node's allowed strategies hold 0). */
static void work_reweigh(Work *w, double weight)
{
    for (size_t i = 0; i < w->n_slots; i++)
        w->c_all[i] = w->c0[i] + weight * w->m_all[i];
}

int ilp_work_build(const ApprofIlp *p, Work *w)
{
    memset(w, 0, sizeof(*w));
    w->budget = p->budget;
    w->n = calloc((size_t)(p->n_nodes > 0 ? p->n_nodes : 1), sizeof(WNode));
    if (!w->n)
        return APPROF_ENOMEM;
    w->nn = p->n_nodes;
    /* the nodes' strategies, costs, memories and costs as given (c0) in
     * four arena blocks */
    size_t sum_k = 0;
    for (int v = 0; v < p->n_nodes; v++)
        sum_k += (size_t)p->k[v];
    int *orig = ilp_arena_alloc(&w->arena, (sum_k ? sum_k : 1) * sizeof(int));
    double *cs = ilp_arena_alloc(&w->arena, (sum_k ? sum_k : 1) * sizeof(double));
    double *ms = ilp_arena_alloc(&w->arena, (sum_k ? sum_k : 1) * sizeof(double));
    double *c0 = ilp_arena_alloc(&w->arena, (sum_k ? sum_k : 1) * sizeof(double));
    if (!orig || !cs || !ms || !c0)
        return APPROF_ENOMEM;
    w->c_all = cs;
    w->m_all = ms;
    w->c0 = c0;
    w->n_slots = sum_k;
    for (int v = 0; v < p->n_nodes; v++) {
        WNode *a = &w->n[v];
        a->orig = orig;
        a->c = cs;
        a->m = ms;
        orig += p->k[v];
        cs += p->k[v];
        ms += p->k[v];
        for (int i = 0; i < p->k[v]; i++)
            a->m[i] = c0[i] = 0.0;
        for (int i = 0; i < p->k[v]; i++) {
            double m = p->mem[v] ? p->mem[v][i] : 0.0;
            if (!isfinite(p->cost[v][i]) || (p->budget >= 0 && m > p->budget))
                continue;
            a->orig[a->k] = i;
            c0[a->k] = p->cost[v][i];
            a->m[a->k] = m;
            a->k++;
        }
        c0 += p->k[v];
        if (a->k == 0)
            return APPROF_EINFEASIBLE;
        a->alive = 1;
        a->choice = -1;
    }
    work_reweigh(w, p->weight);
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
    /* room for the built edges and one new edge per elimination step (a
     * step eliminates at least one node), the edges' tables in one block */
    size_t sum_r = 0;
    for (int e = 0; e < p->n_edges; e++)
        sum_r += (size_t)w->n[p->eu[e]].k * (size_t)w->n[p->ev[e]].k;
    double *rs = ilp_arena_alloc(&w->arena, (sum_r ? sum_r : 1) * sizeof(double));
    w->cap_e = p->n_edges + w->nn > 0 ? p->n_edges + w->nn : 1;
    w->e = malloc((size_t)w->cap_e * sizeof(WEdge));
    if (!adj || !rs || !w->e)
        return APPROF_ENOMEM;
    for (int v = 0; v < w->nn; v++) {
        w->n[v].adj = adj;
        adj += w->n[v].cap_adj;
    }
    for (int e = 0; e < p->n_edges; e++) {
        int u = p->eu[e], v = p->ev[e];
        int ku = w->n[u].k, kv = w->n[v].k;
        double *r = rs;
        rs += (size_t)ku * (size_t)kv;
        if (ku == p->k[u] && kv == p->k[v]) {
            /* no strategy left out at either end: the table as given */
            memcpy(r, p->r[e], (size_t)ku * (size_t)kv * sizeof(double));
        } else {
            for (int i = 0; i < ku; i++)
                for (int j = 0; j < kv; j++)
                    r[(size_t)i * kv + j] =
                        p->r[e][(size_t)w->n[u].orig[i] * p->k[v] + w->n[v].orig[j]];
        }
        int rc = work_add_edge(w, u, v, r);
        if (rc < 0)
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
        int y = ilp_other_end(&w->e[nb[t]], x);
        int a = ilp_other_end(&w->e[nb[(t + 1) % 3]], x), c = ilp_other_end(&w->e[nb[(t + 2) % 3]], x);
        int ok = 1, ya = -1, yc = -1;
        const WNode *ny = &w->n[y];
        for (int i = 0; i < ny->n_adj && ok; i++) {
            const WEdge *e = &w->e[ny->adj[i]];
            if (!e->alive)
                continue;
            int o = ilp_other_end(e, y);
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
    int y = ilp_other_end(&w->e[el.e[0]], x), a = ilp_other_end(&w->e[el.e[1]], x),
        c = ilp_other_end(&w->e[el.e[2]], x);
    size_t kac = (size_t)w->n[a].k * (size_t)w->n[c].k;
    el.y = a;
    el.z = c;
    el.twin = y;
    el.arg = ilp_arena_alloc(&w->arena, kac * sizeof(int));
    el.r = ilp_arena_alloc(&w->arena, kac * sizeof(double));
    StepOut out = {el.r, NULL, a};
    if (!el.arg || !el.r || ilp_table_pair(w, x, el.e, el.arg, &out))
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
    /* at most one step a node */
    if (w->nn > 0 && ilp_grow((void **)&w->el, &cap_el, w->nn, sizeof(Elim)))
        return APPROF_ENOMEM;
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
                    ilp_fold_fixed(w, x, a->adj[i]);
                    el.fixed[el.n_fixed++] = a->adj[i];
                    e->alive = 0;
                }
                rc = push_elim(w, el, &cap_el);
            } else if (d == 0) {
                el.kind = EL_DEG0;
                el.arg = ilp_arena_alloc(&w->arena, sizeof(int));
                if (!el.arg)
                    return APPROF_ENOMEM;
                rc = ilp_table_deg0(w, x, el.arg);
                if (rc)
                    return rc;
                rc = push_elim(w, el, &cap_el);
            } else if (d == 1) {
                el.kind = EL_DEG1;
                el.e[0] = nb[0];
                el.y = ilp_other_end(&w->e[nb[0]], x);
                el.arg = ilp_arena_alloc(&w->arena, (size_t)w->n[el.y].k * sizeof(int));
                if (!el.arg)
                    return APPROF_ENOMEM;
                ilp_fold_deg1(w, x, nb[0], el.arg);
                w->e[nb[0]].alive = 0;
                rc = push_elim(w, el, &cap_el);
            } else if (d == 2 && sp) {
                int y = ilp_other_end(&w->e[nb[0]], x), z = ilp_other_end(&w->e[nb[1]], x);
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
                StepOut out = {el.r, NULL, y};
                if (ilp_table_deg2(w, x, nb[0], nb[1], el.arg, &out))
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
    w->n_core = -1;
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

/* The replay's plans (w->plan) and the core (w->core): what a replay
 * redoes at every weight but that depends on the elimination alone.
 * The plan of a degree-2 step is ilp_table_deg2's for the same operands,
 * made once; the core is the nodes the elimination left alive, which no
 * replay changes. 0 or APPROF_ENOMEM. */
static int plan_replay(Work *w)
{
    w->plan = ilp_arena_alloc(&w->arena, (size_t)(w->nel > 0 ? w->nel : 1) * sizeof(StepPlan));
    w->core = ilp_arena_alloc(&w->arena, (size_t)(w->nn > 0 ? w->nn : 1) * sizeof(int));
    if (!w->plan || !w->core)
        return APPROF_ENOMEM;
    for (int s = 0; s < w->nel; s++) {
        const Elim *el = &w->el[s];
        if (el->kind != EL_DEG2 && el->kind != EL_PAIR)
            continue;
        /* a table added into an edge that was there (as work_add_edge
         * did) is added in place as it is made */
        StepOut out = {el->r, NULL, el->y};
        if (w->e[el->dest].r != el->r)
            out.acc = &w->e[el->dest];
        size_t need;
        if (el->kind == EL_DEG2) {
            ilp_deg2_plan(w, el->x, el->e[0], el->e[1], el->arg, &out, &w->plan[s].deg2, 0);
            need = (size_t)w->plan[s].deg2.kx;
        } else {
            ilp_pair_plan(w, el->x, el->e, el->arg, &out, &w->plan[s].pair, 0);
            need = ilp_pair_scratch(&w->plan[s].pair);
        }
        if (need > w->plan_scratch)
            w->plan_scratch = need;
    }
    w->n_core = 0;
    for (int v = 0; v < w->nn; v++)
        if (w->n[v].alive)
            w->core[w->n_core++] = v;
    return 0;
}

int ilp_work_replay(const ApprofIlp *p, Work *w)
{
    assert(w->nn == p->n_nodes && w->r_built);
    work_reweigh(w, p->weight);
    for (int v = 0; v < w->nn; v++)
        w->n[v].choice = -1;
    /* the built tables the last solve added into, as built */
    if (w->n_restore < 0 && (list_restore(w) || plan_replay(w)))
        return APPROF_ENOMEM;
    for (int q = 0; q < w->n_restore; q++) {
        const WEdge *e = &w->e[w->restore[q]];
        size_t kk = (size_t)w->n[e->u].k * (size_t)w->n[e->v].k;
        memcpy(e->r, w->r_built + w->restore_at[q], kk * sizeof(double));
    }
    /* what the eliminated parts cost at least: a node's costs are final
     * at its step (later steps add into alive nodes only) */
    double value = 0.0;
    /* the fills' scratch, one buffer for every step: what ilp_deg2_run
     * and ilp_pair_run take from their stack or from the same buffer
     * (each fill writes its sums before it reads them) */
    double *t = ilp_work_scratch(w, w->plan_scratch > 0 ? w->plan_scratch : 1);
    if (!t)
        return APPROF_ENOMEM;
    for (int s = 0; s < w->nel; s++) {
        const Elim *el = &w->el[s];
        switch (el->kind) {
        case EL_FIXED:
            for (int i = 0; i < el->n_fixed; i++)
                ilp_fold_fixed(w, el->x, el->fixed[i]);
            value += w->n[el->x].c[0];
            break;
        case EL_DEG0:
            if (ilp_table_deg0(w, el->x, el->arg))
                return APPROF_EINFEASIBLE;
            value += w->n[el->x].c[el->arg[0]];
            break;
        case EL_DEG1: ilp_fold_deg1(w, el->x, el->e[0], el->arg); break;
        case EL_DEG2: {
            const Deg2Plan *pl = &w->plan[s].deg2;
            pl->fill(pl, t);
            break;
        }
        case EL_PAIR: {
            const PairPlan *pl = &w->plan[s].pair;
            pl->fill(pl, t);
            break;
        }
        }
    }
    w->elim_value = value;
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
                w->plan ? ilp_deg2_arg_at(&w->plan[i].deg2, w->n[el->y].choice, w->n[el->z].choice)
                        : el->arg[(size_t)w->n[el->y].choice * w->n[el->z].k + w->n[el->z].choice];
            break;
        case EL_PAIR: {
            int code =
                w->plan ? ilp_pair_arg_at(&w->plan[i].pair, w->n[el->y].choice, w->n[el->z].choice)
                        : el->arg[(size_t)w->n[el->y].choice * w->n[el->z].k + w->n[el->z].choice];
            int ky = w->n[el->twin].k;
            w->n[el->x].choice = code / ky;
            w->n[el->twin].choice = code % ky;
            break;
        }
        }
    }
}
