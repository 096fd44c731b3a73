/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partial full recomputation priced from stored entries (recompute_layers.h;
 * docs/variants.md, "Partial recomputation"). Megatron-LM core_v0.19.0,
 * megatron/core/recompute.py `checkpointed_forward`, recompute_method
 * 'block': each of the TransformerBlock's layers (one virtual pipeline
 * chunk's, `num_layers_per_pipeline_rank = len(self.layers)` in
 * transformer_block.py) with layer_idx < recompute_num_layers runs under
 * tensor_parallel.checkpoint, the others run plainly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "recompute_layers.h"
#include "search_pool.h"
#include "solver_int.h"

/* One entry's figures: its own when it has a time, else those the sweep
 * computed before judging it out of memory (ApsolveUnfit). 0; -1: none. */
typedef struct Figures {
    double fwd, bwd, wgrad, apply;
    ApsolveMemory m;
} Figures;

static int figures(const ApsolveProblem *p, int i, int j, int s, int c, Figures *f)
{
    size_t idx = apsolve_index(p, i, j, s, c);
    if (isfinite(apsolve_cell_cost(p, idx, (size_t)s * p->num_configs + c))) {
        const ApsolveTimes *t = apsolve_times_at(p, idx);
        f->fwd = t->fwd;
        f->bwd = t->bwd;
        f->wgrad = t->wgrad;
        f->apply = p->apply_cost[idx];
        f->m = *apsolve_memory_at(p, idx);
        return 0;
    }
    if (apsolve_unfit_at(p, idx)) {
        const ApsolveUnfit *u = apsolve_unfit_at(p, idx);
        *f = (Figures){u->fwd, u->bwd, -1.0, u->apply, u->memory};
        return 0;
    }
    return -1;
}

/* The config of submesh s that is config c with recomputation r (the same
 * logical mesh, batch option, memory level and ZeRO stage), or -1. */
static int sibling(const ApsolveProblem *p, int s, int c, int r)
{
    const ApsolveConfig *base = &p->configs[(size_t)s * p->num_configs + c];
    for (int o = 0; o < p->num_configs; o++) {
        const ApsolveConfig *x = &p->configs[(size_t)s * p->num_configs + o];
        if (x->valid && x->logical_a == base->logical_a && x->logical_b == base->logical_b &&
            x->force_batch_dim == base->force_batch_dim &&
            x->variant.memory_level == base->variant.memory_level &&
            x->variant.zero == base->variant.zero && x->variant.recompute == r)
            return o;
    }
    return -1;
}

/* Adds range (a..b) of config c on submesh s to *x: its phases and its
 * saved activations. 0; -1 with why. */
static int add_range(const ApsolveProblem *p, int a, int b, int s, int c, Figures *x, char *why,
                     size_t len)
{
    Figures f;
    if (c < 0 || figures(p, a, b, s, c, &f)) {
        const ApsolveSubmesh *m = &p->submeshes[s];
        snprintf(why, len, "layers %d-%d have no %s entry with a time on submesh (%d, %d) at "
                 "this logical mesh and memory level%s", a, b,
                 c < 0 ? "such" : costdb_recompute_name(p->configs[(size_t)s * p->num_configs
                                                                   + c].variant.recompute),
                 m->hosts, m->gpus, m->hosts * m->gpus == p->num_devices
                     ? " (the whole cluster's submesh is profiled for the whole model "
                       "only: one stage on every GPU cannot be composed)" : "");
        return -1;
    }
    x->fwd += f.fwd;
    x->bwd += f.bwd;
    x->wgrad = x->wgrad < 0 || f.wgrad < 0 ? -1.0 : x->wgrad + f.wgrad;
    x->m.intermediate += f.m.intermediate;
    return 0;
}

/* apsolve_recompute_layers_entry with cn, config c's `none` sibling
 * (sibling; -1 none), known. */
