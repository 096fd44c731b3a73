/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One threshold DP of the exact stage/mesh search (solver/dp.c has the
 * search; docs/solver.md, "Live states"): which states (i, d) a plan can
 * pass through, and the rows of the DP over them.
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* dst |= src >> dev over W words: bit d of src sets bit d - dev of dst. */
static void bits_or_down(uint64_t *dst, const uint64_t *src, size_t W, int dev)
{
    size_t ws = (size_t)dev / 64;
    unsigned bs = (unsigned)(dev % 64);
    for (size_t w = 0; w + ws < W; w++) {
        uint64_t v = src[w + ws] >> bs;
        if (bs && w + ws + 1 < W)
            v |= src[w + ws + 1] << (64 - bs);
        dst[w] |= v;
    }
}

/* The most stages a state (i, d) may hold: layers, devices and the cap. */
static int dp_nmax(const Dp *dp, int i, int d)
{
    int nmax = dp->NS - 1;
    if (nmax > dp->L - i)
        nmax = dp->L - i;
    return nmax > d ? d : nmax;
}

/* The fewest stages before a state that dp_stage_caps tells apart: those
 * that matter most (an exact count of up to this many stages, or a cap);
 * a state needing more is taken to need DP_LEVELS + 1 (dp->levels, when
 * set, instead: the tests' few). */
enum { DP_LEVELS = 16 };

/* The stages dp_run_live keeps at each live state (dp->ncap): dp_nmax's,
 * less the fewest stages a chain of options from the top (0, D) takes to
 * reach it. A plan holds at most NS - 1 stages (the top's dp_nmax), so an
 * entry of n stages at a state no chain of fewer than k stages reaches is
 * in no plan when k + n > NS - 1. Let k(i, d) be that count up to a level
 * K (the least k <= K with a chain of k stages, else K + 1: no more than
 * the fewest); then k(child) <= k(parent) + 1 along every option. Kept
 * are the entries n <= cap = min(dp_nmax, NS - 1 - k). A state's entries
 * of n stages depend only on its best[1 .. n] (dp_frontier: kept when
 * finite, or below every fewer-stage sum), and best[n] only on the
 * children's entries of n - 1 stages, offered in the same order; for n <=
 * cap(parent), n - 1 <= NS - 2 - k(parent) <= NS - 1 - k(child), within
 * the child's cap, so by induction from row L - 1 up every kept entry has
 * the sum and item the whole recurrence gives it, and the top (k = 0)
 * keeps its whole frontier: the same g(t) and the same plan, whose chain
 * reads at depth k the entry of n - k <= NS - 1 - k stages. Every state
 * below row 0 has k >= 1 (row 0's one live state is the top).
 * level[i][k]: the live states of row i a chain of k stages reaches,
 * made row after row; a state's k is its lowest level, and only a row's
 * lowest levels are passed on (a chain's other states are live too, and
 * a state's higher levels give its children only higher ones). */
