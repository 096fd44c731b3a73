/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference implementations for the solver tests and the bench: the plain
 * recurrence of docs/alpa-semantics.md "Stage construction DP" exactly as Alpa runs it
 * (each distinct stage cost as t_max, ascending, stopping once
 * B * t_max >= best; f[s, i, d] with the max stage cost kept along the
 * argmin), a plain inference DP, a brute-force enumerator, and a generator
 * of random realistic instances. Deliberately unoptimised: these must be
 * obviously right, not fast.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

static double cost_of(const ApsolveProblem *p, int i, int j, int s, int c)
{
    double v = p->cost[apsolve_index(p, i, j, s, c)];
    if (!p->configs[s * p->num_configs + c].valid || isnan(v) || v < 0)
        return INFINITY;
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorted distinct finite stage costs; *n set. */
static double *distinct_costs(const ApsolveProblem *p, size_t *n)
{
    int L = p->num_layers;
    size_t cap = apsolve_problem_cells(p), k = 0;
    double *v = malloc((cap ? cap : 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int s = 0; s < p->num_submeshes; s++)
                for (int c = 0; c < p->num_configs; c++) {
                    double x = cost_of(p, i, j, s, c);
                    if (!isinf(x))
                        v[k++] = x;
                }
    qsort(v, k, sizeof *v, cmp_double);
    for (size_t a = 0; a < k; a++)
        if (*n == 0 || v[a] != v[*n - 1])
            v[(*n)++] = v[a];
    return v;
}

double oracle_training(const ApsolveProblem *p, int micro_batches, int max_stages,
                       long max_runs, long *t_max_runs)
{
    int L = p->num_layers, D = p->num_devices, S = p->num_submeshes, C = p->num_configs;
    int smax = max_stages > 0 && max_stages < L ? max_stages : L;
    size_t nc = 0, cells = (size_t)(smax + 1) * (size_t)(L + 1) * (size_t)(D + 1);
    double *cands = distinct_costs(p, &nc);
    double *f = malloc(cells * sizeof *f), *fmax = malloc(cells * sizeof *fmax);
    double best = INFINITY;
    long runs = 0;
#define F(a, b, c) f[((size_t)(a) * (size_t)(L + 1) + (size_t)(b)) * (size_t)(D + 1) + (size_t)(c)]
#define FM(a, b, c) fmax[((size_t)(a) * (size_t)(L + 1) + (size_t)(b)) * (size_t)(D + 1) + (size_t)(c)]
    if (!cands || !f || !fmax) {
        best = NAN;
        goto cleanup;
    }
    for (size_t t = 0; t < nc; t++) {
        double tmax = cands[t], fin = INFINITY, fin_max = 0;
        if ((double)micro_batches * tmax >= best)
            break;
        if (max_runs > 0 && runs >= max_runs) {
            best = NAN;
            break;
        }
        runs++;
        for (size_t k = 0; k < cells; k++) {
            f[k] = INFINITY;
            fmax[k] = 0;
        }
        F(0, L, 0) = 0;
        for (int s = 1; s <= smax; s++)
            for (int i = L - 1; i >= 0; i--)
                for (int d = 1; d <= D; d++)
                    for (int k = L; k > i; k--)
                        for (int m = 0; m < S; m++) {
                            int dev = p->submeshes[m].hosts * p->submeshes[m].gpus;
                            if (dev > d)
                                continue;
                            for (int c = 0; c < C; c++) {
                                double sc, v;
                                int mn = p->max_n_succ_stages[apsolve_index(p, i, k - 1, m, c)];
                                if (!((long)s - 1 <= (long)mn))
                                    continue;
                                sc = cost_of(p, i, k - 1, m, c);
                                v = F(s - 1, k, d - dev) + sc;
                                if (sc <= tmax && v < F(s, i, d)) {
                                    F(s, i, d) = v;
                                    FM(s, i, d) = FM(s - 1, k, d - dev) > sc
                                                      ? FM(s - 1, k, d - dev) : sc;
                                }
                            }
                        }
        for (int s = 1; s <= smax; s++)
            if (F(s, 0, D) < fin) {
                fin = F(s, 0, D);
                fin_max = FM(s, 0, D);
            }
        if (!isinf(fin)) {
            double tot = fin + (double)(micro_batches - 1) * fin_max;
            if (tot < best)
                best = tot;
        }
    }
cleanup:
#undef F
#undef FM
    if (t_max_runs)
        *t_max_runs = runs;
    free(cands);
    free(f);
    free(fmax);
    return best;
}

long oracle_training_runs(const ApsolveProblem *p, int micro_batches, double optimum)
{
    size_t nc = 0;
    long runs = 0;
    double *cands = distinct_costs(p, &nc);
    for (size_t t = 0; cands && t < nc; t++) {
        if ((double)micro_batches * cands[t] >= optimum)
            break;
        runs++;
    }
    free(cands);
    return runs;
}

double oracle_inference(const ApsolveProblem *p, int max_stages)
{
    int L = p->num_layers, D = p->num_devices, S = p->num_submeshes, C = p->num_configs;
    int smax = max_stages > 0 && max_stages < L ? max_stages : L;
    size_t cells = (size_t)(smax + 1) * (size_t)(L + 1) * (size_t)(D + 1);
    double *h = malloc(cells * sizeof *h), best = INFINITY;
#define H(a, b, c) h[((size_t)(a) * (size_t)(L + 1) + (size_t)(b)) * (size_t)(D + 1) + (size_t)(c)]
    if (!h)
        return NAN;
    for (size_t k = 0; k < cells; k++)
        h[k] = INFINITY;
    H(0, L, 0) = 0;
    for (int s = 1; s <= smax; s++)
        for (int i = L - 1; i >= 0; i--)
            for (int d = 1; d <= D; d++)
                for (int k = L; k > i; k--)
                    for (int m = 0; m < S; m++) {
                        int dev = p->submeshes[m].hosts * p->submeshes[m].gpus;
                        if (dev > d)
                            continue;
                        for (int c = 0; c < C; c++) {
                            double sc = cost_of(p, i, k - 1, m, c), prev = H(s - 1, k, d - dev);
                            double v = prev > sc ? prev : sc;
                            if (v < H(s, i, d))
                                H(s, i, d) = v;
                        }
                    }
    for (int s = 1; s <= smax; s++)
        if (!isinf(H(s, 0, D)) && (double)s * H(s, 0, D) < best)
            best = (double)s * H(s, 0, D);
#undef H
    free(h);
    return best;
}

typedef struct Brute {
    const ApsolveProblem *p;
    int B, max_stages, inference;
    int start[64], end[64], sub[64], cfg[64];
    double best;
} Brute;

static void brute_eval(Brute *b, int n)
{
    const ApsolveProblem *p = b->p;
    double sum = 0, mx = 0, obj;
    if (b->max_stages > 0 && n > b->max_stages)
        return;
    for (int k = n - 1; k >= 0; k--) {
        double c = cost_of(p, b->start[k], b->end[k], b->sub[k], b->cfg[k]);
        int mn = p->max_n_succ_stages[apsolve_index(p, b->start[k], b->end[k], b->sub[k],
                                                    b->cfg[k])];
        if (isinf(c))
            return;
        if (!b->inference && (long)(n - k) - 1 > (long)mn)
            return;
        sum += c;
        if (c > mx)
            mx = c;
    }
    obj = b->inference ? (double)n * mx : sum + (double)(b->B - 1) * mx;
    if (obj < b->best)
        b->best = obj;
}

static void brute_rec(Brute *b, int i, int left, int depth)
{
    const ApsolveProblem *p = b->p;
    if (i == p->num_layers) {
        if (left == 0)
            brute_eval(b, depth);
        return;
    }
    if (depth >= 64)
        return;
    for (int j = i; j < p->num_layers; j++)
        for (int s = 0; s < p->num_submeshes; s++) {
            int dev = p->submeshes[s].hosts * p->submeshes[s].gpus;
            if (dev > left)
                continue;
            for (int c = 0; c < p->num_configs; c++) {
                if (!p->configs[s * p->num_configs + c].valid)
                    continue;
                b->start[depth] = i;
                b->end[depth] = j;
                b->sub[depth] = s;
                b->cfg[depth] = c;
                brute_rec(b, j + 1, left - dev, depth + 1);
            }
        }
}

double brute_force(const ApsolveProblem *p, int micro_batches, int max_stages, int inference)
{
    Brute b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.B = micro_batches;
    b.max_stages = max_stages;
    b.inference = inference;
    b.best = INFINITY;
    brute_rec(&b, 0, p->num_devices, 0);
    return b.best;
}

uint64_t oracle_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double oracle_uniform(uint64_t *state)
{
    return (double)(oracle_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

int oracle_make_problem(const OracleGen *g, uint64_t *rng, ApsolveProblem **out)
{
    ApsolveSubmesh subs[32];
    int nsub = apsolve_default_submeshes(g->hosts, g->gpus, subs, 32);
    int C = 0, L = g->layers, D = g->hosts * g->gpus, rc;
    int ncfg[32];
    double w[APSOLVE_MAX_LAYERS];
    ApsolveProblem *p = NULL;

    if (nsub > 32 || L > APSOLVE_MAX_LAYERS)
        return APSOLVE_EINVAL;
    for (int s = 0; s < nsub; s++) {
        int d = subs[s].hosts * subs[s].gpus, n = 0;
        for (int mp = 1; mp <= g->gpus; mp++)
            if (d % mp == 0)
                n++;
        ncfg[s] = n + 1;
        if (ncfg[s] > C)
            C = ncfg[s];
    }
    rc = apsolve_problem_new(L, g->hosts, g->gpus, nsub, C, 0, &p);
    if (rc)
        return rc;
    for (int s = 0; s < nsub; s++) {
        int d = subs[s].hosts * subs[s].gpus, c = 0;
        p->submeshes[s] = subs[s];
        for (int mp = 1; mp <= g->gpus; mp++) {
            if (d % mp)
                continue;
            p->configs[s * C + c] = (ApsolveConfig){1, d / mp, mp, 0};
            c++;
        }
        p->configs[s * C + c] = (ApsolveConfig){1, d, 1, -1};
    }
    for (int l = 0; l < L; l++)
        w[l] = 0.5 + oracle_uniform(rng);
    for (int i = 0; i < L; i++) {
        double work = 0;
        for (int j = i; j < L; j++) {
            work += w[j];
            for (int s = 0; s < nsub; s++) {
                int d = subs[s].hosts * subs[s].gpus;
                /* Alpa profiles the whole-cluster submesh for (0, L-1) only. */
                int whole = d == D && !(i == 0 && j == L - 1);
                for (int c = 0; c < ncfg[s]; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    double v;
                    if (whole || oracle_uniform(rng) < g->inf_prob)
                        continue;
                    if (g->integer_costs)
                        v = (double)(1 + oracle_rand(rng) % 6);
                    else
                        v = work / (g->device_exponent > 0 ? pow(d, g->device_exponent) : d)
                            * (1.0 + 0.05 * c) * (1.0 + g->noise * oracle_uniform(rng))
                            + 0.01 * (d > 1);
                    p->cost[idx] = v;
                    if (oracle_uniform(rng) < g->mem_prob) {
                        int lim = (int)(oracle_rand(rng) % (uint64_t)(g->max_limit + 2)) - 1;
                        p->max_n_succ_stages[idx] = lim;
                    }
                }
            }
        }
    }
    *out = p;
    return APSOLVE_OK;
}

int oracle_add_passes(ApsolveProblem *p, uint64_t *rng)
{
    size_t n = apsolve_problem_cells(p);
    if (apsolve_times_table_add(p) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        ApsolveTimes t;
        t.fwd = p->cost[k] / 3;
        t.bwd = p->cost[k] - t.fwd;
        t.wgrad = t.bwd * (0.2 + 0.6 * oracle_uniform(rng));
        if (apsolve_times_put(p, k, &t) != APSOLVE_OK)
            return APSOLVE_ENOMEM;
    }
    return APSOLVE_OK;
}

int oracle_add_memory(ApsolveProblem *p, uint64_t *rng)
{
    size_t n = apsolve_problem_cells(p);
    if (apsolve_memory_table_add(p) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        ApsolveMemory m;
        m.avail = oracle_rand(rng) % 10 == 0 ? 0 : 1000;
        m.peak = (int64_t)(oracle_rand(rng) % 700);
        m.initial = (int64_t)(oracle_rand(rng) % 200);
        m.intermediate = (int64_t)(oracle_rand(rng) % 120) - (oracle_rand(rng) % 8 == 0 ? 150 : 0);
        if (apsolve_memory_put(p, k, &m) != APSOLVE_OK)
            return APSOLVE_ENOMEM;
    }
    return APSOLVE_OK;
}

/* The same out-of-memory figures in each of n cells (both without a table,
 * or both with one). */
static int same_unfit(const ApsolveProblem *p, const ApsolveProblem *q, size_t n)
{
    if (!p->unfit_table != !q->unfit_table)
        return 0;
    for (size_t k = 0; p->unfit_table && k < n; k++) {
        const ApsolveUnfit *a = apsolve_unfit_at(p, k), *b = apsolve_unfit_at(q, k);
        if (!a != !b || (a && memcmp(a, b, sizeof *a)))
            return 0;
    }
    return 1;
}

/* The same times read in each of n cells (both without a table, or both
 * with one), wherever the tables hold them. */
static int same_times(const ApsolveProblem *p, const ApsolveProblem *q, size_t n)
{
    if (!p->times != !q->times)
        return 0;
    for (size_t k = 0; p->times && k < n; k++)
        if (memcmp(apsolve_times_at(p, k), apsolve_times_at(q, k), sizeof(ApsolveTimes)))
            return 0;
    return 1;
}

/* The same memory figures read in each of n cells (both without a table,
 * or both with one), wherever the tables hold them. */
static int same_memory(const ApsolveProblem *p, const ApsolveProblem *q, size_t n)
{
    if (!p->memory != !q->memory)
        return 0;
    for (size_t k = 0; p->memory && k < n; k++)
        if (memcmp(apsolve_memory_at(p, k), apsolve_memory_at(q, k), sizeof(ApsolveMemory)))
            return 0;
    return 1;
}

int oracle_same_problem(const ApsolveProblem *p, const ApsolveProblem *q)
{
    size_t n = apsolve_problem_cells(p);
#define SAME(f) ((!p->f && !q->f) || (p->f && q->f && !memcmp(p->f, q->f, n * sizeof *p->f)))
    return p->num_layers == q->num_layers && p->num_submeshes == q->num_submeshes &&
           p->num_configs == q->num_configs && SAME(cost) && SAME(max_n_succ_stages) &&
           SAME(apply_cost) && same_times(p, q, n) && same_memory(p, q, n) && same_unfit(p, q, n);
#undef SAME
}

double oracle_full_floor(const ApsolvePlan *pl)
{
    for (size_t k = 0; k < pl->n_stages; k++)
        if (!(pl->stages[k].apply_cost >= 0) || !isfinite(pl->stages[k].apply_cost))
            return pl->cost;
    return pl->total_cost;
}

int oracle_chunk_problem(uint64_t *rng, int t, int min_layers, double inf_spread, int passes,
                         int memory, ApsolveProblem **out)
{
    static const int shapes[][2] = {{1, 4}, {2, 4}, {1, 8}, {2, 2}};
    OracleGen g;
    ApsolveProblem *p = NULL;
    int rc;
    memset(&g, 0, sizeof g);
    g.layers = min_layers + (int)(oracle_rand(rng) % 9);
    g.hosts = shapes[t % 4][0];
    g.gpus = shapes[t % 4][1];
    g.inf_prob = 0.05 + inf_spread * oracle_uniform(rng);
    g.mem_prob = 0.5;
    g.max_limit = 6;
    g.integer_costs = t % 3 == 1;
    g.noise = 0.3;
    g.device_exponent = t % 2 ? 0.7 : 1.0;
    *out = NULL;
    rc = oracle_make_problem(&g, rng, &p);
    if (rc == APSOLVE_OK && passes)
        rc = oracle_add_passes(p, rng);
    if (rc == APSOLVE_OK && (memory == 1 || (memory == 2 && t % 2)))
        rc = oracle_add_memory(p, rng);
    if (rc != APSOLVE_OK) {
        apsolve_problem_free(&p);
        return rc;
    }
    *out = p;
    return APSOLVE_OK;
}
