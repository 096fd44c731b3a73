/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sparse memory table (ApsolveMemoryTable, solver/memory_table.c)
 * against a dense array of one figure per cell, the table it replaced
 * (docs/performance.md, "apsolve's memory table sparse (issue 38)"): on
 * random problems, every cell reads what the dense array holds after
 * random puts (zero figures, repeats, writes in place), through a clone, a
 * subset's copy, the out-of-memory restores (apsolve_unfit_restore, in
 * place and put back) and the least-memory explanation's rebuilt table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "cunit_run.h"
#include "oracle.h"
#include "problem_subset.h"
#include "session_int.h"
#include "solver_int.h"
#include "unfit_in_place.h"

/* Whether every one of p's n cells reads dense's figures. */
static int reads_dense(const ApsolveProblem *p, const ApsolveMemory *dense, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (memcmp(apsolve_memory_at(p, k), &dense[k], sizeof dense[k]))
            return 0;
    return 1;
}

/* Random figures: a third all zero (what a cell without figures reads),
 * the rest from a few values (many repeats). */
static ApsolveMemory random_figures(uint64_t *rng)
{
    ApsolveMemory m = {0, 0, 0, 0};
    if (oracle_rand(rng) % 3 == 0)
        return m;
    m.peak = (int64_t)(oracle_rand(rng) % 4) * 100;
    m.intermediate = (int64_t)(oracle_rand(rng) % 3) * 50;
    m.initial = (int64_t)(oracle_rand(rng) % 2) * 10;
    m.avail = oracle_rand(rng) % 4 ? 1000 : 0;
    return m;
}

/* A random problem with a memory table and its dense twin (caller frees
 * both). */
static ApsolveProblem *random_problem(uint64_t *rng, int layers, ApsolveMemory **dense)
{
    OracleGen g = {0};
    ApsolveProblem *p = NULL;
    size_t n;
    g.layers = layers;
    g.hosts = 2;
    g.gpus = 4;
    g.inf_prob = 0.2;
    g.noise = 0.3;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    CU_ASSERT_FATAL(oracle_add_passes(p, rng) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_memory_table_add(p) == APSOLVE_OK);
    n = apsolve_problem_cells(p);
    *dense = calloc(n, sizeof **dense);
    CU_ASSERT_FATAL(*dense != NULL);
    /* a cell's figures written up to three times, or never */
    for (int round = 0; round < 3; round++)
        for (size_t k = 0; k < n; k++) {
            ApsolveMemory m;
            if (oracle_rand(rng) % 2)
                continue;
            m = random_figures(rng);
            if (oracle_rand(rng) % 4 == 0) {
                ApsolveMemory *w = apsolve_memory_own(p, k); /* written in place */
                CU_ASSERT_FATAL(w != NULL);
                *w = m;
            } else {
                CU_ASSERT_FATAL(apsolve_memory_put(p, k, &m) == APSOLVE_OK);
            }
            (*dense)[k] = m;
            p->max_n_succ_stages[k] = apsolve_memory_mnss(&m);
        }
    return p;
}

static void test_puts_read_back(void)
{
    uint64_t rng = 0x5EA55Eull;
    for (int t = 0; t < 20; t++) {
        ApsolveMemory *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 3 + t % 6, &dense);
        size_t n = apsolve_problem_cells(p), zero = 0;
        CU_ASSERT(reads_dense(p, dense, n));
        /* figures only for the cells that have them: fewer than the cells
         * (a third of the writes are zero, half the cells never written) */
        for (size_t k = 0; k < n; k++)
            zero += !dense[k].peak && !dense[k].intermediate && !dense[k].initial &&
                    !dense[k].avail;
        CU_ASSERT(zero > 0);
        CU_ASSERT(p->memory->n <= n + 1);
        CU_ASSERT(p->memory->n < n);
        CU_ASSERT(apsolve_problem_bytes(p) ==
                  n * (2 * sizeof(double) + sizeof(int) + 2 * sizeof(uint32_t)) +
                      p->times->n * sizeof(ApsolveTimes) +
                      p->memory->n * sizeof(ApsolveMemory));
        free(dense);
        apsolve_problem_free(&p);
    }
}

