/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Closed forms of the pipeline schedules (schedule.h). 1F1B and GPipe take
 * Alpa's T = sum c + (B - 1) max c: the first micro-batch crosses every
 * stage, the other B - 1 follow at the pace of the slowest. The interleaved
 * schedule splits each device's stage into v model chunks of c/v each: the
 * first micro-batch's pass through the chunks ahead of the slowest device
 * costs sum c / v, and that device then works B v - 1 more chunks back to
 * back, (B - 1/v) max c: (sum c + (B v - 1) max c) / v, as
 * apsolve_schedule_base_time computes it (the one definition of both T's,
 * which every pricing path calls). For equal costs t this is
 * B t + (n - 1) t / v: the bubble shrinks by v (Narayanan et al. 2021,
 * section 2.2.2). Peak in-flight
 * activations follow the warm-up counts of each schedule: n - k - 1
 * forwards before the first backward in 1F1B, all B in GPipe, and
 * 2 (n - k - 1) + (v - 1) n model chunks in Megatron-LM's interleaved order;
 * for the first device that is n + (n - 1)/v micro-batches' worth, the
 * (1 + (n - 1)/(n v)) factor of Korthikanti et al. 2022 (section 4.2.3).
 * ZB-H1 (Qi et al. 2024, section 2.1; the order of PyTorch's
 * _get_1f1b_rank_ops with enable_zero_bubble, as its
 * ScheduleInterleavedZeroBubble calls it on one stage per rank,
 * torch/distributed/pipelining/schedules.py at commit 1fd7abc2): 1F1B's
 * warm-up, then stage k runs its first k backwards as B alone and every
 * later one as B then W, the W it deferred run last. The first stage
 * waits (n - 1) B for its first backward; the last runs its k deferred W
 * in its cool-down; on equal stages the bubble is
 * (n - 1)(F + B - min(W, F)) against 1F1B's (n - 1)(F + B + W).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "schedule.h"

static const char *const names[APSOLVE_SCHEDULE_COUNT] = {
    "1f1b", "gpipe", "interleaved", "zb-h1", "interleaved-zb", "zbv"};

const char *apsolve_schedule_name(ApsolveSchedule s)
{
    return (int)s >= 0 && s < APSOLVE_SCHEDULE_COUNT ? names[s] : NULL;
}

int apsolve_schedule_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < APSOLVE_SCHEDULE_COUNT; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

int apsolve_schedule_zero_bubble(int s)
{
    return s == APSOLVE_SCHEDULE_ZB_H1 || s == APSOLVE_SCHEDULE_INTERLEAVED_ZB ||
           s == APSOLVE_SCHEDULE_ZBV;
}

double apsolve_schedule_base_time(int v, int B, double sum, double max)
{
    if (v > 1)
        return (sum + ((double)v * B - 1.0) * max) / v;
    /* B = 1 has no (B - 1) term: 0 x an infinite stage cost would be NaN */
    return B > 1 ? sum + ((double)B - 1.0) * max : sum;
}

double apsolve_schedule_time(ApsolveSchedule s, int vpp, int B, const double *stage_cost,
                             size_t n)
{
    double sum = 0, max = 0;
    int v = s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1 ? vpp : 1;
    if (!stage_cost || n == 0 || B < 1 || (int)s < 0 || s >= APSOLVE_SCHEDULE_COUNT ||
        s == APSOLVE_SCHEDULE_ZB_H1 || s == APSOLVE_SCHEDULE_INTERLEAVED_ZB ||
        s == APSOLVE_SCHEDULE_ZBV)
        return NAN;
    for (size_t k = 0; k < n; k++) {
        sum += stage_cost[k];
        if (stage_cost[k] > max)
            max = stage_cost[k];
    }
    return apsolve_schedule_base_time(v, B, sum, max);
}

