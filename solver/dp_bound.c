/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The threshold DP cut at an upper bound on its answer (dp_rows.c,
 * dp_run_live; docs/performance.md, "apsolve's threshold DPs cut at an
 * upper bound"): the least prefix sum before each state, and the sums of
 * known chains of options that bound g(t) from above.
 *
 * The cut. Given U >= g(t) (the least sum at the top, or its entry of
 * exact_n stages), a state's entry of sum v is left out when v + pre > U,
 * pre a lower bound on the stages a chain from the top (0, D) puts before
 * the state: every plan through it then sums above U >= g, and it is in no
 * optimal plan. Why the DP keeps its answer, plan and ties (in real
 * numbers first; the rounding below). Let V(s, n) be the least sum of a
 * chain of n stages from state s to the end (each stage taking its first
 * item within t that fits the stages after it, within the stage caps),
 * and F(s) the uncut DP's frontier: F(s) holds (n, V(s, n)) exactly when
 * V(s, n) < V(s, m) for every m < n (with exact_n, every finite n), by
 * induction from the end (a chain whose child part is dominated by a
 * child entry of fewer stages is matched by that entry, its stage's first
 * fitting item being no dearer), and each entry's item is that of the
 * first of its least offers (options in order, one child entry each).
 * The cut DP's every entry is the sum of some chain, so its best[n] >=
 * V(s, n). Claim: an entry (n, v) of F(s) with v + P(s) <= U (P the least
 * prefix sum) is on the cut DP's frontier, with the same first least
 * offer. Its offer (option o, child c, child entry (n - 1, w), v = w +
 * cost) has P(c) <= P(s) + cost, so w + P(c) <= U and, by induction, the
 * child holds (n - 1, w): best[n] = v. An earlier offer to best[n] in the
 * cut DP comes from an option o' < o and a child entry (n - 1, w'): when
 * the uncut DP's child holds n - 1 too, with w'' <= w', its offer w'' +
 * cost' > v (it is earlier) gives w' + cost' > v; else that child's n - 1
 * is dominated by an m < n - 1 with V(c', m) <= V(c', n - 1) <= w', and o'
 * offers s V(c', m) + (its first item fitting m) <= w' + cost', so w' +
 * cost' <= v would give V(s, m + 1) <= v with m + 1 < n, which F(s)
 * holding (n, v) excludes. So every earlier offer is above v, the first
 * least one is the uncut DP's, and best[m] >= V(s, m) > v for m < n keeps
 * (n, v) on the frontier. At the top (P = 0) the answer (n, g), g <= U,
 * is kept; no other entry there is below g (each is a chain's sum), nor
 * equal to it with fewer stages (the answer's count is the fewest of sum
 * g), nor another entry of exact_n stages. The plan's states, read from
 * the top by apsolve_dp_entry_item's replay of the same offers, hold the
 * same entries and items. Entries the cut DP keeps where the uncut one's
 * dominate them are sums of chains and change none of this. Rows kept
 * from the last DP were cut at a bound >= this one (dp->rows_bound; else
 * every row is made again): the claim holds there at the larger bound, so
 * at this one.
 *
 * Rounding. The sums v are the DP's floats; P is real. pre is the float
 * least prefix times (1 - 2^-20), at most P (k <= NS additions of
 * non-negative terms err by under k u, u = 2^-53); an entry is left out
 * when v > (U (1 + 2^-20)) - pre in floats, which keeps every entry with v
 * + P <= U (1 + 2^-21). The induction above loses a factor (1 + u) a
 * stage (w + cost <= v (1 + u), v being w + cost rounded), so the claim
 * holds for the entries of n stages with v + P <= U (1 + 2^-22) / (1 +
 * u)^n, the answer's (g <= U, n < 2^30) among them, and each child's
 * within its own count's bound.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"

/* The row of option o (opt_off ascending). */
static int opt_row(const Dp *dp, int o)
{
    int lo = 0, hi = dp->L - 1;
    while (lo < hi) {
        int m = lo + (hi - lo + 1) / 2;
        if (dp->opt_off[m] <= o)
            lo = m;
        else
            hi = m - 1;
    }
    return lo;
}

/* The chain of options of the least prefix to the end state (arg: each
 * state's least option) into chain, top first; its length, 0 when there
 * is none of at most NS - 1 stages. */
static int prefix_chain(const Dp *dp, const int *arg, int *chain)
{
    int i = dp->L, d = 0, n = 0;
    /* from the end back to the top, through each state's least option */
    while (i > 0) {
        int o = arg[(size_t)i * (size_t)(dp->D + 1) + (size_t)d];
        if (o < 0 || n == dp->NS - 1)
            return 0;
        chain[n++] = o;
        i = opt_row(dp, o);
        d += dp->opts[o].dev;
    }
    for (int k = 0; k < n / 2; k++) { /* top first */
        int x = chain[k];
        chain[k] = chain[n - 1 - k];
        chain[n - 1 - k] = x;
    }
    return d == dp->D ? n : 0;
}

/* dp->c0: each option's least item cost (+inf: none; a NaN cost, which
 * no threshold admits, is passed over), made once. 0, or -1 when out of
 * memory. */
static int option_least(Dp *dp)
{
    size_t n_opts = (size_t)dp->opt_off[dp->L];
    if (dp->c0)
        return 0;
    if (!(dp->c0 = malloc((n_opts + 1) * sizeof *dp->c0)))
        return -1;
    for (size_t o = 0; o < n_opts; o++) {
        const DpItem *it = &dp->items[dp->opts[o].item_off];
        double least = INFINITY;
        for (int q = 0; q < dp->opts[o].item_n; q++)
            if (it[q].cost < least)
                least = it[q].cost;
        dp->c0[o] = least;
    }
    return 0;
}

/* The prefixes are a function of the live states (the rows each option
 * leaves from, its end and devices: those DpLiveKeep compares) and of each
 * option's least cost alone, non-decreasing in each cost (every chain of
 * options costs no less), so in a Dp whose options match keep's and cost
 * no less each (an apply search's lower limits mostly) keep's prefixes,
 * cut at their cap or not (apsolve_dp_prefix), are at most its own. */
void apsolve_dp_prefix_kept(Dp *dp, DpLiveKeep *k)
{
    size_t n_opts = (size_t)dp->opt_off[dp->L];
    if (!k->ok || !k->pre || k->n_opts != n_opts || option_least(dp) < 0)
        return;
    for (size_t o = 0; o < n_opts; o++)
        if (!(dp->c0[o] >= k->pre_c0[o]))
            return;
    dp->pre = k->pre;
    dp->pre_kept = 1;
}

void apsolve_dp_prefix_keep(Dp *dp, DpLiveKeep *k)
{
    if (dp->pre_kept) {
        dp->pre = NULL; /* k's */
        dp->pre_kept = 0;
        return;
    }
    if (!dp->pre || !k->ok || !dp->c0)
        return;
    free(k->pre);
    free(k->pre_c0);
    k->pre = dp->pre;
    k->pre_c0 = dp->c0;
    dp->pre = NULL;
    dp->c0 = NULL;
}

/* cap: +inf, or the largest bound the DPs that read pre will be given
 * (apsolve_dp_upper): a state whose least prefix is above it is cut at
 * any such bound whatever its suffix, so its prefix is not passed on, and
 * it and the states reached only through such states get cap itself
 * (their least prefix runs through a state above cap, so is above it:
 * costs are not negative), still a lower bound for a later larger one. */
void apsolve_dp_prefix(Dp *dp, double cap)
{
    int L = dp->L, D = dp->D;
    size_t states = (size_t)(L + 1) * (size_t)(D + 1);
    double *pre, *c0;
    int *arg, *act;
    if (option_least(dp) < 0)
        return; /* no cut (dp_run_live) */
    c0 = dp->c0;
    pre = malloc(states * sizeof *pre);
    /* each state's least option, for the least chain's bound, wanted
     * only when there is no other (apsolve_dp_upper) */
    arg = cap < INFINITY || !dp->pre_chain ? NULL : malloc(states * sizeof *arg);
    act = malloc(((size_t)D + 1) * sizeof *act);
    if (!pre || !act || (cap == INFINITY && dp->pre_chain && !arg)) {
        free(pre);
        free(arg);
        free(act);
        return;
    }
    for (size_t s = 0; s < states; s++)
        pre[s] = INFINITY;
    if (arg)
        memset(arg, 0xff, states * sizeof *arg); /* -1: none */
    pre[D] = 0.0;
    /* row after row, each live state's least prefix through every option
     * (its cheapest item, whatever the threshold), from the row's states
     * within cap (act, d ascending) */
    for (int i = 0; i < L; i++) {
        const double *row = pre + (size_t)i * (size_t)(D + 1);
        int n_act = 0;
        for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++)
            if (row[dp->live[li]] <= cap)
                act[n_act++] = dp->live[li];
        for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1] && n_act; o++) {
            const DpOpt *op = &dp->opts[o];
            size_t cbase = (size_t)(op->end + 1) * (size_t)(D + 1) - (size_t)op->dev;
            double c = c0[o];
            const int *l = act, *lend = act + n_act;
            if (!(c < INFINITY))
                continue;
            while (l < lend && *l < op->dev)
                l++;
            if (arg) {
                for (; l < lend; l++) {
                    double v = row[*l] + c;
                    if (v < pre[cbase + (size_t)*l]) {
                        pre[cbase + (size_t)*l] = v;
                        arg[cbase + (size_t)*l] = o;
                    }
                }
            } else {
                for (; l < lend; l++) {
                    double v = row[*l] + c, *to = &pre[cbase + (size_t)*l];
                    *to = v < *to ? v : *to;
                }
            }
        }
    }
    dp->pre_chain_n = arg ? prefix_chain(dp, arg, dp->pre_chain) : 0;
    free(arg);
    free(act);
    for (size_t s = 0; s < states; s++)
        pre[s] = (pre[s] > cap ? cap : pre[s]) * (1.0 - 0x1p-20);
    dp->pre = pre;
}

