/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Independent reference implementations of the stage/mesh optimum, shared
 * by the solver tests and bench/bench_dp.c: the plain, unoptimised DP of
 * docs/alpa-semantics.md (Alpa's training_dp: every distinct stage cost as t_max,
 * f[s, i, d] per t_max), a plain inference DP, a brute-force enumerator of
 * every split and assignment, and a random instance generator.
 */
#ifndef APSOLVE_TEST_ORACLE_H
#define APSOLVE_TEST_ORACLE_H

#include <stdint.h>

#include "apsolve.h"

/* The plain DP. Returns the optimum (+inf when infeasible); *t_max_runs (if
 * not NULL) gets the number of t_max values it ran. Stops early (returning
 * NaN) once more than max_runs t_max values would be needed (0: no limit). */
double oracle_training(const ApsolveProblem *p, int micro_batches, int max_stages,
                       long max_runs, long *t_max_runs);
/* Number of t_max values the plain DP would run for this problem, given the
 * optimum T (those with B * t < T, after deduplication). */
long oracle_training_runs(const ApsolveProblem *p, int micro_batches, double optimum);
/* Inference: min over stage counts n of n * (min max stage cost). */
double oracle_inference(const ApsolveProblem *p, int max_stages);
/* Brute force over every split and assignment (small L and D only). */
double brute_force(const ApsolveProblem *p, int micro_batches, int max_stages, int inference);

/* xorshift64* generator. */
uint64_t oracle_rand(uint64_t *state);
double oracle_uniform(uint64_t *state);

typedef struct OracleGen {
    int layers, hosts, gpus;
    double inf_prob;                  /* chance an entry is +inf */
    double mem_prob;                  /* chance an entry has a finite limit */
    int max_limit;                    /* finite limits drawn from -1..max_limit */
    int integer_costs;                /* small integer costs (many exact ties) */
    double noise;                     /* relative noise on realistic costs */
    double device_exponent;           /* cost ~ work / devices^e (0: e = 1) */
} OracleGen;

/* A random "realistic" problem: Alpa's submeshes and configs for the
 * cluster, cost ~ layers / devices * (1 + noise), some +inf entries, the
 * whole-cluster submesh only for (0, L-1). Caller frees. */
int oracle_make_problem(const OracleGen *g, uint64_t *rng, ApsolveProblem **out);

/* Forward, backward and weight-gradient seconds of every entry of p (the
 * zero-bubble schedules price them): a third of the cost forward, the
 * weight gradient a random 0.2 .. 0.8 of the backward. APSOLVE_ENOMEM. */
int oracle_add_passes(ApsolveProblem *p, uint64_t *rng);
/* Random memory figures for every entry of p (peak, initial, intermediate
 * around a capacity of 1000; some intermediates negative, a tenth of the
 * capacities unknown). APSOLVE_ENOMEM. */
int oracle_add_memory(ApsolveProblem *p, uint64_t *rng);

/* The chunked searches' random problems (test_chunk_*.c,
 * test_zbv_memory_floor.c): cluster t % 4 of 1x4, 2x4, 1x8, 2x2;
 * min_layers + 0..8 layers; +inf entries with chance 0.05 + inf_spread
 * times a uniform draw; half the entries limited up to 6; integer costs
 * when t % 3 == 1; device exponent 0.7 at odd t, else 1. passes: the
 * entries' fwd/bwd/wgrad (oracle_add_passes); memory: 1 always, 2 at odd
 * t only, 0 never (oracle_add_memory). APSOLVE_OK or an error (nothing
 * made). Caller frees. */
int oracle_chunk_problem(uint64_t *rng, int t, int min_layers, double inf_spread, int passes,
                         int memory, ApsolveProblem **out);

/* The least full estimate (solver/full_estimate.c) a plan of the full
 * objective can have where no stage straddles (apsolve_sweep_straddle_free):
 * its total_cost when every stage's apply_cost is known (>= 0, finite: the
 * estimate's apply step is then the largest of them), else T (the apply
 * step read from the placements, at least 0). */
double oracle_full_floor(const ApsolvePlan *pl);

/* 1 when p and q have the same shape and hold the same bits in every table
 * (a table absent from both counts as the same). */
int oracle_same_problem(const ApsolveProblem *p, const ApsolveProblem *q);

#endif