double apsolve_schedule_zb_fill(double fwd, double bwd, double wgrad)
{
    /* W itself, and up to a forward's worth of the first stage's wait for
     * its first backward when W is at least that long; never more than
     * the B the wait is made of (the last stage still waits (n - 1) F for
     * its first input, whatever W is) */
    double b = bwd - wgrad, m = wgrad < fwd ? wgrad : fwd;
    if (!(wgrad >= 0) || !(b >= 0))
        return NAN;
    return wgrad + (b < m ? b : m);
}

double apsolve_schedule_time_zb(int B, const double *fwd, const double *bwd,
                                const double *wgrad, size_t n)
{
    double sum = 0, max = 0;
    if (!fwd || !bwd || !wgrad || n == 0 || B < 1 || (size_t)B < n)
        return NAN;
    for (size_t k = 0; k < n; k++) {
        double c = fwd[k] + bwd[k];
        sum += c;
        if (c > max)
            max = c;
    }
    /* Alpa's T less the schedule's saving (schedule_zb.c; NaN for a W
     * outside 0..bwd) */
    return apsolve_schedule_base_time(1, B, sum, max) -
           apsolve_schedule_zb_saving(APSOLVE_SCHEDULE_ZB_H1, 1, B, fwd, bwd, wgrad, n);
}

double apsolve_schedule_in_flight(ApsolveSchedule s, int vpp, int B, int n, int k)
{
    return apsolve_schedule_in_flight_a2a(s, vpp, B, n, k, 0);
}

double apsolve_schedule_in_flight_a2a(ApsolveSchedule s, int vpp, int B, int n, int k,
                                      int a2a_overlap)
{
    if (B < 1 || n < 1 || k < 0 || k >= n || (int)s < 0 || s >= APSOLVE_SCHEDULE_COUNT)
        return NAN;
    if (a2a_overlap && !(s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1) &&
        !(s == APSOLVE_SCHEDULE_1F1B && n == 1))
        return NAN; /* Megatron-Core runs the overlap on no other schedule */
    if (s == APSOLVE_SCHEDULE_GPIPE)
        return B;
    if (s == APSOLVE_SCHEDULE_ZB_H1)
        return n < B ? n : B;
    if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB) {
        /* every device: (v - 1) m + n - 1 - k chunks forwarded in warm-up,
         * the one of the first steady step, and the k whose W waits */
        int v = vpp > 1 ? vpp : 1, rounds = B / n > 1 ? B / n : 1;
        double chunks = (double)(v - 1) * (B / rounds) + n, all = (double)B * v;
        return (chunks < all ? chunks : all) / v;
    }
    if (s == APSOLVE_SCHEDULE_ZBV) {
        /* half chunks alive on device k: its first chunk's 2 (n - k) - 1
         * warm-up forwards, k more pairs, and the second chunk's first
         * forward; never more than the 2 B there are */
        double chunks = (double)B + k + 1;
        if (chunks > 2.0 * n)
            chunks = 2.0 * n;
        if (chunks > 2.0 * B)
            chunks = 2.0 * B;
        return chunks / 2;
    }
    if (s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1) {
        /* model chunks forwarded before the first backward, plus the steady
         * state's forward that precedes its backward; under the MoE
         * all-to-all overlap one more warm-up forward on every rank
         * (get_pp_rank_microbatches, megatron/core/pipeline_parallel/
         * schedules.py lines 739-743 at core_v0.19.0) */
        double chunks = (double)apsolve_schedule_warmup(s, vpp, B, n, k) + 1 + (a2a_overlap != 0);
        double all = (double)B * vpp;
        return (chunks < all ? chunks : all) / vpp;
    }
    if (a2a_overlap)
        /* no pipelining: micro-batch i + 1's forward runs beside micro-batch
         * i's backward (combined_1f1b_schedule_for_no_pipelining,
         * megatron/core/pipeline_parallel/combined_1f1b.py lines 18-110 at
         * Megatron-LM 00caa53): two in flight */
        return B < 2 ? B : 2;
    /* 1F1B; one chunk per stage is plain 1F1B too */
    return n - k < B ? n - k : B;
}