static int dp_stage_caps(Dp *dp)
{
    int L = dp->L, D = dp->D, K = dp->levels > 0 ? dp->levels : DP_LEVELS;
    if (K > dp->NS - 1)
        K = dp->NS - 1;
    size_t W = dp->words, per = ((size_t)K + 1) * W;
    uint64_t *level = calloc((size_t)(L + 1) * per + W, sizeof *level), *seen;
    /* zero at every state not live: dp_run_live offers such a state nothing */
    dp->ncap = calloc((size_t)(L + 1) * (size_t)(D + 1), sizeof *dp->ncap);
    if (!level || !dp->ncap) {
        free(level);
        return APSOLVE_ENOMEM;
    }
    seen = level + (size_t)(L + 1) * per;
    /* a chain to (i, d) has at most min(i, D - d) stages, so k cuts no
     * state where that is at most NS - 1 - dp_nmax: when every live state
     * is one (a Pareto search of up to min(L, D) stages), the levels are
     * left out and each state keeps dp_nmax's */
    {
        int binds = 0;
        for (int i = 1; i < L && !binds; i++)
            for (int li = dp->live_off[i]; li < dp->live_off[i + 1] && !binds; li++) {
                int d = dp->live[li], most = i < D - d ? i : D - d;
                binds = most > dp->NS - 1 - dp_nmax(dp, i, d);
            }
        if (!binds)
            K = -1;
    }
    level[D / 64] = (uint64_t)1 << (D % 64);
    for (int i = 0; i < L; i++) {
        uint64_t *r = level + (size_t)i * per;
        const uint64_t *lb = dp->livebits + (size_t)i * W;
        if (K < 0) {
            for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++)
                dp->ncap[(size_t)i * (size_t)(D + 1) + (size_t)dp->live[li]] =
                    (int16_t)dp_nmax(dp, i, dp->live[li]);
            continue;
        }
        memset(seen, 0, W * sizeof *seen);
        for (int k = 0; k <= K; k++) {
            uint64_t any = 0;
            for (size_t w = 0; w < W; w++) { /* the states first reached at k */
                r[(size_t)k * W + w] &= lb[w] & ~seen[w];
                seen[w] |= r[(size_t)k * W + w];
                any |= r[(size_t)k * W + w];
            }
            if (!any || k == K)
                continue;
            for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++)
                bits_or_down(level + (size_t)(dp->opts[o].end + 1) * per + (size_t)(k + 1) * W,
                             r + (size_t)k * W, W, dp->opts[o].dev);
        }
        for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++) {
            int d = dp->live[li], k = 0, cap = dp_nmax(dp, i, d);
            while (k <= K && !(r[(size_t)k * W + (size_t)d / 64] >> (d % 64) & 1))
                k++;
            if (cap > dp->NS - 1 - k)
                cap = dp->NS - 1 - k;
            dp->ncap[(size_t)i * (size_t)(D + 1) + (size_t)d] = (int16_t)(cap > 0 ? cap : 0);
        }
    }
    free(level);
    return APSOLVE_OK;
}

/* Of word w of a row's bits, those of d = 1 .. D (W = D / 64 + 1 words). */
static uint64_t live_word_mask(size_t w, int D)
{
    uint64_t m = ~(uint64_t)0;
    if (w == 0)
        m &= ~(uint64_t)1;
    if (w == (size_t)D / 64)
        m &= D % 64 == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (D % 64 + 1)) - 1;
    return m;
}

/* The states (i, d) a threshold DP needs (docs/solver.md, "Live states"):
 * d devices can take layers i..L-1 (d is a sum of the devices of a chain
 * of options from row i to the end) and some chain of options from (0, D)
 * leaves d devices at layer i. The options hold every entry any threshold
 * admits, so no DP at any threshold finds a plan through another state, and
 * the states skipped are never read: a live state's child through an
 * option is reachable from (0, D) through it, and one that cannot end is
 * empty (front_cnt 0, as calloc left it). With dense set every d is live. */
