/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The strategy-selection ILP (ilp.h): problem building, exact elimination of
 * the parts that are trees, chains or (optionally) series-parallel, the
 * remaining core handed to CBC (ilp_cbc.c), an exhaustive fallback for
 * builds without CBC, and a solution cache keyed by a 128-bit problem hash.
 */
#include "hash.h"
#include "ilp.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "graph.h"
#include "sharding/ilp_internal.h"

/* Largest k_y * k_z matrix a degree-2 elimination may create. */
#define ELIM2_MAX_PAIRS (1 << 14)


/* ---- the arena --------------------------------------------------------- */

struct IlpBlock {
    IlpBlock *next;
    size_t used, cap;
    max_align_t data[];
};

#define ILP_BLOCK_BYTES ((size_t)64 << 10)

void *ilp_arena_alloc(IlpArena *a, size_t n)
{
    size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX - align)
        return NULL;
    n = n ? (n + align - 1) / align * align : align;
    IlpBlock *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ILP_BLOCK_BYTES ? n : ILP_BLOCK_BYTES;
        if (cap > SIZE_MAX - sizeof *b || !(b = malloc(sizeof *b + cap)))
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (unsigned char *)b->data + b->used;
    b->used += n;
    return p;
}

void ilp_arena_free(IlpArena *a)
{
    while (a->head) {
        IlpBlock *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ---- the problem -------------------------------------------------------- */

int approf_ilp_new(ApprofIlp **out)
{
    if (!out)
        return APPROF_EINVAL;
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return APPROF_ENOMEM;
    (*out)->budget = -1.0;
    return 0;
}

void approf_ilp_free(ApprofIlp **pp)
{
    if (!pp || !*pp)
        return;
    ApprofIlp *p = *pp;
    ilp_arena_free(&p->arena);
    free(p->k);
    free(p->cost);
    free(p->mem);
    free(p->eu);
    free(p->ev);
    free(p->r);
    free(p);
    *pp = NULL;
}

int ilp_grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*arr, (size_t)nc * elem);
    if (!q)
        return APPROF_ENOMEM;
    *arr = q;
    *cap = nc;
    return 0;
}

