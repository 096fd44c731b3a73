/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The strategy-selection ILP (ilp.h): problem building, the exact
 * elimination (ilp_elim.c) of the parts that are trees, chains or
 * (optionally) series-parallel, the remaining core handed to CBC
 * (ilp_cbc.c), an exhaustive fallback for builds without CBC, and a
 * solution cache keyed by a 128-bit problem hash.
 */
#include "hash.h"
#include "ilp.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "graph.h"
#include "grow.h"
#include "sharding/ilp_int.h"


/* ---- the arena --------------------------------------------------------- */

#define ILP_BLOCK_BYTES ((size_t)64 << 10)

void *ilp_arena_alloc_block(IlpArena *a, size_t n)
{
    size_t cap = n > ILP_BLOCK_BYTES ? n : ILP_BLOCK_BYTES;
    IlpBlock *b;
    if (cap > SIZE_MAX - sizeof *b || !(b = malloc(sizeof *b + cap)))
        return NULL;
    b->next = a->head;
    b->used = n;
    b->cap = cap;
    a->head = b;
    return b->data;
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
    size_t c = (size_t)*cap;
    if (need <= *cap)
        return 0;
    /* need <= INT_MAX / 2: the new capacity (at most twice the old) is an int */
    if (need > INT_MAX / 2 || util_grow(arr, &c, (size_t)need, elem) < 0)
        return APPROF_ENOMEM;
    *cap = (int)c;
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

/* approf_ilp_evaluate, with the memory its budget test adds up into
 * *mem (approf_ilp_memory's sum: the same terms in the same order) when
 * every choice is in range. */
static double evaluate_with_memory(const ApprofIlp *p, const int *choice, double *mem_out)
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
    *mem_out = mem;
    if (p->budget >= 0 && mem > p->budget)
        return INFINITY;
    return isfinite(obj) ? obj : INFINITY;
}

double approf_ilp_evaluate(const ApprofIlp *p, const int *choice)
{
    double mem;
    return evaluate_with_memory(p, choice, &mem);
}

/* ---- hashing ------------------------------------------------------------ */

typedef ApprofHash128 Hash2;

static void hash_bytes(Hash2 *h, const void *data, size_t n)
{
    approf_hash128_update(h, data, n);
}

/* 64 bits of each of n doubles into h, one word a value. */
static void hash_doubles(Hash2 *h, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, &x[i], sizeof w);
        approf_hash128_word(h, w);
    }
}

/* The problem word by word: its header, then each node's strategy count
 * and whether it has memory (one word), costs and memories, then each
 * edge's ends (one word) and table; the counts fix every length, so no
 * two problems give the same words. */
static Hash2 problem_hash(const ApprofIlp *p, int method)
{
    Hash2 h;
    approf_hash128_init(&h, 0);
    hash_bytes(&h, &method, sizeof(method));
    hash_bytes(&h, &p->n_nodes, sizeof(p->n_nodes));
    hash_bytes(&h, &p->budget, sizeof(p->budget));
    hash_bytes(&h, &p->weight, sizeof(p->weight));
    for (int v = 0; v < p->n_nodes; v++) {
        int has_mem = p->mem[v] != NULL;
        approf_hash128_word(&h, (uint64_t)(uint32_t)p->k[v] << 1 | (uint64_t)has_mem);
        hash_doubles(&h, p->cost[v], (size_t)p->k[v]);
        if (has_mem)
            hash_doubles(&h, p->mem[v], (size_t)p->k[v]);
    }
    hash_bytes(&h, &p->n_edges, sizeof(p->n_edges));
    for (int e = 0; e < p->n_edges; e++) {
        approf_hash128_word(&h, (uint64_t)(uint32_t)p->eu[e] << 32 | (uint32_t)p->ev[e]);
        hash_doubles(&h, p->r[e], (size_t)p->k[p->eu[e]] * (size_t)p->k[p->ev[e]]);
    }
    return h;
}