static int entry_at(const ApsolveProblem *p, int start, int end, int s, int c, int cn, int k,
                    int chunks, ApsolveRecomputeLayers *out, char *why, size_t len)
{
    int n = end - start + 1;
    int m = chunks > 0 ? n / chunks : 0;
    Figures x = {0, 0, 0, 0, {0, 0, 0, 0}}, whole_full, whole_none;
    if (!p->memory || !p->times) {
        snprintf(why, len, "the problem has no memory figures");
        return -1;
    }
    if (chunks < 1 || n % chunks || k < 1 || k >= m) {
        snprintf(why, len, "%d layers in %d chunks with %d recomputed each", n, chunks, k);
        return -1;
    }
    /* recomputation changes neither the parameters nor the optimizer: the
     * apply step and the optimizer state are the whole stage's, exactly;
     * what a layer keeps beside its saved activations (its weights and
     * gradient buffers, the backward's transients) is the larger of the
     * whole stage's two variants' */
    if (figures(p, start, end, s, c, &whole_full) ||
        cn < 0 || figures(p, start, end, s, cn, &whole_none)) {
        snprintf(why, len, "layers %d-%d have no %s entry with a time on this mesh and level",
                 start, end, cn < 0 ? "none" : "full or none");
        return -1;
    }
    for (int q = 0; q < chunks; q++) {
        int a = start + q * m;
        if (add_range(p, a, a + k - 1, s, c, &x, why, len) ||
            add_range(p, a + k, a + m - 1, s, cn, &x, why, len))
            return -1;
    }
    out->k = k;
    out->chunks = chunks;
    out->chunk_layers = m;
    out->fwd = x.fwd;
    out->bwd = x.bwd;
    out->wgrad = x.wgrad;
    out->apply = whole_none.apply;
    out->memory.intermediate = x.m.intermediate;
    out->memory.initial = whole_none.m.initial;
    {
        int64_t rest_full = whole_full.m.peak - whole_full.m.intermediate,
                rest_none = whole_none.m.peak - whole_none.m.intermediate;
        out->memory.peak = x.m.intermediate + (rest_full > rest_none ? rest_full : rest_none);
    }
    out->memory.avail = whole_full.m.avail;
    return 0;
}

int apsolve_recompute_layers_entry(const ApsolveProblem *p, int start, int end, int s, int c,
                                   int k, int chunks, ApsolveRecomputeLayers *out, char *why,
                                   size_t len)
{
    return entry_at(p, start, end, s, c, sibling(p, s, c, COSTDB_RECOMPUTE_NONE), k, chunks,
                    out, why, len);
}

/* Entry idx of q becomes the composed stage r. */
static void put(ApsolveProblem *q, size_t idx, const ApsolveRecomputeLayers *r)
{
    q->cost[idx] = r->fwd + r->bwd;
    q->apply_cost[idx] = r->apply;
    q->max_n_succ_stages[idx] = apsolve_memory_mnss(&r->memory);
    /* out of memory for a cell that had no figures or times: no stage
     * rather than one with figures it does not have */
    if (apsolve_times_put(q, idx, &(ApsolveTimes){r->fwd, r->bwd, r->wgrad}) != APSOLVE_OK ||
        apsolve_memory_put(q, idx, &r->memory) != APSOLVE_OK)
        q->cost[idx] = INFINITY;
}

/* Entry idx of q becomes p's own (the stored `full` entry, every layer
 * recomputed). */
static void restore(ApsolveProblem *q, const ApsolveProblem *p, size_t idx)
{
    q->cost[idx] = p->cost[idx];
    q->apply_cost[idx] = p->apply_cost[idx];
    q->max_n_succ_stages[idx] = p->max_n_succ_stages[idx];
    /* (q is not p: p's figures stay where they are while q grows) */
    if (apsolve_times_put(q, idx, apsolve_times_at(p, idx)) != APSOLVE_OK ||
        apsolve_memory_put(q, idx, apsolve_memory_at(p, idx)) != APSOLVE_OK)
        q->cost[idx] = INFINITY;
}

/* Entries (start..end, submesh s) of q's `full` configs become the
 * composed stages of p's entries (or p's own when every layer of a chunk
 * is recomputed: the layers do not split into the chunks, or k reaches a
 * chunk's layers). sib: each config's `none` sibling on s (sibling), or
 * NULL to look it up. */
/* A composed entry whose put would append to a slot table (its cell has
 * no memory figures or times of its own), held by a part of
 * compose_all_threads and put after the parts, in the serial order. */
