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
 * The zero-bubble schedules frameworks run on several model chunks per
 * device are PyTorch's ScheduleInterleavedZeroBubble (ZB-H1's order over v
 * chunks per device, placed round robin like interleaved 1F1B) and
 * ScheduleZBVZeroBubble (two chunks per device placed in a V, Qi et al.,
 * "Pipeline Parallelism with Controllable Memory", NeurIPS 2024), both in
 * torch/distributed/pipelining/schedules.py at commit 1fd7abc2; their pass
 * orders are apsolve_schedule_zb_order's, and their times
 * apsolve_schedule_time_izb and apsolve_schedule_time_zbv.
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
    APSOLVE_SCHEDULE_INTERLEAVED_ZB,  /* ZB-H1 over v model chunks per device (PyTorch) */
    APSOLVE_SCHEDULE_ZBV,             /* zero bubble on 2 chunks per device in a V (ZB-V) */
    APSOLVE_SCHEDULE_COUNT
} ApsolveSchedule;

/* "1f1b" | "gpipe" | "interleaved" | "zb-h1" | "interleaved-zb" | "zbv"; NULL
 * for an out-of-range value. */
const char *apsolve_schedule_name(ApsolveSchedule s);
/* The schedule named name (the names above), or -1. */
int apsolve_schedule_parse(const char *name);
/* 1 for the schedules that split the backward into B and W (ZB-H1,
 * interleaved ZB, ZBV), which need each backward's weight-gradient
 * seconds; else 0. */
int apsolve_schedule_zero_bubble(int s);

/* The base iteration time of a pipeline over B micro-batches whose stage
 * costs (forward + backward seconds per micro-batch, or whatever period a
 * caller prices) sum to sum and peak at max, with v model chunks per device:
 * the one definition of the T every schedule starts from (every path that
 * prices a pipeline calls it: apsolve_schedule_time, _time_zb, _time_izb,
 * the ZBV saving, the solver's plan pricing (evaluate.c), --batch
 * (rebatch.c), the full estimate, the DP's bound and the plan's text).
 * v <= 1: Alpa's T, sum + (B - 1) max (the first micro-batch crosses every
 * stage, the other B - 1 follow at the pace of the slowest); just sum for
 * B <= 1, where 0 x an infinite max would be NaN. v >= 2: the interleaved
 * T, (sum + (v B - 1) max) / v (Narayanan et al. 2021, section 2.2.2: each
 * stage split into v chunks of 1/v of its cost; the DP's T at B' = v B,
 * divided by v). The caller sums and takes the max in its own order. */
double apsolve_schedule_base_time(int v, int B, double sum, double max);

/* Iteration time of the pipeline whose stage k takes stage_cost[k] seconds
 * (forward + backward) per micro-batch, over B micro-batches:
 * apsolve_schedule_base_time of the costs summed from the first stage.
 * 1F1B and GPipe: sum c + (B - 1) max c (Alpa's T). Interleaved with vpp
 * model chunks per device (each 1/vpp of its stage):
 * (sum c + (vpp B - 1) max c) / vpp, which is T for vpp = 1 and
 * (B + (n - 1)/vpp) t for equal costs t. vpp < 1 counts as 1. NaN for n == 0, B < 1, a NULL stage_cost or a zero-bubble schedule
 * (whose time needs the backward's split: apsolve_schedule_time_zb, _izb,
 * _zbv). */
double apsolve_schedule_time(ApsolveSchedule s, int vpp, int B, const double *stage_cost,
                             size_t n);

/* Iteration time of ZB-H1 over B >= n micro-batches on n stages whose stage
 * k takes fwd[k] forward and bwd[k] backward seconds per micro-batch, of
 * which wgrad[k] (0 <= wgrad[k] <= bwd[k]) compute the weight gradients
 * (the W pass; bwd[k] - wgrad[k] is the B pass): Alpa's T of the stage
 * costs fwd + bwd, less (n - 1) min over k of apsolve_schedule_zb_fill
 * (apsolve_schedule_zb_saving). On equal stages this is
 * B (F + B + W) + (n - 1)(F + B - min(W, F, B)),
 * the paper's (n - 1)(T_F + T_B - T_W) bubble when W <= F and W <= B, and
 * the exact makespan of the order apreport simulates (docs/solver.md,
 * "Schedules"). NaN for n == 0, B < n, a NULL array or a W outside
 * 0..bwd. */