/* A chain of options the DP holds is summed as the DP sums it, and then
 * bounds g(t): a chain from the top (0, D) to the end (L, 0) through live
 * states, each state's stage count within its cap (dp->ncap, which the
 * checks below read) and each stage with an item within t that fits the
 * stages after it (its first such item is the one the DP takes, its cap
 * it[lim - 1].mnss reaching the count). By induction from the end, each
 * state s of the chain, n - k stages from the end, has a frontier entry of
 * at most n - k stages and a sum no larger than the chain's from s (the
 * child's entry of m <= n - k - 1 stages is offered to s through the
 * chain's option, whose first item fitting m is no dearer than the one
 * fitting n - k - 1; best[m + 1] falls to it, and the frontier keeps an
 * entry of at most m + 1 stages at most as large). So g, the top's least
 * sum, is at most the chain's; with exact_n (no dominance: the DP's best
 * at each count is the least of its chains) a chain of exactly exact_n
 * stages bounds it the same way. */
double apsolve_dp_chain_sum(const Dp *dp, const int *chain, int n, double t)
{
    int i = 0, d = dp->D;
    double v = 0.0;
    if (!dp->ncap || n < 1 || n > dp->NS - 1 || (dp->exact_n > 0 && n != dp->exact_n))
        return INFINITY;
    for (int k = 0; k < n; k++) {
        int o = chain[k];
        if (i >= dp->L || o < dp->opt_off[i] || o >= dp->opt_off[i + 1] || dp->opts[o].dev > d ||
            dp->ncap[(size_t)i * (size_t)(dp->D + 1) + (size_t)d] < n - k)
            return INFINITY;
        i = dp->opts[o].end + 1;
        d -= dp->opts[o].dev;
    }
    if (i != dp->L || d != 0)
        return INFINITY;
    for (int k = n - 1; k >= 0; k--) { /* from the last stage, as the DP adds */
        const DpOpt *op = &dp->opts[chain[k]];
        const DpItem *it = &dp->items[op->item_off];
        int q = 0;
        while (q < op->item_n && it[q].cost <= t && it[q].mnss < n - 1 - k)
            q++;
        if (q == op->item_n || !(it[q].cost <= t))
            return INFINITY;
        v = v + it[q].cost;
    }
    return v;
}