typedef struct Deferred {
    size_t idx;
    ApsolveRecomputeLayers r;
} Deferred;

/* Submeshes s0 .. s1 - 1 of compose_all in place on a thread (compose_all_threads). */
typedef struct ComposePart {
    ApsolveProblem *p;
    int k, chunks, s0, s1, nomem;
    int *sib;
    Deferred *d;
    size_t n, cap;
} ComposePart;

/* Puts r at idx of q, or (part, a put that appends) holds it in part. */
static void put_or_defer(ApsolveProblem *q, size_t idx, const ApsolveRecomputeLayers *r,
                         ComposePart *part)
{
    if (!part || (q->times->slot[idx] && q->memory->slot[idx])) {
        put(q, idx, r); /* in place: its own slots, no other cell's */
        return;
    }
    if (part->n == part->cap) {
        size_t cap = part->cap ? 2 * part->cap : 1024;
        Deferred *d = realloc(part->d, cap * sizeof *d);
        if (!d) {
            part->nomem = 1;
            return;
        }
        part->d = d;
        part->cap = cap;
    }
    part->d[part->n++] = (Deferred){idx, *r};
}

static void compose_range(const ApsolveProblem *p, ApsolveProblem *q, int start, int end, int s,
                          int k, int chunks, const int *sib, ComposePart *part)
{
    int layers = end - start + 1;
    int whole = layers % chunks || k >= layers / chunks; /* every layer recomputed */
    if (whole && q == p)
        return; /* in place: its stored entries are already there */
    for (int c = 0; c < q->num_configs; c++) {
        const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
        size_t idx = apsolve_index(q, start, end, s, c);
        ApsolveRecomputeLayers r;
        char why[200];
        if (!cf->valid || cf->variant.recompute != COSTDB_RECOMPUTE_FULL)
            continue;
        /* priced from p, the stored entries: never from a composed one */
        if (whole)
            restore(q, p, idx);
        else if (entry_at(p, start, end, s, c,
                          sib ? sib[c] : sibling(p, s, c, COSTDB_RECOMPUTE_NONE), k, chunks, &r,
                          why, sizeof why))
            q->cost[idx] = INFINITY; /* no such stage can be priced */
        else
            put_or_defer(q, idx, &r, part);
    }
}

int apsolve_recompute_layers_compose(const ApsolveProblem *p, ApsolveProblem *q,
                                     const ApsolveStageSpec *specs, size_t n, int k, int chunks)
{
    if (!p->memory || !p->times || chunks < 1)
        return APSOLVE_EINVAL;
    for (size_t t = 0; t < n; t++) {
        const ApsolveStageSpec *sp = &specs[t];
        int s = apsolve_find_submesh(q, sp->hosts, sp->gpus);
        if (s >= 0)
            compose_range(p, q, sp->start_layer, sp->end_layer, s, k, chunks, NULL, NULL);
    }
    return APSOLVE_OK;
}

int apsolve_recompute_layers_compose_all(const ApsolveProblem *p, ApsolveProblem *q, int k,
                                         int chunks)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs;
    int *sib;
    if (!p->memory || !p->times || chunks < 1)
        return APSOLVE_EINVAL;
    if (!(sib = malloc((size_t)C * sizeof *sib))) {
        /* the same entries, each sibling looked up per entry */
        for (int i = 0; i < L; i++)
            for (int j = i; j < L; j++)
                for (int s = 0; s < S; s++)
                    compose_range(p, q, i, j, s, k, chunks, NULL, NULL);
        return APSOLVE_OK;
    }
    /* Each range's entries are written from p's, never from q's, and in
     * place (q = p) a range reads no entry another range writes
     * (recompute_layers.h, save): so the order is free. Submesh by
     * submesh, by chunk length, then by first layer: ranges i and i + m of
     * chunks of m layers share all chunks but one, and read them while
     * they are still cached (docs/performance.md, "apsolve on the
     * 126-layer 405B: the time by phase, and six exact cuts", 1). */
    for (int s = 0; s < S; s++) {
        for (int c = 0; c < C; c++)
            sib[c] = sibling(p, s, c, COSTDB_RECOMPUTE_NONE);
        for (int m = 1; m * chunks <= L; m++)
            for (int i = 0; i + m * chunks <= L; i++)
                compose_range(p, q, i, i + m * chunks - 1, s, k, chunks, sib, NULL);
        if (q != p) /* the ranges the chunks do not split: stored entries (none in place) */
            for (int i = 0; i < L; i++)
                for (int j = i; j < L; j++)
                    if ((j - i + 1) % chunks)
                        compose_range(p, q, i, j, s, k, chunks, sib, NULL);
    }
    free(sib);
    return APSOLVE_OK;
}