int approf_ilp_add_node(ApprofIlp *p, int k, const double *cost, const double *mem)
{
    if (!p || k < 1 || !cost)
        return APPROF_EINVAL;
    if (p->n_nodes == p->cap_nodes) {
        int cap = p->cap_nodes;
        int c1 = cap, c2 = cap, c3 = cap;
        if (ilp_grow((void **)&p->k, &c1, p->n_nodes + 1, sizeof(int)) ||
            ilp_grow((void **)&p->cost, &c2, p->n_nodes + 1, sizeof(double *)) ||
            ilp_grow((void **)&p->mem, &c3, p->n_nodes + 1, sizeof(double *)))
            return APPROF_ENOMEM;
        p->cap_nodes = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    double *c = ilp_arena_alloc(&p->arena, (size_t)k * sizeof(double));
    double *m = mem ? ilp_arena_alloc(&p->arena, (size_t)k * sizeof(double)) : NULL;
    if (!c || (mem && !m))
        return APPROF_ENOMEM;
    memcpy(c, cost, (size_t)k * sizeof(double));
    if (mem)
        memcpy(m, mem, (size_t)k * sizeof(double));
    p->k[p->n_nodes] = k;
    p->cost[p->n_nodes] = c;
    p->mem[p->n_nodes] = m;
    return p->n_nodes++;
}

int approf_ilp_add_edge(ApprofIlp *p, int u, int v, const double *r)
{
    if (!p || !r || u < 0 || v < 0 || u >= p->n_nodes || v >= p->n_nodes || u == v)
        return APPROF_EINVAL;
    if (p->n_edges == p->cap_edges) {
        int cap = p->cap_edges;
        int c1 = cap, c2 = cap, c3 = cap;
        if (ilp_grow((void **)&p->eu, &c1, p->n_edges + 1, sizeof(int)) ||
            ilp_grow((void **)&p->ev, &c2, p->n_edges + 1, sizeof(int)) ||
            ilp_grow((void **)&p->r, &c3, p->n_edges + 1, sizeof(double *)))
            return APPROF_ENOMEM;
        p->cap_edges = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    size_t n = (size_t)p->k[u] * (size_t)p->k[v];
    double *m = ilp_arena_alloc(&p->arena, n * sizeof(double));
    if (!m)
        return APPROF_ENOMEM;
    memcpy(m, r, n * sizeof(double));
    p->eu[p->n_edges] = u;
    p->ev[p->n_edges] = v;
    p->r[p->n_edges] = m;
    return p->n_edges++;
}

void approf_ilp_set_memory_budget(ApprofIlp *p, double budget)
{
    if (p)
        p->budget = budget < 0 ? -1.0 : budget;
}

int approf_ilp_num_nodes(const ApprofIlp *p)
{
    return p ? p->n_nodes : 0;
}

void approf_ilp_set_memory_weight(ApprofIlp *p, double weight)
{
    if (p)
        p->weight = isfinite(weight) && weight > 0 ? weight : 0.0;
}

double approf_ilp_memory(const ApprofIlp *p, const int *choice)
{
    double mem = 0.0;
    for (int v = 0; v < p->n_nodes; v++)
        if (p->mem[v] && choice[v] >= 0 && choice[v] < p->k[v])
            mem += p->mem[v][choice[v]];
    return mem;
}

double approf_ilp_evaluate(const ApprofIlp *p, const int *choice)
{
    double obj = 0.0, mem = 0.0;
    for (int v = 0; v < p->n_nodes; v++) {
        if (choice[v] < 0 || choice[v] >= p->k[v])
            return INFINITY;
        obj += p->cost[v][choice[v]];
        if (p->mem[v])
            mem += p->mem[v][choice[v]];
    }
    for (int e = 0; e < p->n_edges; e++)
        obj += p->r[e][(size_t)choice[p->eu[e]] * (size_t)p->k[p->ev[e]] + (size_t)choice[p->ev[e]]];
    if (p->budget >= 0 && mem > p->budget)
        return INFINITY;
    return isfinite(obj) ? obj : INFINITY;
}

/* ---- hashing ------------------------------------------------------------ */

typedef ApprofHash128 Hash2;

static void hash_bytes(Hash2 *h, const void *data, size_t n)
{
    approf_hash128_update(h, data, n);
}

static Hash2 problem_hash(const ApprofIlp *p, int method)
{
    Hash2 h;
    approf_hash128_init(&h, 0);
    hash_bytes(&h, &method, sizeof(method));
    hash_bytes(&h, &p->n_nodes, sizeof(p->n_nodes));
    hash_bytes(&h, &p->budget, sizeof(p->budget));
    hash_bytes(&h, &p->weight, sizeof(p->weight));
    for (int v = 0; v < p->n_nodes; v++) {
        hash_bytes(&h, &p->k[v], sizeof(int));
        hash_bytes(&h, p->cost[v], (size_t)p->k[v] * sizeof(double));
        int has_mem = p->mem[v] != NULL;
        hash_bytes(&h, &has_mem, sizeof(has_mem));
        if (has_mem)
            hash_bytes(&h, p->mem[v], (size_t)p->k[v] * sizeof(double));
    }
    hash_bytes(&h, &p->n_edges, sizeof(p->n_edges));
    for (int e = 0; e < p->n_edges; e++) {
        hash_bytes(&h, &p->eu[e], sizeof(int));
        hash_bytes(&h, &p->ev[e], sizeof(int));
        hash_bytes(&h, p->r[e], (size_t)p->k[p->eu[e]] * (size_t)p->k[p->ev[e]] * sizeof(double));
    }
    return h;
}

void approf_ilp_hash(const ApprofIlp *p, char *out, size_t len)
{
    Hash2 h = problem_hash(p, 0);
    snprintf(out, len, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

/* ---- cache -------------------------------------------------------------- */

typedef struct CacheEntry {
    Hash2 key;
    int n;
    int status;
    int *choice;
    double objective;
    ApprofIlpStats stats;
} CacheEntry;

struct ApprofIlpCache {
    CacheEntry *e;
    size_t n, cap;     /* open addressing, cap a power of two */
    size_t hits;
};

int approf_ilp_cache_new(ApprofIlpCache **out)
{
    if (!out)
        return APPROF_EINVAL;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : APPROF_ENOMEM;
}

void approf_ilp_cache_free(ApprofIlpCache **cp)
{
    if (!cp || !*cp)
        return;
    for (size_t i = 0; i < (*cp)->cap; i++)
        free((*cp)->e[i].choice);
    free((*cp)->e);
    free(*cp);
    *cp = NULL;
}

void approf_ilp_cache_counts(const ApprofIlpCache *c, size_t *hits, size_t *entries)
{
    if (hits)
        *hits = c ? c->hits : 0;
    if (entries)
        *entries = c ? c->n : 0;
}

static CacheEntry *cache_slot(ApprofIlpCache *c, Hash2 key)
{
    if (!c->cap)
        return NULL;
    assert((c->cap & (c->cap - 1)) == 0 && c->n < c->cap);  /* a mask; a free slot ends the probe */
    size_t i = (size_t)key.a & (c->cap - 1);
    while (c->e[i].n) {
        if (c->e[i].key.a == key.a && c->e[i].key.b == key.b)
            return &c->e[i];
        i = (i + 1) & (c->cap - 1);
    }
    return &c->e[i];
}

static int cache_put(ApprofIlpCache *c, Hash2 key, int n, int status, const int *choice,
                     double objective, const ApprofIlpStats *st)
{
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        CacheEntry *ne = calloc(ncap, sizeof(*ne));
        if (!ne)
            return APPROF_ENOMEM;
        CacheEntry *old = c->e;
        size_t ocap = c->cap;
        c->e = ne;
        c->cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].n)
                *cache_slot(c, old[i].key) = old[i];
        free(old);
    }
    CacheEntry *s = cache_slot(c, key);
    if (s->n)
        return 0;
    s->choice = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!s->choice)
        return APPROF_ENOMEM;
    if (n > 0)
        memcpy(s->choice, choice, (size_t)n * sizeof(int));
    s->key = key;
    s->n = n > 0 ? n : 1;
    s->status = status;
    s->objective = objective;
    s->stats = *st;
    c->n++;
    return 0;
}