int apsolve_dp_live(Dp *dp)
{
    int L = dp->L, D = dp->D;
    size_t W = (size_t)D / 64 + 1, n = 0;
    uint64_t *back = calloc((size_t)(L + 1) * W, sizeof *back);
    uint64_t *fwd = calloc((size_t)(L + 1) * W, sizeof *fwd);
    int rc = APSOLVE_ENOMEM;

    dp->words = W;
    dp->live_off = malloc((size_t)(L + 2) * sizeof *dp->live_off);
    dp->nz_cnt = calloc((size_t)(L + 1), sizeof *dp->nz_cnt);
    dp->stamp = calloc((size_t)D + 1, sizeof *dp->stamp);
    dp->lim = calloc((size_t)dp->opt_off[L] + 1, sizeof *dp->lim);
    dp->row_top = malloc((size_t)L * sizeof *dp->row_top);
    dp->ran = 0;
    if (!back || !fwd || !dp->live_off || !dp->nz_cnt || !dp->stamp || !dp->lim || !dp->row_top)
        goto cleanup;
    /* back[i]: d with a chain of options from (i, d) to (L, 0) */
    back[(size_t)L * W] = 1;
    for (int i = L - 1; i >= 0; i--) {
        uint64_t *row = back + (size_t)i * W;
        for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
            const uint64_t *src = back + (size_t)(dp->opts[o].end + 1) * W;
            size_t ws = (size_t)dp->opts[o].dev / 64;
            unsigned bs = (unsigned)(dp->opts[o].dev % 64);
            /* row |= src << dev, bits above D dropped below */
            for (size_t w = W; w-- > ws;) {
                uint64_t v = src[w - ws] << bs;
                if (bs && w - ws > 0)
                    v |= src[w - ws - 1] >> (64 - bs);
                row[w] |= v;
            }
        }
    }
    /* fwd[i]: d reached from (0, D) through states that can end */
    fwd[D / 64] = (uint64_t)1 << (D % 64);
    for (int i = 0; i < L; i++) {
        uint64_t *row = fwd + (size_t)i * W;
        for (size_t w = 0; w < W; w++)
            row[w] &= back[(size_t)i * W + w];
        for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++)
            bits_or_down(fwd + (size_t)(dp->opts[o].end + 1) * W, row, W, dp->opts[o].dev);
    }
    for (int i = 0; i < L; i++) {
        const uint64_t *b = back + (size_t)i * W, *f = fwd + (size_t)i * W;
        if (dp->dense)
            n += i == 0 ? 1 : (size_t)D - 1;
        else /* the bits d = 1 .. D of b & f, a word at a time */
            for (size_t w = 0; w < W; w++)
                n += (size_t)__builtin_popcountll(b[w] & f[w] & live_word_mask(w, D));
    }
    dp->live = malloc((n + 1) * sizeof *dp->live);
    dp->nz = malloc((n + 1) * sizeof *dp->nz);
    if (!dp->live || !dp->nz)
        goto cleanup;
    n = 0;
    for (int i = 0; i < L; i++) {
        const uint64_t *b = back + (size_t)i * W;
        uint64_t *f = fwd + (size_t)i * W; /* becomes the row's live bits */
        dp->live_off[i] = (int)n;
        for (size_t w = 0; w < W; w++)
            f[w] &= b[w];
        for (int d = 1; d <= D && dp->dense; d++) {
            uint64_t bit = (uint64_t)1 << (d % 64);
            f[d / 64] = (i == 0 ? d == D : d < D) ? f[d / 64] | bit : f[d / 64] & ~bit;
        }
        /* the set bits d = 1 .. D, ascending, as the loop over d read them */
        for (size_t w = 0; w < W; w++)
            for (uint64_t x = f[w] & live_word_mask(w, D); x; x &= x - 1)
                dp->live[n++] = (int)(w * 64) + __builtin_ctzll(x);
    }
    dp->live_off[L] = dp->live_off[L + 1] = (int)n;
    dp->nz[n] = (DpChild){0, 0, 1, 0, 1}; /* the end state (apsolve_dp_tables' place 0) */
    dp->nz_cnt[L] = 1;
    dp->livebits = fwd;
    fwd = NULL;
    rc = dp->dense ? APSOLVE_OK : dp_stage_caps(dp);
cleanup:
    free(back);
    free(fwd);
    return rc;
}

/* apsolve_dp_live's states (live, live_off, livebits, ncap, words) are a
 * function of the Dp's shape (L, D, NS, dense, levels) and its options'
 * rows (opt_off), ends and devices alone: the back and forward chains and
 * the stage caps read nothing else (no item, cost or threshold). So a Dp
 * whose options match those of the one kept in all of these takes the
 * kept states, the same ones apsolve_dp_live would make; the arrays each
 * DP rewrites (nz, nz_cnt, stamp, lim, row_top) are made fresh as there.
 * An apply search's limits (dp.c, solve_apply) mostly keep every option
 * of the last limit, their items alone differing (172 of its 217 Dps of
 * over 1,000 options on the 126-layer 405B). */