static void compose_task(void *ctx, int i)
{
    ComposePart *t = (ComposePart *)ctx + i;
    const ApsolveProblem *p = t->p;
    for (int s = t->s0; s < t->s1; s++) {
        for (int c = 0; c < p->num_configs; c++)
            t->sib[c] = sibling(p, s, c, COSTDB_RECOMPUTE_NONE);
        for (int m = 1; m * t->chunks <= p->num_layers; m++)
            for (int a = 0; a + m * t->chunks <= p->num_layers; a++)
                compose_range(p, t->p, a, a + m * t->chunks - 1, s, t->k, t->chunks, t->sib, t);
    }
}

int apsolve_recompute_layers_compose_all_threads(ApsolveProblem *p, int k, int chunks,
                                                 int threads)
{
    int S = p->num_submeshes, C = p->num_configs, full = 0, half = 0, mid, e = APSOLVE_OK;
    ComposePart t[2];
    if (threads < 2 || S < 2 || !p->memory || !p->times || chunks < 1)
        return apsolve_recompute_layers_compose_all(p, p, k, chunks);
    /* two parts of whole submeshes, of about as many `full` configs: in
     * place a range reads no entry another range writes (compose_all), so
     * the parts' puts in place give the serial ones; a put that appends to
     * a slot table waits, the parts' in their order after them, which is
     * the serial order of the appends (part 0's submeshes come first) */
    for (int x = 0; x < S * C; x++)
        full += p->configs[x].valid && p->configs[x].variant.recompute == COSTDB_RECOMPUTE_FULL;
    for (mid = 0; mid < S - 1 && half < full / 2; mid++)
        for (int c = 0; c < C; c++)
            half += p->configs[(size_t)mid * C + c].valid &&
                    p->configs[(size_t)mid * C + c].variant.recompute == COSTDB_RECOMPUTE_FULL;
    if (mid == 0)
        mid = 1;
    for (int i = 0; i < 2; i++)
        t[i] = (ComposePart){p, k, chunks, i ? mid : 0, i ? S : mid, 0,
                             malloc((size_t)C * sizeof(int)), NULL, 0, 0};
    if (!t[0].sib || !t[1].sib) {
        free(t[0].sib);
        free(t[1].sib);
        return apsolve_recompute_layers_compose_all(p, p, k, chunks);
    }
    apsolve_pool_run(threads, 2, compose_task, t);
    if (t[0].nomem || t[1].nomem) /* the held puts lost: the serial compose, which writes
                                   * the same entries and appends those still without */
        e = apsolve_recompute_layers_compose_all(p, p, k, chunks);
    else
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < t[i].n; j++)
                put(p, t[i].d[j].idx, &t[i].d[j].r);
    for (int i = 0; i < 2; i++) {
        free(t[i].sib);
        free(t[i].d);
    }
    return e;
}

int apsolve_recompute_layers_problem(const ApsolveProblem *p, const ApsolveStageSpec *specs,
                                     size_t n, int k, int chunks, ApsolveProblem **out)
{
    ApsolveProblem *q = NULL;
    int rc;
    *out = NULL;
    if (!p->memory || !p->times || chunks < 1)
        return APSOLVE_EINVAL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    apsolve_recompute_layers_compose(p, q, specs, n, k, chunks);
    *out = q;
    return APSOLVE_OK;
}

/* apsolve_recompute_layers_floors over the configs (s, c) of flat index
 * s C + c in lo .. hi - 1 alone, into floor (+inf first) with least of 2 M:
 * 0; 1 where some figure is negative or NaN (no floor: the caller's every
 * floor[k] is 0). */