int apsolve_schedule_warmup(ApsolveSchedule s, int vpp, int B, int n, int k)
{
    long long w, all;
    if (B < 1 || n < 1 || k < 0 || k >= n || (int)s < 0 || s >= APSOLVE_SCHEDULE_COUNT ||
        apsolve_schedule_zero_bubble((int)s))
        return -1;
    if (s == APSOLVE_SCHEDULE_GPIPE)
        return B;
    if (s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1) {
        w = 2LL * (n - k - 1) + (long long)(vpp - 1) * n;
        all = (long long)B * vpp;
    } else {
        w = n - k - 1;
        all = B;
    }
    w = w < all ? w : all;
    return w > INT_MAX ? INT_MAX : (int)w;
}

double apsolve_schedule_p2p_exposed(ApsolveSchedule s, int vpp, int B, int n, double x,
                                    double chunk_fwd, double chunk_bwd)
{
    double w, steady, under_bwd, under_fwd;
    if (B < 1 || !(x >= 0) || !(chunk_fwd >= 0) || !(chunk_bwd >= 0))
        return NAN;
    if (s != APSOLVE_SCHEDULE_INTERLEAVED || vpp < 2 || n < 2)
        return 0;
    /* the first micro-batch's activation crosses the v n - 1 boundaries
     * between virtual stages in the warm-up, its gradient crosses them
     * back in the cool-down; rank 0's w warm-up steps bound the steady
     * ones */
    w = apsolve_schedule_warmup(s, vpp, B, n, 0);
    steady = (double)B * vpp - w;
    under_bwd = x > chunk_bwd ? x - chunk_bwd : 0;
    under_fwd = x > chunk_fwd ? x - chunk_fwd : 0;
    return 2.0 * ((double)vpp * n - 1) * x + steady * (under_bwd + under_fwd);
}

double apsolve_stage_in_flight(ApsolveMemoryRule rule, ApsolveSchedule s, int vpp, int B, int n,
                               int k)
{
    return apsolve_stage_in_flight_a2a(rule, s, vpp, B, n, k, 0);
}

double apsolve_stage_in_flight_a2a(ApsolveMemoryRule rule, ApsolveSchedule s, int vpp, int B,
                                   int n, int k, int a2a_overlap)
{
    if (!a2a_overlap && rule == APSOLVE_MEMORY_ALPA && s == APSOLVE_SCHEDULE_1F1B && n >= 1 &&
        k >= 0 && k < n)
        return n - k;
    return apsolve_schedule_in_flight_a2a(s, vpp, B, n, k, a2a_overlap);
}

/* apsolve_stage_extra_copies, here inlined into the memory tests below
 * (a call per test was a tenth of a fit prefix's instructions). */
static double extra_copies(ApsolveMemoryRule rule, double f)
{
    if (isnan(f))
        return f;
    if (rule == APSOLVE_MEMORY_ALPA)
        return f;
    return f >= 1.0 ? f - 1.0 : 0.0;
}

double apsolve_stage_extra_copies(ApsolveMemoryRule rule, double f)
{
    return extra_copies(rule, f);
}

/* Below 2^53 every integer is a double, and a sum or product of such
 * integers whose exact value stays below it is computed exactly in double
 * as in long double (and one that does not rounds to 2^53 or more). */
#define EXACT_INT 9007199254740992.0 /* 2^53 */

static int below_2_52(long long x)
{
    return x > -(1LL << 52) && x < (1LL << 52);
}

long long apsolve_stage_memory_need(ApsolveMemoryRule rule, long long peak, long long initial,
                                    long long intermediate, double f)
{
    long double need;
    double e;
    if (peak <= 0 && initial <= 0 && intermediate <= 0)
        return 0;
    e = extra_copies(rule, f);
    /* Whole copies of byte counts below 2^52 (every stored entry): the sum
     * below is an exact integer in double, so it is the long double need
     * below and its llroundl (a search's most frequent memory test; x87
     * rounding was its top cost), without either. */
    if (fabs(e) < EXACT_INT && e == floor(e) && below_2_52(peak) && below_2_52(initial) &&
        below_2_52(intermediate)) {
        double part = e * (double)intermediate, sum;
        if (fabs(part) < EXACT_INT) {
            sum = (double)peak + (double)initial + part;
            if (fabs(sum) < EXACT_INT)
                return sum > 0 ? (long long)sum : 0;
        }
    }
    need = (long double)peak + (long double)initial + (long double)e * (long double)intermediate;
    if (!(need > 0))
        return 0;
    if (need >= (long double)LLONG_MAX)
        return LLONG_MAX;
    return llroundl(need);
}