static void test_clone_is_its_own(void)
{
    uint64_t rng = 0xC10E5ull;
    for (int t = 0; t < 10; t++) {
        ApsolveMemory *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 4 + t % 4, &dense), *q = NULL;
        size_t n = apsolve_problem_cells(p);
        ApsolveMemory *dq = malloc(n * sizeof *dq);
        CU_ASSERT_FATAL(dq != NULL);
        CU_ASSERT_FATAL(apsolve_problem_clone(p, &q) == APSOLVE_OK);
        CU_ASSERT(reads_dense(q, dense, n));
        memcpy(dq, dense, n * sizeof *dq);
        /* the clone written, its source unchanged, and the other way */
        for (size_t k = 0; k < n; k++)
            if (oracle_rand(&rng) % 3 == 0) {
                ApsolveMemory m = random_figures(&rng);
                CU_ASSERT_FATAL(apsolve_memory_put(q, k, &m) == APSOLVE_OK);
                dq[k] = m;
            } else if (oracle_rand(&rng) % 3 == 0) {
                ApsolveMemory m = random_figures(&rng);
                CU_ASSERT_FATAL(apsolve_memory_put(p, k, &m) == APSOLVE_OK);
                dense[k] = m;
            }
        CU_ASSERT(reads_dense(p, dense, n));
        CU_ASSERT(reads_dense(q, dq, n));
        free(dq);
        free(dense);
        apsolve_problem_free(&q);
        apsolve_problem_free(&p);
    }
}

static void test_subset_copies_cells(void)
{
    uint64_t rng = 0x5B5E7ull;
    for (int t = 0; t < 10; t++) {
        ApsolveMemory *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 3 + t % 5, &dense), *q = NULL;
        int S = p->num_submeshes, C = p->num_configs, L = p->num_layers, checked = 0;
        unsigned char *keep = calloc((size_t)S * C, 1);
        ApsolveSubset v;
        CU_ASSERT_FATAL(keep != NULL);
        for (int k = 0; k < S * C; k++)
            keep[k] = oracle_rand(&rng) % 2;
        keep[0] = 1;
        if (!p->configs[0].valid)
            p->configs[0].valid = 1;
        CU_ASSERT_FATAL(apsolve_subset_new(p, keep, 1, &v) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_subset_problem(p, &v, &q) == APSOLVE_OK);
        for (int s = 0; s < S; s++)
            for (int c = 0; c < C; c++) {
                int at = v.at[s * C + c];
                if (at < 0)
                    continue;
                for (int i = 0; i < L; i++)
                    for (int j = i; j < L; j++) {
                        size_t a = apsolve_index(p, i, j, s, c);
                        size_t b = apsolve_index(q, i, j, at / v.num_configs,
                                                 at % v.num_configs);
                        CU_ASSERT(!memcmp(apsolve_memory_at(q, b), &dense[a], sizeof *dense));
                        checked++;
                    }
            }
        CU_ASSERT(checked > 0);
        apsolve_subset_free(&v);
        free(keep);
        free(dense);
        apsolve_problem_free(&q);
        apsolve_problem_free(&p);
    }
}

/* Out-of-memory figures for some +inf cells of p: restored, a cell reads
 * them; put back (in place) or settled, what it read before. */