static int live_keep_same(const Dp *dp, const DpLiveKeep *k)
{
    int L = dp->L;
    size_t n_opts = (size_t)dp->opt_off[L];
    if (!k->ok || k->L != L || k->D != dp->D || k->NS != dp->NS || k->dense != dp->dense ||
        k->levels != dp->levels || k->n_opts != n_opts)
        return 0;
    for (int i = 0; i <= L; i++)
        if (k->opt_off[i] != dp->opt_off[i])
            return 0;
    for (size_t o = 0; o < n_opts; o++)
        if (k->end_dev[2 * o] != dp->opts[o].end || k->end_dev[2 * o + 1] != dp->opts[o].dev)
            return 0;
    return 1;
}

void apsolve_dp_live_keep_free(DpLiveKeep *k)
{
    free(k->opt_off);
    free(k->end_dev);
    free(k->live);
    free(k->live_off);
    free(k->livebits);
    free(k->ncap);
    free(k->pre);
    free(k->pre_c0);
    memset(k, 0, sizeof *k);
}

/* Keeps dp's states in k (nothing kept when out of memory). */
static void live_keep_store(const Dp *dp, DpLiveKeep *k)
{
    int L = dp->L;
    size_t n_opts = (size_t)dp->opt_off[L], n = (size_t)dp->live_off[L];
    size_t bits = (size_t)(L + 1) * dp->words, caps = (size_t)(L + 1) * (size_t)(dp->D + 1);
    apsolve_dp_live_keep_free(k);
    k->opt_off = malloc((size_t)(L + 1) * sizeof *k->opt_off);
    k->end_dev = malloc((2 * n_opts + 1) * sizeof *k->end_dev);
    k->live = malloc((n + 1) * sizeof *k->live);
    k->live_off = malloc((size_t)(L + 2) * sizeof *k->live_off);
    k->livebits = malloc(bits * sizeof *k->livebits);
    k->ncap = dp->ncap ? malloc(caps * sizeof *k->ncap) : NULL;
    if (!k->opt_off || !k->end_dev || !k->live || !k->live_off || !k->livebits ||
        (dp->ncap && !k->ncap)) {
        apsolve_dp_live_keep_free(k);
        return;
    }
    memcpy(k->opt_off, dp->opt_off, (size_t)(L + 1) * sizeof *k->opt_off);
    for (size_t o = 0; o < n_opts; o++) {
        k->end_dev[2 * o] = dp->opts[o].end;
        k->end_dev[2 * o + 1] = dp->opts[o].dev;
    }
    memcpy(k->live, dp->live, n * sizeof *k->live);
    memcpy(k->live_off, dp->live_off, (size_t)(L + 2) * sizeof *k->live_off);
    memcpy(k->livebits, dp->livebits, bits * sizeof *k->livebits);
    if (dp->ncap)
        memcpy(k->ncap, dp->ncap, caps * sizeof *k->ncap);
    k->L = L;
    k->D = dp->D;
    k->NS = dp->NS;
    k->dense = dp->dense;
    k->levels = dp->levels;
    k->n_opts = n_opts;
    k->ok = 1;
}