/* The need's exact value X = peak + initial + e x intermediate (e the
 * extra copies) against budget: the need, X rounded to the nearest byte
 * (halves up: llroundl; 0 at or below 0; saturated above), is at most a
 * budget b in 0 .. 2^52 exactly when X < b + 1/2. With peak, initial and
 * intermediate below 2^52 in magnitude, peak + initial is exact in double
 * and the double sum below is within 2^-51 M of X (M = |peak| + |initial|
 * + |e x intermediate|: one rounding of the product, one of the sum), the
 * long double sum of apsolve_stage_memory_need within 2^-51 M too (2^-62 M
 * with a 64-bit significand; 2^-52 M where long double is double); so a
 * double sum more than 2^-49 M + 1 away from b + 1/2 (thrice the bound,
 * the comparisons' own roundings included) puts both on its side, and
 * the answer is the need's. Closer, or outside those ranges, the need
 * itself is worked out. */
/* The test's per-entry part (figures and budget), worked out once for the
 * counts of a bisection (apsolve_stage_memory_fit_prefix) rather than per
 * count: the same double operations in the same order, so the same
 * answers. */
typedef struct {
    int quick; /* the ranges the bound needs hold */
    double base, abase, thr, inter;
} FitQuick;

static FitQuick fit_quick_init(long long peak, long long initial, long long intermediate,
                               long long budget)
{
    FitQuick q;
    q.quick = budget >= 0 && budget < (1LL << 52) && below_2_52(peak) && below_2_52(initial) &&
              below_2_52(intermediate) && (peak > 0 || initial > 0 || intermediate > 0);
    q.base = (double)peak + (double)initial;
    q.abase = fabs((double)peak) + fabs((double)initial);
    q.thr = (double)budget + 0.5;
    q.inter = (double)intermediate;
    return q;
}

/* 1 fits, 0 does not, -1 too close to tell (or out of the ranges): the
 * need itself decides. */
static int fit_quick(const FitQuick *q, ApsolveMemoryRule rule, double f)
{
    double e;
    if (!q->quick)
        return -1;
    e = extra_copies(rule, f);
    if (fabs(e) < 1e6) { /* finite (NaN fails), and M far below 2^100 */
        double part = e * q->inter, sum = q->base + part;
        double margin = (q->abase + fabs(part)) * 0x1p-49 + 1.0;
        if (sum < q->thr - margin)
            return 1;
        if (sum > q->thr + margin)
            return 0;
    }
    return -1;
}

int apsolve_stage_memory_fits(ApsolveMemoryRule rule, long long peak, long long initial,
                              long long intermediate, double f, long long budget)
{
    FitQuick q = fit_quick_init(peak, initial, intermediate, budget);
    int r = fit_quick(&q, rule, f);
    if (r >= 0)
        return r;
    return apsolve_stage_memory_need(rule, peak, initial, intermediate, f) <= budget;
}

/* The count of f's (ascending) below the quick test's threshold, the
 * double sum base + e x inter against thr with the margin left out: a
 * guess of the fit prefix's length, which the caller checks. */