/* ---- working problem ---------------------------------------------------- */

static void work_free(Work *w)
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

static int degree(const Work *w, int x, int *nb_edges)
{
    int d = 0;
    const WNode *a = &w->n[x];
    for (int i = 0; i < a->n_adj; i++)
        if (w->e[a->adj[i]].alive) {
            if (d < 2)
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

static int push_elim(Work *w, ElimKind kind, int x, int y, int z, int *arg, int *cap)
{
    if (ilp_grow((void **)&w->el, cap, w->nel + 1, sizeof(Elim)))
        return APPROF_ENOMEM;
    w->el[w->nel++] = (Elim){kind, x, y, z, arg};
    return 0;
}

static int work_build(const ApprofIlp *p, Work *w)
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

/* Exact elimination (no memory budget): single-strategy nodes, degree 0,
 * degree 1 and (with deg2) degree-2 nodes, repeated until nothing changes. */
static int work_eliminate(Work *w, int deg2, int *n_elim)
{
    int cap_el = 0, changed = 1;
    while (changed) {
        changed = 0;
        for (int x = 0; x < w->nn; x++) {
            WNode *a = &w->n[x];
            if (!a->alive)
                continue;
            int nb[2];
            int d = degree(w, x, nb);
            int rc = 0;
            if (a->k == 1) {
                for (int i = 0; i < a->n_adj; i++) {
                    WEdge *e = &w->e[a->adj[i]];
                    if (!e->alive)
                        continue;
                    int y = e->u == x ? e->v : e->u;
                    for (int j = 0; j < w->n[y].k; j++)
                        w->n[y].c[j] += edge_at(w, e, x, 0, j);
                    e->alive = 0;
                }
                rc = push_elim(w, EL_FIXED, x, -1, -1, NULL, &cap_el);
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
                rc = push_elim(w, EL_DEG0, x, -1, -1, arg, &cap_el);
            } else if (d == 1) {
                WEdge *e = &w->e[nb[0]];
                int y = e->u == x ? e->v : e->u;
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
                rc = push_elim(w, EL_DEG1, x, y, -1, arg, &cap_el);
            } else if (d == 2 && deg2) {
                WEdge *e1 = &w->e[nb[0]], *e2 = &w->e[nb[1]];
                int y = e1->u == x ? e1->v : e1->u;
                int z = e2->u == x ? e2->v : e2->u;
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
                rc = push_elim(w, EL_DEG2, x, y, z, arg, &cap_el);
            } else {
                continue;
            }
            if (rc)
                return rc;
            a->alive = 0;
            (*n_elim)++;
            changed = 1;
        }
    }
    return 0;
}

static void work_backsubstitute(Work *w)
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
        }
    }
}