void approf_ilp_hash(const ApprofIlp *p, char *out, size_t len)
{
    Hash2 h = problem_hash(p, 0);
    snprintf(out, len, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

/* ---- cache -------------------------------------------------------------- */

/* A solution, or (points > 0) a problem's Pareto points: choice holds
 * points solutions end to end and tm their times then their memories. */
typedef struct CacheEntry {
    Hash2 key;
    int n;
    int status;
    int *choice;
    double objective;
    ApprofIlpStats stats;
    int points;
    double *tm;
} CacheEntry;

struct ApprofIlpCache {
    CacheEntry *e;
    size_t n, cap;     /* open addressing, cap a power of two */
    size_t hits;
    IlpParetoMode pareto_mode;
    size_t pareto_replays, pareto_settled; /* ilp_cache_pareto_replays */
    size_t bytes;      /* the slots and what their entries hold */
    size_t cap_bytes;  /* past it the next entry starts the cache again */
};

/* A malloc'ed block counted with a word of the allocator's own. */
#define ILP_BLOCK_OVERHEAD 16

/* The cache's byte cap: APPROF_ILP_CACHE_CAP_BYTES from the environment
 * when set (an internal knob for tests), else 32 MiB. A solution dropped
 * only costs solving the problem again, which gives the same answer (the
 * solvers are deterministic; ILP_PARETO_REPLAY and _FRESH give the same
 * points bit for bit, ilp_int.h). */
static size_t ilp_cache_cap_default(void)
{
    const char *v = getenv("APPROF_ILP_CACHE_CAP_BYTES");
    if (v && *v) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end == '\0')
            return n ? (size_t)n : 1;
    }
    return (size_t)32 << 20;
}

int approf_ilp_cache_new(ApprofIlpCache **out)
{
    if (!out)
        return APPROF_EINVAL;
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return APPROF_ENOMEM;
    (*out)->cap_bytes = ilp_cache_cap_default();
    return 0;
}

void approf_ilp_cache_free(ApprofIlpCache **cp)
{
    if (!cp || !*cp)
        return;
    approf_ilp_cache_clear(*cp);
    free(*cp);
    *cp = NULL;
}

void approf_ilp_cache_clear(ApprofIlpCache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++) {
        free(c->e[i].choice);
        free(c->e[i].tm);
    }
    free(c->e);
    c->e = NULL;
    c->n = c->cap = 0;
    c->bytes = 0;
}

size_t approf_ilp_cache_bytes(const ApprofIlpCache *c)
{
    return c ? c->bytes : 0;
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

/* A free slot for key, the table grown as needed; NULL when key is there
 * already (*err 0) or without memory (*err APPROF_ENOMEM). */
static CacheEntry *cache_claim(ApprofIlpCache *c, Hash2 key, int *err)
{
    *err = 0;
    /* past the byte cap: start again (nobody holds an entry across a put) */
    if (c->cap_bytes && c->bytes > c->cap_bytes && !cache_slot(c, key)->n)
        approf_ilp_cache_clear(c);
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        CacheEntry *ne = calloc(ncap, sizeof(*ne));
        if (!ne) {
            *err = APPROF_ENOMEM;
            return NULL;
        }
        CacheEntry *old = c->e;
        size_t ocap = c->cap;
        c->e = ne;
        c->bytes += (ncap - c->cap) * sizeof(*ne);
        c->cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].n)
                *cache_slot(c, old[i].key) = old[i];
        free(old);
    }
    CacheEntry *s = cache_slot(c, key);
    return s->n ? NULL : s;
}

static int cache_put(ApprofIlpCache *c, Hash2 key, int n, int status, const int *choice,
                     double objective, const ApprofIlpStats *st)
{
    int err;
    CacheEntry *s = cache_claim(c, key, &err);
    if (!s)
        return err;
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
    c->bytes += (size_t)s->n * sizeof(int) + ILP_BLOCK_OVERHEAD;
    return 0;
}