static int fit_guess(const FitQuick *q, ApsolveMemoryRule rule, const double *f, int nf)
{
    double te, ft;
    int a = 0, b = nf;
    if (q->inter == 0)
        return q->base < q->thr ? nf : 0;
    te = (q->thr - q->base) / q->inter; /* fits about when e < te */
    if (rule == APSOLVE_MEMORY_ALPA)
        ft = te; /* e = f */
    else if (te > 0)
        ft = te + 1.0; /* e = f - 1 from f = 1 on, 0 below */
    else
        return 0;
    while (a < b) {
        int mid = a + (b - a) / 2;
        if (f[mid] < ft)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* For intermediate >= 0 and ascending finite f the need is nondecreasing
 * along f (e is, the product, the sums and the rounding are monotone), so
 * "fits" holds on a prefix and the bisection below returns its length.
 * Where the quick test says the guessed prefix's last count fits and the
 * next one does not (each answer being the need's, see above), that guess
 * is the length and the bisection's answer, read with two tests instead
 * of one per halving; else the bisection decides. */
int apsolve_stage_memory_fit_prefix(ApsolveMemoryRule rule, long long peak, long long initial,
                                    long long intermediate, long long budget, const double *f,
                                    int nf)
{
    FitQuick q = fit_quick_init(peak, initial, intermediate, budget);
    int a = 0, b = nf;
    if (q.quick && intermediate >= 0 && nf > 0 && isfinite(f[0]) && isfinite(f[nf - 1])) {
        int k = fit_guess(&q, rule, f, nf);
        if ((k == 0 || fit_quick(&q, rule, f[k - 1]) == 1) &&
            (k == nf || fit_quick(&q, rule, f[k]) == 0))
            return k;
    }
    while (a < b) {
        int mid = a + (b - a) / 2;
        int r = fit_quick(&q, rule, f[mid]);
        if (r < 0)
            r = apsolve_stage_memory_need(rule, peak, initial, intermediate, f[mid]) <= budget;
        if (r)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

double apsolve_schedule_transfer_factor(ApsolveSchedule s, int vpp)
{
    if (s == APSOLVE_SCHEDULE_ZBV)
        return 2;
    return (s == APSOLVE_SCHEDULE_INTERLEAVED || s == APSOLVE_SCHEDULE_INTERLEAVED_ZB) && vpp > 1
               ? vpp : 1;
}

int apsolve_schedule_valid(ApsolveSchedule s, int vpp, int B, int n, char *why, size_t len)
{
    char buf[160] = "";
    if ((int)s < 0 || s >= APSOLVE_SCHEDULE_COUNT)
        snprintf(buf, sizeof buf, "unknown schedule %d", (int)s);
    else if (B < 1)
        snprintf(buf, sizeof buf, "%d micro-batches: need at least 1", B);
    else if (n < 1)
        snprintf(buf, sizeof buf, "%d stages: need at least 1", n);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED && vpp < 1)
        snprintf(buf, sizeof buf, "interleaved: %d virtual stages per device: need at least 1",
                 vpp);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1 && n < 2)
        snprintf(buf, sizeof buf, "interleaved: needs at least 2 pipeline stages, not %d", n);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED && vpp > 1 && B % n != 0)
        snprintf(buf, sizeof buf,
                 "interleaved: micro-batches (%d) must be a multiple of the pipeline stages (%d)",
                 B, n);
    else if (s == APSOLVE_SCHEDULE_ZB_H1 && B < n)
        snprintf(buf, sizeof buf,
                 "zb-h1: micro-batches (%d) must be at least the pipeline stages (%d)", B, n);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB && vpp < 1)
        snprintf(buf, sizeof buf,
                 "interleaved-zb: %d virtual stages per device: need at least 1", vpp);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB && B < n)
        snprintf(buf, sizeof buf,
                 "interleaved-zb: micro-batches (%d) must be at least the pipeline stages (%d)",
                 B, n);
    else if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB && B % (B / n) != 0)
        snprintf(buf, sizeof buf,
                 "interleaved-zb: micro-batches (%d) must be a multiple of the rounds (%d = %d "
                 "micro-batches / %d stages)", B, B / n, B, n);
    else if (s == APSOLVE_SCHEDULE_ZBV && vpp != 2 && vpp > 1)
        snprintf(buf, sizeof buf, "zbv: runs exactly 2 virtual stages per device, not %d", vpp);
    if (why && len)
        snprintf(why, len, "%s", buf);
    return buf[0] == '\0';
}