double apsolve_schedule_time_zb(int B, const double *fwd, const double *bwd,
                                const double *wgrad, size_t n);
/* What ZB-H1 takes out of each of the n - 1 bubble slots of 1F1B at a stage
 * of forward fwd, backward bwd and weight-gradient wgrad seconds:
 * W + min(W, F, B) with B = bwd - wgrad (the bubble left is never below
 * the F the last stage waits per stage ahead of it); the schedule's saving
 * is (n - 1) x its minimum over the stages. NaN for a wgrad that is not a
 * number in 0..bwd (unknown). */
double apsolve_schedule_zb_fill(double fwd, double bwd, double wgrad);

/* What zero-bubble schedule s takes off the time of its base schedule on
 * n stages whose stage k takes fwd[k] forward and bwd[k] backward seconds,
 * wgrad[k] of them the W pass: the one definition of each schedule's price
 * (apsolve_schedule_time_zb and _izb subtract it from their base, the
 * solver from the T it prices, evaluate.c). ZB-H1 (vpp ignored): off
 * Alpa's T of the stage costs fwd + bwd, (n - 1) x the least
 * apsolve_schedule_zb_fill of a stage; interleaved ZB: off the interleaved
 * T of vpp chunks (< 1: 1), that over vpp; ZBV: off the interleaved T of 2
 * chunks, what apsolve_schedule_time_zbv is below it. 0 for the other
 * schedules; NaN for NULL arrays or a W outside 0..bwd (n == 0: 0, ZBV
 * NaN). Each schedule's validity (apsolve_schedule_valid) stays the
 * caller's (ZB-H1: B >= n; interleaved ZB also PyTorch's rounds), except
 * that ZBV's makespan is NaN where its order is refused. */
double apsolve_schedule_zb_saving(ApsolveSchedule s, int vpp, int B, const double *fwd,
                                  const double *bwd, const double *wgrad, size_t n);
/* Iteration time of PyTorch's ScheduleInterleavedZeroBubble with v >= 1
 * model chunks per device (each 1/v of the stage's fwd, bwd and wgrad
 * seconds) over B micro-batches on n stages: the interleaved time of the
 * stage costs fwd + bwd, (sum + (B v - 1) max) / v, less (n - 1)/v x the
 * least apsolve_schedule_zb_fill of a stage (apsolve_schedule_zb_saving).
 * On equal stages this is
 * B (F + B + W) + (n - 1)(F + B - min(W, F, B)) / v, ZB-H1's bubble over v,
 * and the makespan of the order apreport simulates; v = 1 is ZB-H1. NaN
 * as apsolve_schedule_time_zb or when apsolve_schedule_valid refuses. */
double apsolve_schedule_time_izb(int v, int B, const double *fwd, const double *bwd,
                                 const double *wgrad, size_t n);
/* Iteration time of PyTorch's ScheduleZBVZeroBubble over B micro-batches on
 * n stages (2 chunks per device, each half of the stage's fwd, B and W
 * seconds): the makespan of its pass order (apsolve_schedule_zb_order) when
 * each pass starts as soon as its device is free and its inputs are done,
 * transfers not counted. No closed form: its cool-down leaves gaps that
 * depend on how F, B and W compare (on equal chunks F = B = W the bubble is
 * (n - 1) F, the wait of the last device for its first input). NaN for
 * n == 0, B < 1, NULL arrays, a W outside 0..bwd or no memory. */
double apsolve_schedule_time_zbv(int B, const double *fwd, const double *bwd,
                                 const double *wgrad, size_t n);

/* One pass of a zero-bubble schedule's order: op 0 forward, 1 the input
 * gradient (B), 2 the weight gradient (W), of micro-batch mb at virtual
 * stage (model chunk) stage, 0 .. v n - 1. */