void apsolve_dp_chains_put(DpChains *c, const Dp *dp, const int *chain, int n)
{
    int slot = c->next, i = 0, *ijs;
    for (int k = 0; k < DP_CHAINS_KEPT; k++)
        if (c->ijs[k] && c->n[k] == n)
            slot = k;
    if (!(ijs = realloc(c->ijs[slot], (size_t)n * 3 * sizeof *ijs)))
        return; /* the slot as it was */
    c->ijs[slot] = ijs;
    c->n[slot] = n;
    if (slot == c->next)
        c->next = (c->next + 1) % DP_CHAINS_KEPT;
    for (int k = 0; k < n; k++) {
        const DpOpt *op = &dp->opts[chain[k]];
        ijs[3 * k] = i;
        ijs[3 * k + 1] = op->end;
        ijs[3 * k + 2] = op->submesh;
        i = op->end + 1;
    }
}

void apsolve_dp_chains_free(DpChains *c)
{
    for (int k = 0; k < DP_CHAINS_KEPT; k++)
        free(c->ijs[k]);
    memset(c, 0, sizeof *c);
}

/* The table's chains as dp's options (NS - 1 stages at most, exact_n's
 * when set) into dp->chain, the one of least sum at t; before dp has a
 * plan of its own. A stage whose (first layer, last layer, submesh) dp
 * has no option of leaves its chain out. */
