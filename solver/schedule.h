/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pipeline schedules in closed form: the iteration time of a pipeline of n
 * stages over B micro-batches (Alpa's T for 1F1B and GPipe, the interleaved
 * 1F1B schedule of Megatron-LM with v model chunks per device), how many
 * micro-batches' worth of activations a stage keeps alive at its peak, how
 * often a micro-batch crosses each stage boundary, and which (B, n, v) a
 * schedule accepts. Pure functions; reports/schedule.c simulates the same
 * schedules pass by pass and its tests check the two agree. The zero-bubble
 * schedule ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024)
 * splits each backward into B (the input gradient) and W (the weight
 * gradient) and defers W into 1F1B's cool-down bubble: its time needs each
 * stage's forward, backward and W seconds (apsolve_schedule_time_zb).
 */
#ifndef APSOLVE_SCHEDULE_H
#define APSOLVE_SCHEDULE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    APSOLVE_SCHEDULE_1F1B = 0,        /* one forward one backward (PipeDream-Flush) */
    APSOLVE_SCHEDULE_GPIPE,           /* all forwards, then all backwards */
    APSOLVE_SCHEDULE_INTERLEAVED,     /* 1F1B over v model chunks per device (Megatron-LM) */
    APSOLVE_SCHEDULE_ZB_H1,           /* 1F1B with the weight-gradient pass deferred (ZB-H1) */
    APSOLVE_SCHEDULE_COUNT
} ApsolveSchedule;

/* "1f1b" | "gpipe" | "interleaved" | "zb-h1"; NULL for an out-of-range value. */
const char *apsolve_schedule_name(ApsolveSchedule s);
/* The schedule named name (the names above), or -1. */
int apsolve_schedule_parse(const char *name);

/* Iteration time of the pipeline whose stage k takes stage_cost[k] seconds
 * (forward + backward) per micro-batch, over B micro-batches. 1F1B and GPipe:
 * sum c + (B - 1) max c (Alpa's T). Interleaved with vpp model chunks per
 * device (each 1/vpp of its stage): sum c / vpp + (B - 1/vpp) max c, which is
 * T for vpp = 1 and (B + (n - 1)/vpp) t for equal costs t. vpp < 1 counts as
 * 1. NaN for n == 0, B < 1, a NULL stage_cost or ZB-H1 (whose time needs
 * the backward's split: apsolve_schedule_time_zb). */
double apsolve_schedule_time(ApsolveSchedule s, int vpp, int B, const double *stage_cost,
                             size_t n);

/* Iteration time of ZB-H1 over B >= n micro-batches on n stages whose stage
 * k takes fwd[k] forward and bwd[k] backward seconds per micro-batch, of
 * which wgrad[k] (0 <= wgrad[k] <= bwd[k]) compute the weight gradients
 * (the W pass; bwd[k] - wgrad[k] is the B pass): Alpa's T of the stage
 * costs fwd + bwd, less (n - 1) min over k of (W_k + min(W_k, F_k)). On
 * equal stages this is B (F + B + W) + (n - 1)(F + B - min(W, F)), the
 * paper's (n - 1)(T_F + T_B - T_W) bubble when W <= F, and the exact
 * makespan of the order apreport simulates (docs/solver.md, "Schedules").
 * NaN for n == 0, B < n, a NULL array or a W outside 0..bwd. */
double apsolve_schedule_time_zb(int B, const double *fwd, const double *bwd,
                                const double *wgrad, size_t n);
/* What ZB-H1 takes out of each of the n - 1 bubble slots of 1F1B at a stage
 * of forward fwd and weight-gradient wgrad seconds: wgrad + min(wgrad, fwd);
 * the schedule's saving is (n - 1) x its minimum over the stages. NaN for a
 * wgrad that is not a number >= 0 (unknown). */
double apsolve_schedule_zb_fill(double fwd, double wgrad);

/* Micro-batches' worth of the intermediate activations of stage k (0-based
 * of n) alive at its peak: 1F1B min(B, n - k); GPipe B; interleaved
 * min(B vpp, 2 (n - k - 1) + (vpp - 1) n + 1) / vpp (Megatron-LM's warm-up
 * count of model chunks plus the one in steady state, each chunk holding
 * 1/vpp of the stage's activations); ZB-H1 min(B, n) on every stage (the
 * paper's schedule holds as many micro-batches on each stage as 1F1B on the
 * first: a stage defers the W of the micro-batches it took fewer in
 * warm-up, and their saved inputs count as a whole micro-batch's
 * activations). NaN when k is not in 0..n-1 or B < 1. */
double apsolve_schedule_in_flight(ApsolveSchedule s, int vpp, int B, int n, int k);

/* The one memory rule every tool judges a stage by (docs/solver.md,
 * "Memory"). EXACT, approf's: a stage keeps apsolve_schedule_in_flight()
 * micro-batches of saved activations, and its profiled peak already holds
 * the one whose backward runs, so f - 1 come on top. ALPA, Alpa's
 * max_n_succ_stages: under 1F1B f is the number of stages from it to the
 * end (also when B is smaller), and all f come on top. */
typedef enum {
    APSOLVE_MEMORY_EXACT = 0,
    APSOLVE_MEMORY_ALPA
} ApsolveMemoryRule;

/* Micro-batches of activations stage k of n keeps in flight under rule;
 * NaN as apsolve_schedule_in_flight(). */
double apsolve_stage_in_flight(ApsolveMemoryRule rule, ApsolveSchedule s, int vpp, int B, int n,
                               int k);
/* Copies of the intermediate activations on top of the peak with f in
 * flight: f - 1 under EXACT (never below 0), f under ALPA. */
double apsolve_stage_extra_copies(ApsolveMemoryRule rule, double f);
/* Bytes a stage needs on each device: peak + initial + extra copies x
 * intermediate, rounded to the nearest byte and saturated at INT64_MAX; 0
 * when peak is 0 (no memory figures). */
long long apsolve_stage_memory_need(ApsolveMemoryRule rule, long long peak, long long initial,
                                    long long intermediate, double f);

/* How many times one micro-batch's activation crosses each stage boundary
 * in the forward pass (and its gradient in the backward pass): vpp for
 * interleaved (>= 1), else 1. */
double apsolve_schedule_transfer_factor(ApsolveSchedule s, int vpp);

/* 1 when the schedule can run B micro-batches on n stages with vpp chunks,
 * else 0 with the reason in why (if given; "" when valid). Every schedule
 * needs B >= 1 and n >= 1; interleaved needs vpp >= 1 and, for vpp >= 2,
 * n >= 2 and B a multiple of n (Megatron-LM's chunk order); vpp = 1 is
 * plain 1F1B; ZB-H1 needs B >= n (its steady phase). */
int apsolve_schedule_valid(ApsolveSchedule s, int vpp, int B, int n, char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