typedef struct ApsolvePass {
    int op, stage, mb;
} ApsolvePass;
/* Writes the 3 B v passes device rank (0 .. n - 1) runs, in order, under
 * the zero-bubble schedule s (ZB_H1: v = 1; INTERLEAVED_ZB: v chunks
 * placed round robin, virtual stage c n + rank; ZBV: v = 2, chunks rank
 * and 2 n - 1 - rank) to out (3 B v entries). Returns the count, or -1
 * when s is not zero-bubble or apsolve_schedule_valid refuses. */
int apsolve_schedule_zb_order(ApsolveSchedule s, int v, int B, int n, int rank, ApsolvePass *out);
/* The device that runs virtual stage j of n devices under s: j mod n, or
 * for ZBV the V (j for j < n, else 2 n - 1 - j). -1 when j is out of range. */
int apsolve_schedule_stage_device(ApsolveSchedule s, int v, int n, int j);

/* Micro-batches' worth of the intermediate activations of stage k (0-based
 * of n) alive at its peak: 1F1B min(B, n - k); GPipe B; interleaved
 * min(B vpp, 2 (n - k - 1) + (vpp - 1) n + 1) / vpp (Megatron-LM's warm-up
 * count of model chunks plus the one in steady state, each chunk holding
 * 1/vpp of the stage's activations); ZB-H1 min(B, n) on every stage (the
 * paper's schedule holds as many micro-batches on each stage as 1F1B on the
 * first: a stage defers the W of the micro-batches it took fewer in
 * warm-up, and their saved inputs count as a whole micro-batch's
 * activations). Interleaved ZB with v chunks: min(B v, (v - 1) m + n) / v
 * on every stage, m = B / max(1, B / n) the micro-batches of one round
 * (PyTorch's warm-up of (v - 1) m + n - 1 - k chunks, and the k whose W it
 * defers); ZBV min(2 n, 2 B, B + k + 1) / 2, n for B >= 2 n - 1 (1F1B's
 * first stage's: the V keeps 2 n half chunks on every device). NaN when k
 * is not in 0..n-1 or B < 1. */
double apsolve_schedule_in_flight(ApsolveSchedule s, int vpp, int B, int n, int k);
/* The same under Megatron-Core's MoE all-to-all overlap when a2a_overlap
 * (overlap_moe_expert_parallel_comm, docs/expert-parallel.md): interleaved,
 * one more warm-up chunk on every rank, min(B vpp, warm-up + 2) / vpp;
 * 1F1B on one stage (no pipelining), min(B, 2): the next micro-batch's
 * forward beside the backward. NaN on any other schedule (Megatron-Core
 * refuses the overlap there); without a2a_overlap the rule above. */
double apsolve_schedule_in_flight_a2a(ApsolveSchedule s, int vpp, int B, int n, int k,
                                      int a2a_overlap);

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
/* The same under the MoE all-to-all overlap when a2a_overlap
 * (apsolve_schedule_in_flight_a2a; ALPA's 1F1B count does not apply). */
double apsolve_stage_in_flight_a2a(ApsolveMemoryRule rule, ApsolveSchedule s, int vpp, int B,
                                   int n, int k, int a2a_overlap);
/* Copies of the intermediate activations on top of the peak with f in
 * flight: f - 1 under EXACT (never below 0), f under ALPA. */
double apsolve_stage_extra_copies(ApsolveMemoryRule rule, double f);
/* Bytes a stage needs on each device: peak + initial + extra copies x
 * intermediate, rounded to the nearest byte and saturated at INT64_MAX; 0
 * when peak is 0 (no memory figures). */
long long apsolve_stage_memory_need(ApsolveMemoryRule rule, long long peak, long long initial,
                                    long long intermediate, double f);
/* Whether that need is at most budget: apsolve_stage_memory_need(...) <=
 * budget, exactly, mostly without the long double sum and its rounding
 * (the searches' memory tests: schedule.c has the error bound). */
int apsolve_stage_memory_fits(ApsolveMemoryRule rule, long long peak, long long initial,
                              long long intermediate, double f, long long budget);
/* The answer of the bisection over counts f[0 .. nf) of
 * apsolve_stage_memory_fits (its per-entry part worked out once): the
 * first count a is such that f[a - 1] fits and f[a] does not, as the
 * bisection finds it (the length of the prefix that fits when the
 * intermediate is >= 0 and f ascends: the need is then non-decreasing).
 * Where the quick test's threshold decides the answer and two quick tests
 * confirm it, the bisection does not run (schedule.c, fit_guess); else it
 * runs the same tests in the same order as before. */