/* The key of a problem's Pareto points: its key at weight 0 and the
 * number of points asked for. */
static Hash2 points_key(Hash2 key, int max_points)
{
    Hash2 h;
    uint64_t w[3] = {key.a, key.b, (uint64_t)max_points};
    approf_hash128_init(&h, 0x9a4e70);
    approf_hash128_update(&h, w, sizeof w);
    return h;
}

int ilp_cache_points_find(ApprofIlpCache *c, Hash2 key, int max_points, int n, int *choices,
                          double *times, double *mems, int *n_points)
{
    CacheEntry *s = c ? cache_slot(c, points_key(key, max_points)) : NULL;
    if (!s || !s->n || s->points < 1 || s->n != (n > 0 ? n : 1))
        return 0;
    memcpy(choices, s->choice, (size_t)s->points * (size_t)n * sizeof(int));
    memcpy(times, s->tm, (size_t)s->points * sizeof(double));
    memcpy(mems, s->tm + s->points, (size_t)s->points * sizeof(double));
    *n_points = s->points;
    return 1;
}

int ilp_cache_points_put(ApprofIlpCache *c, Hash2 key, int max_points, int n,
                         const int *choices, const double *times, const double *mems,
                         int n_points)
{
    int err;
    CacheEntry *s = cache_claim(c, points_key(key, max_points), &err);
    if (!s)
        return err;
    size_t nc = (size_t)n_points * (size_t)n;
    s->choice = malloc((nc ? nc : 1) * sizeof(int));
    s->tm = malloc(2 * (size_t)n_points * sizeof(double));
    if (!s->choice || !s->tm) {
        free(s->choice);
        free(s->tm);
        s->choice = NULL;
        s->tm = NULL;
        return APPROF_ENOMEM;
    }
    memcpy(s->choice, choices, nc * sizeof(int));
    memcpy(s->tm, times, (size_t)n_points * sizeof(double));
    memcpy(s->tm + n_points, mems, (size_t)n_points * sizeof(double));
    s->key = points_key(key, max_points);
    s->n = n > 0 ? n : 1;
    s->points = n_points;
    c->n++;
    c->bytes += (nc ? nc : 1) * sizeof(int) + 2 * (size_t)n_points * sizeof(double) +
                2 * ILP_BLOCK_OVERHEAD;
    return 0;
}

void ilp_cache_set_pareto_mode(ApprofIlpCache *c, IlpParetoMode mode)
{
    if (c)
        c->pareto_mode = mode;
}

IlpParetoMode ilp_cache_pareto_mode(const ApprofIlpCache *c)
{
    return c ? c->pareto_mode : ILP_PARETO_REPLAY;
}

void ilp_cache_pareto_replays(const ApprofIlpCache *c, size_t *replays, size_t *settled)
{
    *replays = c ? c->pareto_replays : 0;
    *settled = c ? c->pareto_settled : 0;
}