int apsolve_dp_live_kept(Dp *dp, DpLiveKeep *k)
{
    int L = dp->L, D = dp->D;
    size_t n_opts = (size_t)dp->opt_off[L], W = (size_t)D / 64 + 1, n;
    size_t caps = (size_t)(L + 1) * (size_t)(D + 1);
    if (!live_keep_same(dp, k)) {
        int rc = apsolve_dp_live(dp);
        if (rc == APSOLVE_OK)
            live_keep_store(dp, k);
        return rc;
    }
    n = (size_t)k->live_off[L];
    /* apsolve_dp_live's arrays, as it makes them (freed with the Dp) */
    dp->words = W;
    dp->live_off = malloc((size_t)(L + 2) * sizeof *dp->live_off);
    dp->nz_cnt = calloc((size_t)(L + 1), sizeof *dp->nz_cnt);
    dp->stamp = calloc((size_t)D + 1, sizeof *dp->stamp);
    dp->lim = calloc(n_opts + 1, sizeof *dp->lim);
    dp->row_top = malloc((size_t)L * sizeof *dp->row_top);
    dp->ran = 0;
    dp->live = malloc((n + 1) * sizeof *dp->live);
    dp->nz = malloc((n + 1) * sizeof *dp->nz);
    dp->livebits = malloc((size_t)(L + 1) * W * sizeof *dp->livebits);
    dp->ncap = k->ncap ? malloc(caps * sizeof *dp->ncap) : NULL;
    if (!dp->live_off || !dp->nz_cnt || !dp->stamp || !dp->lim || !dp->row_top || !dp->live ||
        !dp->nz || !dp->livebits || (k->ncap && !dp->ncap))
        return APSOLVE_ENOMEM;
    memcpy(dp->live_off, k->live_off, (size_t)(L + 2) * sizeof *dp->live_off);
    memcpy(dp->live, k->live, n * sizeof *dp->live);
    memcpy(dp->livebits, k->livebits, (size_t)(L + 1) * W * sizeof *dp->livebits);
    if (k->ncap)
        memcpy(dp->ncap, k->ncap, caps * sizeof *dp->ncap);
    dp->nz[n] = (DpChild){0, 0, 1, 0, 1}; /* the end state (apsolve_dp_tables' place 0) */
    dp->nz_cnt[L] = 1;
    return APSOLVE_OK;
}

/* Ends state (i, d) of dp_run: its frontier from best[1..nmax] (the least
 * sum per stage count n), kept while the sum falls as n grows, or every
 * finite n for an exact stage count; of those, the entries of sum <= vmax
 * (+inf: all; dp_run_live's cut at a bound). Returns its size. An entry's
 * item is not kept: apsolve_dp_entry_item finds it again for the plan's
 * states. */
static int dp_frontier(Dp *dp, int i, int d, int nmax, const double *best, double vmax)
{
    size_t st = (size_t)i * (size_t)(dp->D + 1) + (size_t)d, base = dp->pool_top;
    int cnt = 0;
    double run = INFINITY;
    for (int n = 1; n <= nmax; n++) {
        /* Exact stage count: every finite n is kept (no dominance by fewer
         * stages, which the count forbids). */
        if (dp->exact_n > 0 ? best[n] < INFINITY : best[n] < run) {
            run = best[n];
            if (run <= vmax) {
                dp->front[base + (size_t)cnt] = (int16_t)n;
                dp->val[base + (size_t)cnt++] = run;
            }
        }
    }
    dp->front_cnt[st] = (int16_t)cnt;
    dp->foff[st] = (int32_t)base;
    dp->pool_top += (size_t)cnt;
    return cnt;
}

/* best[0 .. m) against fv[0 .. m) + c: each best[e] replaced only by a
 * strictly smaller sum (minsd/minpd(cand, old) is cand < old ? cand :
 * old, the scalar line's choice), two entries at a time, an odd first
 * one alone. */
static inline void dp_offer_run(const double *fv, int m, double c, double *best)
{
#ifdef __SSE2__
    __m128d cv = _mm_set1_pd(c);
    int e = m & 1;
    if (e)
        _mm_store_sd(best, _mm_min_sd(_mm_add_sd(_mm_load_sd(fv), cv), _mm_load_sd(best)));
    for (; e < m; e += 2)
        _mm_storeu_pd(best + e,
                      _mm_min_pd(_mm_add_pd(_mm_loadu_pd(fv + e), cv), _mm_loadu_pd(best + e)));
#else
    for (int e = 0; e < m; e++) {
        double cand = fv[e] + c, old = best[e];
        best[e] = cand < old ? cand : old;
    }
#endif
}