int apsolve_stage_memory_fit_prefix(ApsolveMemoryRule rule, long long peak, long long initial,
                                    long long intermediate, long long budget, const double *f,
                                    int nf);

/* Forward passes (model chunks) rank k of n runs before its first backward
 * under Megatron-Core's schedules (get_pp_rank_microbatches in
 * megatron/core/pipeline_parallel/schedules.py, core_v0.19.0): 1F1B
 * n - k - 1; interleaved with vpp >= 2 chunks and the default micro-batch
 * group of n per virtual stage 2 (n - k - 1) + (vpp - 1) n; never more
 * than the B vpp there are (then every pass is warm-up). GPipe: B. The
 * cool-down runs as many backwards. -1 for k not in 0..n-1, B < 1 or a
 * zero-bubble schedule (PyTorch's orders, schedule_zb.c). */
int apsolve_schedule_warmup(ApsolveSchedule s, int vpp, int B, int n, int k);

/* Seconds of stage-boundary transfers that Megatron-Core's interleaved
 * schedule (vpp >= 2, n >= 2) leaves on an iteration's critical path, with
 * overlap_p2p_comm (its training default with interleaving; NeMo's
 * overlap_p2p_comm: true, batch_p2p_comm: false) and without
 * overlap_p2p_comm_warmup_flush (default off), core_v0.19.0 schedules.py
 * forward_backward_pipelining_with_interleaving: each warm-up forward
 * ends in a blocking send_forward_recv_forward and each cool-down backward
 * in a blocking send_backward_recv_backward, so the first micro-batch's
 * activation crosses the vpp n - 1 boundaries between virtual stages on
 * the critical path, and its gradient crosses them back; in the steady
 * state a forward's exchange is issued asynchronously and waited for
 * before the next forward, so it runs under the backward in between (and
 * the backward's under the next forward): only what it takes beyond that
 * pass shows, over the B vpp - W steady steps of rank 0 (W =
 * apsolve_schedule_warmup(.., 0)).
 *   2 (vpp n - 1) x + (B vpp - W) (max(0, x - chunk_bwd) + max(0, x - chunk_fwd))
 * This is the makespan added to Megatron-Core's order list-scheduled with
 * such exchanges on equal stages (tests/reports/test_schedule.c checks it
 * against apreport's simulation).
 * with x the seconds of one exchange (the largest boundary's transfer;
 * its send and receive run together on the duplex link) and chunk_fwd,
 * chunk_bwd a model chunk's forward and backward seconds. 0 for any other
 * schedule, vpp < 2 or n < 2 (Megatron-Core's non-interleaved 1F1B blocks
 * on every exchange: its transfers stay in each stage's period,
 * full_estimate.c); NaN for B < 1 or x, chunk_fwd, chunk_bwd not numbers
 * >= 0. */
double apsolve_schedule_p2p_exposed(ApsolveSchedule s, int vpp, int B, int n, double x,
                                    double chunk_fwd, double chunk_bwd);

/* How many times one micro-batch's activation crosses each stage boundary
 * in the forward pass (and its gradient in the backward pass): vpp for
 * interleaved and interleaved ZB (>= 1), 2 for ZBV, else 1. */
double apsolve_schedule_transfer_factor(ApsolveSchedule s, int vpp);

/* 1 when the schedule can run B micro-batches on n stages with vpp chunks,
 * else 0 with the reason in why (if given; "" when valid). Every schedule
 * needs B >= 1 and n >= 1; interleaved needs vpp >= 1 and, for vpp >= 2,
 * n >= 2 and B a multiple of n (Megatron-LM's chunk order); vpp = 1 is
 * plain 1F1B; ZB-H1 needs B >= n (its steady phase); interleaved ZB needs
 * vpp >= 1, B >= n and B a multiple of B / n (PyTorch's rounds); ZBV needs
 * vpp = 2 (below 2: unset, taken as 2). */
int apsolve_schedule_valid(ApsolveSchedule s, int vpp, int B, int n, char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