void ilp_cache_count_replays(ApprofIlpCache *c, size_t replays, size_t settled)
{
    if (c) {
        c->pareto_replays += replays;
        c->pareto_settled += settled;
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

/* The core of w (its alive nodes) solved by method, the eliminated nodes
 * set from it, and choice, *objective and *memory (approf_ilp_memory's
 * value) from the original problem. */
static int work_finish(const ApprofIlp *p, ApprofIlpMethod method, Work *w, int *choice,
                       double *objective, double *memory, ApprofIlpStats *st)
{
    int rc = 0, nc = 0;
    /* a replay's core is the elimination's, listed by its plan
     * (ilp_elim.c, plan_replay); its stats are not read */
    int *core = w->core ? w->core : malloc((size_t)(p->n_nodes > 0 ? p->n_nodes : 1) * sizeof(int));
    if (!core)
        return APPROF_ENOMEM;
    if (w->core) {
        nc = w->n_core;
    } else {
        for (int v = 0; v < w->nn; v++)
            if (w->n[v].alive)
                core[nc++] = v;
        st->core_edges = 0;
        for (int e = 0; e < w->ne; e++)
            st->core_edges += w->e[e].alive;
    }
    st->core_nodes = nc;
    if (nc > 0) {
        if (method == APPROF_ILP_EXHAUSTIVE) {
            rc = core_exhaustive(w, core, nc);
        } else {
#if HAVE_CBC
            rc = ilp_core_cbc(w, core, nc, st);
#else
            rc = method == APPROF_ILP_CBC_ONLY ? APPROF_EUNSUPPORTED : core_exhaustive(w, core, nc);
#endif
        }
    }
    if (core != w->core)
        free(core);
    if (rc)
        return rc;
    ilp_work_backsubstitute(w);
    for (int v = 0; v < p->n_nodes; v++)
        choice[v] = w->n[v].orig[w->n[v].choice];
    *objective = evaluate_with_memory(p, choice, memory);
    return isfinite(*objective) ? 0 : APPROF_EINFEASIBLE;
}

/* Whether method eliminates before the core's solver (with no budget). */
static int eliminates(const ApprofIlp *p, ApprofIlpMethod method)
{
    return (method == APPROF_ILP_ELIMINATE_TREES_THEN_CBC || method == APPROF_ILP_SERIES_PARALLEL) &&
           p->budget < 0;
}

int ilp_solve_keep(const ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                   int *choice, double *objective, ApprofIlpStats *stats, Work *keep,
                   Hash2 *key_out)
{
    ApprofIlpStats st = {0};
    Work w = {0};
    double obj = INFINITY;
    int rc = 0;
    Hash2 key = {0, 0};
    double mem;
    if (!p || !choice)
        return APPROF_EINVAL;
    if (method == APPROF_ILP_CBC_ONLY && !HAVE_CBC)
        return APPROF_EUNSUPPORTED;
    st.nodes = p->n_nodes;
    st.edges = p->n_edges;
    if (cache) {
        key = problem_hash(p, (int)method);
        if (key_out)
            *key_out = key;
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
    rc = ilp_work_build(p, &w);
    if (!rc && keep)
        rc = ilp_work_keep_built(&w);
    if (!rc && eliminates(p, method))
        rc = ilp_work_eliminate(&w, method == APPROF_ILP_SERIES_PARALLEL, &st);
    if (!rc)
        rc = work_finish(p, method, &w, choice, &obj, &mem, &st);
    if (!rc && objective)
        *objective = obj;
    if (cache && (rc == 0 || rc == APPROF_EINFEASIBLE)) {
        int prc = cache_put(cache, key, p->n_nodes, rc, choice,
                            rc == 0 ? obj : INFINITY, &st);
        if (prc)
            rc = prc;
    }
    if (stats)
        *stats = st;
    if (keep && !rc)
        *keep = w;
    else
        ilp_work_free(&w);
    return rc;
}

int approf_ilp_solve(const ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                     int *choice, double *objective, ApprofIlpStats *stats)
{
    return ilp_solve_keep(p, method, cache, choice, objective, stats, NULL, NULL);
}

int ilp_solve_replay(const ApprofIlp *p, ApprofIlpMethod method, Work *w, int *choice,
                     double *objective)
{
    int rc = ilp_work_replay(p, w);
    return rc ? rc : ilp_replay_finish(p, method, w, choice, objective, NULL);
}

int ilp_replay_finish(const ApprofIlp *p, ApprofIlpMethod method, Work *w, int *choice,
                      double *objective, double *memory)
{
    ApprofIlpStats st = {0};
    double obj = INFINITY, mem = 0.0;
    int rc = work_finish(p, method, w, choice, &obj, &mem, &st);
    if (!rc) {
        *objective = obj;
        if (memory)
            *memory = mem;
    }
    return rc;
}
