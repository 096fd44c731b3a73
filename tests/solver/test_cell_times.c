/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-cell times table (ApsolveTimesTable, solver/cell_times.c)
 * against dense arrays of one fwd, bwd and wgrad per cell, the tables it
 * replaced (docs/performance.md, "apsolve's per-cell fwd/bwd/wgrad behind
 * a slot (issue 38, apsfwd)"): on random problems, every cell reads what
 * the dense arrays hold after random puts (the never-put value among them,
 * repeats, writes in place, drops), through a clone, a subset's copy, the
 * composition's additions (apsolve_entry_add) and the out-of-memory
 * restores (apsolve_unfit_open and its settle, in place and put back).
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

static const ApsolveTimes NEVER = {INFINITY, INFINITY, -1.0};

/* Whether every one of p's n cells reads dense's times, bit for bit. */
static int reads_dense(const ApsolveProblem *p, const ApsolveTimes *dense, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (memcmp(apsolve_times_at(p, k), &dense[k], sizeof dense[k]))
            return 0;
    return 1;
}

/* Random times: a third what a cell never put reads, the rest from a few
 * values (many repeats; -0 and an unknown wgrad among them). */
static ApsolveTimes random_times(uint64_t *rng)
{
    ApsolveTimes t = NEVER;
    if (oracle_rand(rng) % 3 == 0)
        return t;
    t.fwd = (double)(oracle_rand(rng) % 4) * 0.25;
    t.bwd = oracle_rand(rng) % 5 ? 2 * t.fwd : -0.0;
    t.wgrad = oracle_rand(rng) % 3 ? t.fwd : -1.0;
    return t;
}

/* A random problem with times and memory tables and its dense twin (the
 * caller frees both). */
static ApsolveProblem *random_problem(uint64_t *rng, int layers, ApsolveTimes **dense)
{
    OracleGen g = {0};
    ApsolveProblem *p = NULL;
    size_t n;
    g.layers = layers;
    g.hosts = 2;
    g.gpus = 4;
    g.inf_prob = 0.3;
    g.noise = 0.3;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_times_table_add(p) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_memory_table_add(p) == APSOLVE_OK);
    n = apsolve_problem_cells(p);
    *dense = malloc(n * sizeof **dense);
    CU_ASSERT_FATAL(*dense != NULL);
    for (size_t k = 0; k < n; k++)
        (*dense)[k] = NEVER;
    /* a cell's times written up to three times, or never */
    for (int round = 0; round < 3; round++)
        for (size_t k = 0; k < n; k++) {
            ApsolveTimes t;
            if (oracle_rand(rng) % 2)
                continue;
            t = random_times(rng);
            if (oracle_rand(rng) % 5 == 0) {
                apsolve_times_drop(p, k); /* fwd and bwd +inf, wgrad kept */
                (*dense)[k].fwd = (*dense)[k].bwd = INFINITY;
                continue;
            }
            if (oracle_rand(rng) % 4 == 0) {
                ApsolveTimes *w = apsolve_times_own(p, k); /* written in place */
                CU_ASSERT_FATAL(w != NULL);
                *w = t;
            } else {
                CU_ASSERT_FATAL(apsolve_times_put(p, k, &t) == APSOLVE_OK);
            }
            (*dense)[k] = t;
        }
    return p;
}

static void test_puts_read_back(void)
{
    uint64_t rng = 0x7135ull;
    for (int t = 0; t < 20; t++) {
        ApsolveTimes *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 3 + t % 6, &dense);
        size_t n = apsolve_problem_cells(p), never = 0;
        CU_ASSERT(reads_dense(p, dense, n));
        /* times only for the cells that have them */
        for (size_t k = 0; k < n; k++)
            never += !memcmp(&dense[k], &NEVER, sizeof NEVER);
        CU_ASSERT(never > 0);
        CU_ASSERT(p->times->n < n);
        /* room for every cell from the start: no put grows (copies) the
         * figures */
        CU_ASSERT(p->times->cap == n + 1);
        CU_ASSERT(apsolve_problem_bytes(p) ==
                  n * (2 * sizeof(double) + sizeof(int) + 2 * sizeof(uint32_t)) +
                      p->times->n * sizeof(ApsolveTimes) +
                      p->memory->n * sizeof(ApsolveMemory));
        free(dense);
        apsolve_problem_free(&p);
    }
}