/* Offers the items it[0 .. lim) of an option (sorted by cost, their stage
 * bounds ascending: dp_prepare keeps an item only above every cheaper
 * one's) the child frontier fn/fv of ccnt >= 1 entries (ascending in n,
 * dp_frontier; ch: its first count n0 and whether its counts run n0, n0 +
 * 1, ... without a gap): best[n] keeps the least sum of n stages,
 * replaced only by a strictly smaller one. The entries offered are those
 * of n <= cap, the most following stages both the state (nmax - 1) and the
 * last item within t fit; each takes the first item that fits its n (q:
 * it[q].mnss >= n), which exists below lim for every n <= cap. it0 and c0
 * are it[0]'s bound and cost. With the counts without a gap, the entries
 * of n <= min(it0, cap), a run from the first, take item 0
 * (dp_offer_run); the rest, one at a time, the item the scalar loop finds
 * from q = 0 (each entry has its own best[n], so the order of the entries
 * changes nothing). The item is not recorded (apsolve_dp_entry_item). */
static inline void dp_offer_child(const int16_t *fn, const double *fv, int ccnt, int n0,
                                  int consec, const DpItem *it, int it0, double c0, int cap,
                                  double *best)
{
    int e = 0, q = 0;
    if (consec) {
        int m = (it0 < cap ? it0 : cap) - n0 + 1;
        if (m > ccnt)
            m = ccnt;
        if (m > 0) {
            dp_offer_run(fv, m, c0, best + n0 + 1);
            e = m;
        }
        /* the rest: none, or counts above cap when item 0 fits up to it */
        if (e == ccnt || it0 >= cap)
            return;
    }
    for (; e < ccnt; e++) {
        int nc = fn[e];
        double cand, old;
        if (nc > cap)
            break;
        while (it[q].mnss < nc)
            q++;
        cand = fv[e] + it[q].cost;
        old = best[nc + 1];
        best[nc + 1] = cand < old ? cand : old;
    }
}

/* Offers option op (its first lim items within t) of state (i, d) of at
 * most nmax stages the frontier of its child (op->end + 1, d - op->dev). */
static void dp_offer(const Dp *dp, const DpOpt *op, int lim, int d, int nmax, double *best)
{
    const DpItem *it = &dp->items[op->item_off];
    size_t cst = (size_t)(op->end + 1) * (size_t)(dp->D + 1) + (size_t)(d - op->dev);
    int ccnt = dp->front_cnt[cst], cap = it[lim - 1].mnss;
    size_t cbase = ccnt ? (size_t)dp->foff[cst] : 0;
    assert(op->end < dp->L && op->dev >= 1 && d - op->dev >= 0 && lim >= 1);
    if (cap > nmax - 1)
        cap = nmax - 1;
    if (ccnt > 0) {
        const int16_t *fn = dp->front + cbase;
        dp_offer_child(fn, dp->val + cbase, ccnt, fn[0], fn[ccnt - 1] - fn[0] == ccnt - 1, it,
                       it[0].mnss, it[0].cost, cap, best);
    }
}

/* The items of option o with cost <= t (sorted by cost). */
static int dp_lim(const Dp *dp, int o, double t)
{
    const DpItem *it = &dp->items[dp->opts[o].item_off];
    int lim = 0;
    while (lim < dp->opts[o].item_n && it[lim].cost <= t)
        lim++;
    return lim;
}

/* The former formulation (dense): every state pulls from its options'
 * children; the tests' reference for dp_run_live. */
static void dp_run_dense(Dp *dp, double t)
{
    for (int i = dp->L - 1; i >= 0; i--) {
        for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++) {
            int d = dp->live[li], nmax = dp_nmax(dp, i, d);
            for (int n = 1; n <= nmax; n++)
                dp->best[n] = INFINITY;
            for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
                int lim = dp_lim(dp, o, t);
                if (dp->opts[o].dev <= d && lim)
                    dp_offer(dp, &dp->opts[o], lim, d, nmax, dp->best);
            }
            dp_frontier(dp, i, d, nmax, dp->best, INFINITY);
        }
    }
}