static void chains_take(Dp *dp, double t)
{
    double least = INFINITY;
    int *tmp = dp->path; /* scratch: read again only after dp_extract fills it */
    if (dp->path_n)
        return;
    for (int k = 0; k < DP_CHAINS_KEPT; k++) {
        const int *ijs = dp->store->ijs[k];
        int n = dp->store->n[k], ok = ijs != NULL && n >= 1 && n <= dp->NS - 1 &&
                                      (dp->exact_n == 0 || n == dp->exact_n);
        double sum;
        for (int q = 0; ok && q < n; q++) {
            int i = ijs[3 * q], o;
            ok = i >= 0 && i < dp->L;
            for (o = ok ? dp->opt_off[i] : 0; ok && o < dp->opt_off[i + 1]; o++)
                if (dp->opts[o].end == ijs[3 * q + 1] && dp->opts[o].submesh == ijs[3 * q + 2])
                    break;
            ok = ok && o < dp->opt_off[i + 1];
            if (ok)
                tmp[q] = o;
        }
        if (ok && (sum = apsolve_dp_chain_sum(dp, tmp, n, t)) < least) {
            least = sum;
            memcpy(dp->chain, tmp, (size_t)n * sizeof *tmp);
            dp->chain_n = n;
        }
    }
}

double apsolve_dp_upper(Dp *dp, double t, double above)
{
    double u = above, c;
    if (dp->dense)
        return INFINITY; /* never cut */
    if (dp->store && !dp->chain_n)
        chains_take(dp, t);
    if (dp->chain_n > 0 && (c = apsolve_dp_chain_sum(dp, dp->chain, dp->chain_n, t)) < u)
        u = c;
    if (dp->path_n > 0 && (c = apsolve_dp_chain_sum(dp, dp->path, dp->path_n, t)) < u)
        u = c;
    /* the prefixes, cut at the first bound known (the later DPs' are
     * mostly lower); with none, whole, for their least chain's bound */
    if (!dp->pre)
        apsolve_dp_prefix(dp, u);
    if (dp->pre_chain_n > 0 &&
        (c = apsolve_dp_chain_sum(dp, dp->pre_chain, dp->pre_chain_n, t)) < u)
        u = c;
    return u;
}