static void test_clone_and_subset(void)
{
    uint64_t rng = 0xC7135ull;
    for (int t = 0; t < 10; t++) {
        ApsolveTimes *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 3 + t % 5, &dense), *q = NULL, *r = NULL;
        size_t n = apsolve_problem_cells(p);
        int S = p->num_submeshes, C = p->num_configs, L = p->num_layers, checked = 0;
        ApsolveTimes *dq = malloc(n * sizeof *dq);
        unsigned char *keep = calloc((size_t)S * C, 1);
        ApsolveSubset v;
        CU_ASSERT_FATAL(dq != NULL && keep != NULL);
        CU_ASSERT_FATAL(apsolve_problem_clone(p, &q) == APSOLVE_OK);
        CU_ASSERT(reads_dense(q, dense, n));
        memcpy(dq, dense, n * sizeof *dq);
        /* the clone written, its source unchanged, and the other way */
        for (size_t k = 0; k < n; k++)
            if (oracle_rand(&rng) % 3 == 0) {
                ApsolveTimes x = random_times(&rng);
                CU_ASSERT_FATAL(apsolve_times_put(q, k, &x) == APSOLVE_OK);
                dq[k] = x;
            } else if (oracle_rand(&rng) % 3 == 0) {
                ApsolveTimes x = random_times(&rng);
                CU_ASSERT_FATAL(apsolve_times_put(p, k, &x) == APSOLVE_OK);
                dense[k] = x;
            }
        CU_ASSERT(reads_dense(p, dense, n));
        CU_ASSERT(reads_dense(q, dq, n));
        /* a subset's copy reads each kept cell's times */
        for (int k = 0; k < S * C; k++)
            keep[k] = oracle_rand(&rng) % 2;
        keep[0] = 1;
        p->configs[0].valid = 1;
        CU_ASSERT_FATAL(apsolve_subset_new(p, keep, 1, &v) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_subset_problem(p, &v, &r) == APSOLVE_OK);
        CU_ASSERT_FATAL(r->times != NULL);
        for (int s = 0; s < S; s++)
            for (int c = 0; c < C; c++) {
                int at = v.at[s * C + c];
                if (at < 0)
                    continue;
                for (int i = 0; i < L; i++)
                    for (int j = i; j < L; j++) {
                        size_t a = apsolve_index(p, i, j, s, c);
                        size_t b = apsolve_index(r, i, j, at / v.num_configs,
                                                 at % v.num_configs);
                        CU_ASSERT(!memcmp(apsolve_times_at(r, b), &dense[a], sizeof *dense));
                        checked++;
                    }
            }
        CU_ASSERT(checked > 0);
        /* the compositions' additions: fwd and bwd grow, wgrad kept */
        for (size_t k = 0; k < n; k++)
            if (isfinite(q->cost[k]) && oracle_rand(&rng) % 2) {
                apsolve_entry_add(q, k, &(ApsolveEntryDelta){0.125, 0.5, 0, 0, 0});
                dq[k].fwd += 0.125;
                dq[k].bwd += 0.5;
            }
        CU_ASSERT(reads_dense(q, dq, n));
        apsolve_subset_free(&v);
        free(keep);
        free(dq);
        free(dense);
        apsolve_problem_free(&r);
        apsolve_problem_free(&q);
        apsolve_problem_free(&p);
    }
}

/* Out-of-memory figures for some +inf cells of p: restored, a cell reads
 * their times (wgrad unknown); settled, +inf; put back in place, what it
 * read before. */
static void test_restores_and_put_back(void)
{
    uint64_t rng = 0x2E57135ull;
    for (int t = 0; t < 10; t++) {
        ApsolveTimes *dense = NULL;
        ApsolveProblem *p = random_problem(&rng, 4 + t % 4, &dense), *q = NULL;
        size_t n = apsolve_problem_cells(p), restored = 0;
        ApsolveTimes *after = malloc(n * sizeof *after), *settled = malloc(n * sizeof *settled);
        ApsolveUnfitUndo u;
        CU_ASSERT_FATAL(after != NULL && settled != NULL);
        memcpy(after, dense, n * sizeof *after);
        memcpy(settled, dense, n * sizeof *settled);
        for (size_t k = 0; k < n; k++) {
            ApsolveUnfit x = {0.5, 1.0, 0.1, {5000, 10, 0, 1000}};
            if (isfinite(p->cost[k]) || oracle_rand(&rng) % 2)
                continue;
            x.fwd = (double)(oracle_rand(&rng) % 3) * 0.5;
            CU_ASSERT_FATAL(apsolve_unfit_put(p, k, &x) == APSOLVE_OK);
            after[k] = (ApsolveTimes){x.fwd, x.bwd, -1.0};
            settled[k] = NEVER;
            restored++;
        }
        CU_ASSERT(restored > 0);
        /* the clone's restores */
        CU_ASSERT_FATAL(apsolve_unfit_open(p, &q) == APSOLVE_OK);
        CU_ASSERT_FATAL(q != NULL);
        CU_ASSERT(reads_dense(q, after, n));
        CU_ASSERT(reads_dense(p, dense, n));
        apsolve_unfit_settle(q);
        CU_ASSERT(reads_dense(q, settled, n));
        apsolve_problem_free(&q);
        /* in place, then put back; again, over the cells' own times */
        for (int again = 0; again < 2; again++) {
            CU_ASSERT_FATAL(apsolve_unfit_open_in_place(p, &u) == APSOLVE_OK);
            CU_ASSERT(u.n == restored);
            CU_ASSERT(reads_dense(p, after, n));
            apsolve_unfit_close_in_place(p, &u);
            CU_ASSERT(reads_dense(p, dense, n));
        }
        free(settled);
        free(after);
        free(dense);
        apsolve_problem_free(&p);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"puts read back as the dense tables", test_puts_read_back},
        {"a clone holds its own times; a subset copies each cell's", test_clone_and_subset},
        {"restores, their settle and their undo", test_restores_and_put_back},
    };
    return CUNIT_RUN("per-cell times table", tests);
}