static int floors_part(const ApsolveProblem *p, int chunks, int lo, int hi, double *least,
                       double *floor)
{
    int L = p->num_layers, C = p->num_configs, M = L / chunks;
    for (int k = 1; k < M; k++)
        floor[k] = INFINITY;
    for (int sc = lo; sc < hi; sc++) {
        int s = sc / C, c = sc % C, cn;
        const ApsolveConfig *cf = &p->configs[sc];
        if (!cf->valid || cf->variant.recompute != COSTDB_RECOMPUTE_FULL ||
            (cn = sibling(p, s, c, COSTDB_RECOMPUTE_NONE)) < 0)
            continue; /* compose_range writes +inf or nothing */
        for (int len = 1; len < M; len++)
            for (int r = 0; r < 2; r++) {
                double *x = &least[(size_t)r * M + len];
                *x = INFINITY;
                for (int a = 0; a + len <= L; a++) {
                    Figures f;
                    if (figures(p, a, a + len - 1, s, r ? cn : c, &f))
                        continue; /* no entry made of it has a time */
                    if (!(f.fwd >= 0) || !(f.bwd >= 0))
                        return 1;
                    *x = f.fwd + f.bwd < *x ? f.fwd + f.bwd : *x;
                }
            }
        /* a stage of chunks of m > k layers: per chunk its first k
         * layers `full` and the other m - k `none` */
        for (int k = 1; k < M; k++)
            for (int m = k + 1; m <= M; m++) {
                double x = (double)chunks * (least[k] + least[(size_t)M + m - k]);
                floor[k] = x < floor[k] ? x : floor[k];
            }
    }
    return 0;
}

/* One part of the floors on a thread (apsolve_recompute_layers_floors_threads). */
typedef struct FloorsPart {
    const ApsolveProblem *p;
    int chunks, lo, hi, none;
    double *least, *floor;
} FloorsPart;

static void floors_task(void *ctx, int i)
{
    FloorsPart *t = (FloorsPart *)ctx + i;
    t->none = floors_part(t->p, t->chunks, t->lo, t->hi, t->least, t->floor);
}

int apsolve_recompute_layers_floors_threads(const ApsolveProblem *p, int chunks, double *floor,
                                            int threads)
{
    int L = p->num_layers, SC = p->num_submeshes * p->num_configs, M, mid = SC, half = 0;
    double *least; /* [2 M] per part: its config's `full` ranges of each length, then its
                    * sibling's `none` ones; then the second part's floors */
    FloorsPart t[2];
    if (!p->memory || !p->times || chunks < 1 || L / chunks < 2)
        return APSOLVE_EINVAL;
    M = L / chunks;
    /* two parts of about as many `full` configs: each floor[k] is the
     * least of its terms, which is the least of the two parts' least (no
     * term is NaN: a NaN figure gives no floor, in either part); one
     * without the memory for the second part's scratch */
    if (threads >= 2) {
        int full = 0;
        for (int sc = 0; sc < SC; sc++)
            full += p->configs[sc].valid &&
                    p->configs[sc].variant.recompute == COSTDB_RECOMPUTE_FULL;
        for (mid = 0; full >= 2 && mid < SC && half < full / 2; mid++)
            half += p->configs[mid].valid &&
                    p->configs[mid].variant.recompute == COSTDB_RECOMPUTE_FULL;
        if (full < 2)
            mid = SC;
    }
    if (!(least = malloc((mid < SC ? 5 : 2) * (size_t)M * sizeof *least)) && mid < SC) {
        mid = SC;
        least = malloc(2 * (size_t)M * sizeof *least);
    }
    if (!least)
        return APSOLVE_ENOMEM;
    t[0] = (FloorsPart){p, chunks, 0, mid, 0, least, floor};
    if (mid < SC)
        t[1] = (FloorsPart){p, chunks, mid, SC, 0, least + 2 * (size_t)M, least + 4 * (size_t)M};
    apsolve_pool_run(threads, mid < SC ? 2 : 1, floors_task, t);
    for (int k = 1; k < M; k++)
        if (t[0].none || (mid < SC && t[1].none))
            floor[k] = 0; /* no floor: nothing left out */
        else if (mid < SC)
            floor[k] = t[1].floor[k] < floor[k] ? t[1].floor[k] : floor[k];
    free(least);
    return APSOLVE_OK;
}