/* Exhaustive search over the alive nodes. */
static int core_exhaustive(Work *w, const int *core, int nc)
{
    long combos = 1;
    for (int i = 0; i < nc; i++) {
        combos *= w->n[core[i]].k;
        if (combos > APPROF_ILP_EXHAUSTIVE_MAX)
            return APPROF_EUNSUPPORTED;
    }
    int *cur = calloc((size_t)(nc > 0 ? nc : 1), sizeof(int));
    int *best = calloc((size_t)(nc > 0 ? nc : 1), sizeof(int));
    if (!cur || !best) {
        free(cur);
        free(best);
        return APPROF_ENOMEM;
    }
    double best_obj = INFINITY;
    for (long it = 0; it < combos; it++) {
        for (int i = 0; i < nc; i++)
            w->n[core[i]].choice = cur[i];
        double obj = 0.0, mem = 0.0;
        for (int i = 0; i < nc; i++) {
            obj += w->n[core[i]].c[cur[i]];
            mem += w->n[core[i]].m[cur[i]];
        }
        for (int e = 0; e < w->ne; e++)
            if (w->e[e].alive)
                obj += w->e[e].r[(size_t)w->n[w->e[e].u].choice * w->n[w->e[e].v].k +
                                 w->n[w->e[e].v].choice];
        if ((w->budget < 0 || mem <= w->budget) && obj < best_obj) {
            best_obj = obj;
            memcpy(best, cur, (size_t)nc * sizeof(int));
        }
        for (int i = 0; i < nc; i++) {
            if (++cur[i] < w->n[core[i]].k)
                break;
            cur[i] = 0;
        }
    }
    for (int i = 0; i < nc; i++)
        w->n[core[i]].choice = best[i];
    free(cur);
    free(best);
    return isfinite(best_obj) ? 0 : APPROF_EINFEASIBLE;
}

int approf_ilp_have_cbc(void)
{
    return HAVE_CBC;
}

int approf_ilp_solve(const ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                     int *choice, double *objective, ApprofIlpStats *stats)
{
    ApprofIlpStats st = {0};
    Work w = {0};
    double obj = INFINITY;
    int *core = NULL;
    int rc = 0;
    Hash2 key = {0, 0};
    if (!p || !choice)
        return APPROF_EINVAL;
    if (method == APPROF_ILP_CBC_ONLY && !HAVE_CBC)
        return APPROF_EUNSUPPORTED;
    st.nodes = p->n_nodes;
    st.edges = p->n_edges;
    if (cache) {
        key = problem_hash(p, (int)method);
        CacheEntry *s = cache_slot(cache, key);
        if (s && s->n) {
            cache->hits++;
            if (s->status == 0)
                memcpy(choice, s->choice, (size_t)p->n_nodes * sizeof(int));
            if (objective)
                *objective = s->objective;
            if (stats) {
                *stats = s->stats;
                stats->cached = 1;
            }
            return s->status;
        }
    }
    rc = work_build(p, &w);
    if (rc)
        goto done;
    if ((method == APPROF_ILP_ELIMINATE_TREES_THEN_CBC || method == APPROF_ILP_SERIES_PARALLEL) && p->budget < 0) {
        rc = work_eliminate(&w, method == APPROF_ILP_SERIES_PARALLEL, &st.eliminated);
        if (rc)
            goto done;
    }
    core = malloc((size_t)(p->n_nodes > 0 ? p->n_nodes : 1) * sizeof(int));
    if (!core) {
        rc = APPROF_ENOMEM;
        goto done;
    }
    int nc = 0;
    for (int v = 0; v < w.nn; v++)
        if (w.n[v].alive)
            core[nc++] = v;
    st.core_nodes = nc;
    for (int e = 0; e < w.ne; e++)
        st.core_edges += w.e[e].alive;
    if (nc > 0) {
        if (method == APPROF_ILP_EXHAUSTIVE) {
            rc = core_exhaustive(&w, core, nc);
        } else {
#if HAVE_CBC
            rc = ilp_core_cbc(&w, core, nc, &st);
#else
            rc = method == APPROF_ILP_CBC_ONLY ? APPROF_EUNSUPPORTED : core_exhaustive(&w, core, nc);
#endif
        }
        if (rc)
            goto done;
    }
    work_backsubstitute(&w);
    for (int v = 0; v < p->n_nodes; v++)
        choice[v] = w.n[v].orig[w.n[v].choice];
    obj = approf_ilp_evaluate(p, choice);
    if (!isfinite(obj)) {
        rc = APPROF_EINFEASIBLE;
        goto done;
    }
    if (objective)
        *objective = obj;
done:
    if (cache && (rc == 0 || rc == APPROF_EINFEASIBLE)) {
        int prc = cache_put(cache, key, p->n_nodes, rc, choice,
                            rc == 0 ? obj : INFINITY, &st);
        if (prc)
            rc = prc;
    }
    if (stats)
        *stats = st;
    work_free(&w);
    free(core);
    return rc;
}