/* The highest row of dp_run_live's DP at t that the last one's rows do not
 * already hold, and every option's item count within t in dp->lim (rows
 * top .. 0). A row's frontiers depend on t only through the item counts
 * of its options and of the options of the rows after it: a state (i, d)
 * is offered the items within t of row i's options on the frontiers of
 * their children (rows > i), whose frontiers are made the same way; the
 * live states, nmax and the exact stage count are the Dp's own. So when
 * every option of rows r .. top has the count it had in the last DP, rows
 * r .. top hold that DP's frontiers (and nz, nz_cnt): rows are made from
 * the top down, each packed from its row_top on, so rows r .. top lie
 * below the place row r - 1 started at, and a DP that makes rows r - 1 ..
 * 0 again from there overwrites none of them. -1: every row is the last
 * DP's (a threshold admitting the same items). */
static int dp_rows_from(Dp *dp, int top, double t)
{
    int from = dp->ran ? -1 : top;
    for (int i = top; i >= 0; i--)
        for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
            int lim = dp_lim(dp, o, t);
            if (lim != dp->lim[o] && from < i)
                from = i;
            dp->lim[o] = lim;
        }
    dp->ran = 1;
    return from;
}

/* The same DP pushed from the children with a non-empty frontier at t
 * (docs/solver.md, "Live states"): option by option in the order above, so
 * each state (i, d) is offered its candidates in the order the dense loop
 * offers them, and gets the same frontier; a live state offered nothing is
 * empty. Rows the last DP left as this one would make them are kept
 * (dp_rows_from). bound: an upper bound on g(t), +inf none: entries no
 * plan summing <= bound passes through are left out (dp_bound.c, "The
 * cut at an upper bound"). */
static void dp_run_live(Dp *dp, double t, double bound)
{
    int L = dp->L, D = dp->D, NS = dp->NS;
    /* One stage at most (NS = 2: --max-stages 1, the auto search's offload
     * plans, or exactly one stage): a child (i, d) of row 0 other than the
     * end state offers only frontiers of n >= 1 stages, which a plan of one
     * stage cannot extend (dp_offer: nc + 1 > nmax), so rows L - 1 .. 1
     * change nothing the top state reads; they are left empty (nz_cnt 0)
     * and row 0 is offered the end state alone, as it was before. */
    int top = NS == 2 ? 0 : L - 1, from = dp_rows_from(dp, top, t), cut;
    double *rb = dp->rb, ucmp = bound * (1.0 + 0x1p-20);
    unsigned *stamp = dp->stamp;
    const int16_t *front = dp->front;
    const double *val = dp->val;
    DpChild *nz = dp->nz;
    if (bound < INFINITY && !dp->pre)
        apsolve_dp_prefix(dp, bound);
    cut = bound < INFINITY && dp->pre;
    if (!cut)
        bound = INFINITY;
    /* rows cut at a lower bound than this one may lack entries it needs */
    if (bound > dp->rows_bound)
        from = top;
    dp->rows_bound = bound;
    dp->pool_top = from == top ? 1 : from >= 0 ? dp->row_top[from] : dp->pool_top;
    for (int i = from; i >= 0; i--) {
        const int16_t *caps = dp->ncap + (size_t)i * (size_t)(D + 1);
        unsigned gen = ++dp->gen;
        int cnt = 0;
        dp->row_top[i] = dp->pool_top;
        if (gen == 0) { /* wrapped: no stamp may look current */
            memset(stamp, 0, ((size_t)D + 1) * sizeof *stamp);
            gen = dp->gen = 1;
        }
        for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
            const DpOpt *op = &dp->opts[o];
            int lim = dp->lim[o], dev = op->dev, top_n, it0;
            const DpItem *it = &dp->items[op->item_off];
            const DpChild *ch, *chend;
            double c0;
            if (!lim)
                continue;
            top_n = it[lim - 1].mnss; /* dp_offer's cap but for the state's */
            it0 = it[0].mnss;
            c0 = it[0].cost;
            ch = nz + dp->live_off[op->end + 1];
            chend = ch + dp->nz_cnt[op->end + 1];
            /* the children ascend in d: those past D - dev, at the end
             * (few: most options' devices leave every child's d within
             * D), are dropped once here, not tested pair by pair */
            while (chend > ch && chend[-1].d > D - dev)
                chend--;
            for (; ch < chend; ch++) {
                int d = ch->d + dev, nmax, cap;
                double *best;
                /* 0 at a state not live (dp_stage_caps): offered nothing,
                 * as a live state whose cap cuts every entry; such a
                 * state's frontier is empty whether stamped or not */
                nmax = caps[d];
                cap = top_n < nmax - 1 ? top_n : nmax - 1;
                if (ch->n0 > cap)
                    continue;
                best = rb + (size_t)d * (size_t)NS;
                if (stamp[d] != gen) {
                    stamp[d] = gen;
                    for (int n = 1; n <= nmax; n++)
                        best[n] = INFINITY;
                }
                dp_offer_child(front + ch->base, val + ch->base, ch->cnt, ch->n0, ch->consec, it,
                               it0, c0, cap, best);
            }
        }
        for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++) {
            int d = dp->live[li], fc;
            size_t st = (size_t)i * (size_t)(D + 1) + (size_t)d;
            double vmax = cut ? ucmp - dp->pre[st] : INFINITY;
            if (stamp[d] != gen) {
                dp->front_cnt[st] = 0;
            } else if ((fc = dp_frontier(dp, i, d, caps[d], rb + (size_t)d * (size_t)NS, vmax)) >
                       0) {
                int32_t base = dp->foff[st];
                int n0 = front[base], consec = front[base + fc - 1] - n0 == fc - 1;
                nz[dp->live_off[i] + cnt++] = (DpChild){d, base, (int16_t)fc, (int16_t)n0, consec};
            }
        }
        dp->nz_cnt[i] = cnt;
    }
}