static void test_restores_and_put_back(void)
{
    uint64_t rng = 0x2E5702Eull;
    for (int t = 0; t < 10; t++) {
        ApsolveMemory *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 4 + t % 4, &dense), *q = NULL;
        size_t n = apsolve_problem_cells(p), restored = 0;
        ApsolveMemory *after = malloc(n * sizeof *after);
        ApsolveUnfitUndo u;
        CU_ASSERT_FATAL(after != NULL);
        memcpy(after, dense, n * sizeof *after);
        for (size_t k = 0; k < n; k++) {
            ApsolveUnfit x = {0.5, 1.0, 0.1, {0, 0, 0, 0}};
            if (isfinite(p->cost[k]) || oracle_rand(&rng) % 2)
                continue;
            x.memory = random_figures(&rng);
            x.memory.peak += 5000; /* what made it out of memory */
            CU_ASSERT_FATAL(apsolve_unfit_put(p, k, &x) == APSOLVE_OK);
            after[k] = x.memory;
            restored++;
        }
        CU_ASSERT(restored > 0);
        /* the clone's restores */
        CU_ASSERT_FATAL(apsolve_unfit_open(p, &q) == APSOLVE_OK);
        CU_ASSERT_FATAL(q != NULL);
        CU_ASSERT(reads_dense(q, after, n));
        CU_ASSERT(reads_dense(p, dense, n));
        apsolve_unfit_settle(q); /* back to +inf; the figures stay, as before */
        CU_ASSERT(reads_dense(q, after, n));
        apsolve_problem_free(&q);
        /* in place, then put back */
        CU_ASSERT_FATAL(apsolve_unfit_open_in_place(p, &u) == APSOLVE_OK);
        CU_ASSERT(u.n == restored);
        CU_ASSERT(reads_dense(p, after, n));
        apsolve_unfit_close_in_place(p, &u);
        CU_ASSERT(reads_dense(p, dense, n));
        /* again: the cells' own figures now, written over */
        CU_ASSERT_FATAL(apsolve_unfit_open_in_place(p, &u) == APSOLVE_OK);
        CU_ASSERT(reads_dense(p, after, n));
        apsolve_unfit_close_in_place(p, &u);
        CU_ASSERT(reads_dense(p, dense, n));
        free(after);
        free(dense);
        apsolve_problem_free(&p);
    }
}

/* The explanation's rebuilt table (every cell's avail the budget, the
 * cells without figures too): the same words as a problem whose every
 * cell holds its own figures, as the dense table held them. */
static void test_explain_as_dense(void)
{
    uint64_t rng = 0xE8A1Aull;
    int explained = 0;
    for (int t = 0; t < 30; t++) {
        ApsolveMemory *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 3 + t % 4, &dense), *q = NULL;
        size_t n = apsolve_problem_cells(p);
        ApsolveOptions o;
        ApsolvePlan *pl = NULL;
        char a[512], b[512];
        /* tight memory in every cell with a cost (the others keep theirs,
         * zero figures among them) */
        for (size_t k = 0; k < n; k++)
            if (isfinite(p->cost[k])) {
                dense[k].avail = 150;
                dense[k].peak += 140;
                dense[k].intermediate += 20;
                CU_ASSERT_FATAL(apsolve_memory_put(p, k, &dense[k]) == APSOLVE_OK);
                p->max_n_succ_stages[k] = apsolve_memory_mnss(&dense[k]);
            }
        CU_ASSERT_FATAL(apsolve_problem_clone(p, &q) == APSOLVE_OK);
        for (size_t k = 0; k < n; k++) /* every cell its own slot */
            CU_ASSERT_FATAL(apsolve_memory_own(q, k) != NULL);
        CU_ASSERT(q->memory->n == n + 1);
        CU_ASSERT(reads_dense(q, dense, n));
        memset(&o, 0, sizeof o);
        o.micro_batches = 4;
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        if (apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE) {
            apsolve_explain(p, &o, a, sizeof a);
            apsolve_explain(q, &o, b, sizeof b);
            CU_ASSERT_STRING_EQUAL(a, b);
            explained++;
        }
        apsolve_plan_free(&pl);
        free(dense);
        apsolve_problem_free(&q);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(explained > 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"puts read back as the dense table", test_puts_read_back},
        {"a clone holds its own figures", test_clone_is_its_own},
        {"a subset copies each cell's figures", test_subset_copies_cells},
        {"restores and their undo", test_restores_and_put_back},
        {"the least-memory explanation as on a dense table", test_explain_as_dense},
    };
    return CUNIT_RUN("sparse memory table", tests);
}