int apsolve_recompute_layers_floors(const ApsolveProblem *p, int chunks, double *floor)
{
    return apsolve_recompute_layers_floors_threads(p, chunks, floor, 1);
}

/* One `full` entry as it was: every table compose_range writes. */
typedef struct SavedEntry {
    double cost, fwd, bwd, wgrad, apply;
    ApsolveMemory m;
    int mnss;
} SavedEntry;

struct ApsolveRecomputeSaved {
    int chunks;                       /* the chunk count they were saved for */
    size_t n;
    SavedEntry *e;                    /* in the order of saved_each */
};

/* Whether compose_all in place writes range i..j at k (0: any k >= 1) of
 * `chunks` chunks: the ranges whose chunks hold more than k layers (at
 * least 2 for any k); every other range keeps its stored entries. */
static int range_composed(int i, int j, int chunks, int k)
{
    int layers = j - i + 1;
    return layers % chunks == 0 && layers / chunks > (k > 1 ? k : 1);
}

/* Calls f on every entry compose_all in place can write at k (0: any k) of
 * `chunks` chunks (a valid `full` config's, ranges i <= j whose chunks hold
 * more than k layers), counting, in one order, the entries of every k: the
 * entries of one k are a subset of those of any k, at the same places. */
static void saved_each(const ApsolveProblem *p, int chunks, int k,
                       void (*f)(ApsolveProblem *, size_t, SavedEntry *), ApsolveProblem *w,
                       SavedEntry *e, size_t *n)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs;
    *n = 0;
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++) {
            int any = range_composed(i, j, chunks, 0);
            int now = any && range_composed(i, j, chunks, k);
            if (!any)
                continue;
            for (int s = 0; s < S; s++)
                for (int c = 0; c < C; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
                    if (!cf->valid || cf->variant.recompute != COSTDB_RECOMPUTE_FULL)
                        continue;
                    if (f && now)
                        f(w, apsolve_index(p, i, j, s, c), &e[*n]);
                    (*n)++;
                }
        }
}

static void save_one(ApsolveProblem *p, size_t idx, SavedEntry *e)
{
    const ApsolveTimes *t = apsolve_times_at(p, idx);
    *e = (SavedEntry){p->cost[idx], t->fwd, t->bwd, t->wgrad, p->apply_cost[idx],
                      *apsolve_memory_at(p, idx), p->max_n_succ_stages[idx]};
}

static void put_back_one(ApsolveProblem *p, size_t idx, SavedEntry *e)
{
    p->cost[idx] = e->cost;
    p->apply_cost[idx] = e->apply;
    /* the cell's own figures and times since it was saved, or figs[0]'s:
     * no room taken (apsolve_memory_put, apsolve_times_put) */
    (void)apsolve_times_put(p, idx, &(ApsolveTimes){e->fwd, e->bwd, e->wgrad});
    (void)apsolve_memory_put(p, idx, &e->m);
    p->max_n_succ_stages[idx] = e->mnss;
}

int apsolve_recompute_layers_save(const ApsolveProblem *p, int chunks,
                                  ApsolveRecomputeSaved **out)
{
    ApsolveRecomputeSaved *v;
    size_t n;
    *out = NULL;
    if (!p->memory || !p->times || chunks < 1)
        return APSOLVE_EINVAL;
    saved_each(p, chunks, 0, NULL, NULL, NULL, &n);
    if (!(v = calloc(1, sizeof *v)) || !(v->e = malloc((n ? n : 1) * sizeof *v->e))) {
        free(v);
        return APSOLVE_ENOMEM;
    }
    v->chunks = chunks;
    /* save_one only reads its problem */
    saved_each(p, chunks, 0, save_one, (ApsolveProblem *)p, v->e, &v->n);
    *out = v;
    return APSOLVE_OK;
}

void apsolve_recompute_layers_put_back(ApsolveProblem *p, const ApsolveRecomputeSaved *v, int k)
{
    size_t n;
    saved_each(p, v->chunks, k, put_back_one, p, v->e, &n);
}

void apsolve_recompute_layers_saved_free(ApsolveRecomputeSaved **v)
{
    if (!v || !*v)
        return;
    free((*v)->e);
    free(*v);
    *v = NULL;
}