/* One threshold DP's rows (dense: the former formulation, never cut). */
void apsolve_dp_rows_below(Dp *dp, double t, double bound)
{
    dp->t = t;
    if (dp->dense) {
        dp->pool_top = 1; /* every row's frontiers made afresh; the end state's kept */
        dp_run_dense(dp, t);
    } else {
        dp_run_live(dp, t, bound);
    }
}

void apsolve_dp_rows(Dp *dp, double t)
{
    apsolve_dp_rows_below(dp, t, INFINITY);
}

/* dp_int.h. The offers the last DP made to best[n] of state (i, d) are,
 * in its order (row i's options ascending: dp_run_live and dp_run_dense
 * visit a state's options in that order, one child each), those of the
 * options with dev <= d and an item within t that fits n - 1 following
 * stages (the last one within t: it[lim - 1].mnss >= n - 1, the cap's
 * bound; n <= the state's nmax, being on its frontier, is the cap's
 * other) whose child (end + 1, d - dev) has an entry of n - 1 stages;
 * each takes the first item q that fits n - 1 (item 0's run and the
 * scalar loop alike) and offers that entry's sum + it[q].cost, replacing
 * best[n] only when strictly smaller. Replayed here with the same sums
 * (the same frontiers: every row it reads, kept or made again, holds this
 * DP's values; lim at dp->t, as dp_rows_from counted it), the same
 * compare and order, the last replacement is the offer the DP kept. */
int apsolve_dp_entry_item(const Dp *dp, int i, int d, int n)
{
    double best = INFINITY;
    int item = -1;
    for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
        const DpOpt *op = &dp->opts[o];
        const DpItem *it = &dp->items[op->item_off];
        size_t cst, base;
        int lim, q = 0, cnt;
        if (op->dev > d)
            continue;
        lim = dp_lim(dp, o, dp->t);
        if (!lim || it[lim - 1].mnss < n - 1)
            continue;
        cst = (size_t)(op->end + 1) * (size_t)(dp->D + 1) + (size_t)(d - op->dev);
        cnt = dp->front_cnt[cst];
        base = cnt ? (size_t)dp->foff[cst] : 0;
        for (int e = 0; e < cnt; e++) {
            double cand;
            if (dp->front[base + (size_t)e] != n - 1)
                continue;
            while (it[q].mnss < n - 1)
                q++;
            cand = dp->val[base + (size_t)e] + it[q].cost;
            if (cand < best) {
                best = cand;
                item = op->item_off + q;
            }
            break;
        }
    }
    return item;
}
