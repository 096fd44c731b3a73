/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage options the exact search reads (solver/dp.c, docs/solver.md;
 * docs/performance.md, "apsolve at scale: options shared across stage and
 * chunk counts"), built in two parts:
 *
 * - the shared table (ApsolveDpShared, built by dp_shared.c): per (i, j,
 *   submesh), in Alpa's loop order (end descending, submesh ascending),
 *   every usable config (allowed by the objective, finite cost) sorted by
 *   (cost, config), with its apply cost, and the FULL objective's apply
 *   limits (here). None of it depends on the
 *   schedule, the chunk count v or the stage count n, so one search builds
 *   it once and a chunked schedule's search over v (session_search.c,
 *   try_chunks) shares it across its calls;
 * - a DpPrep per memory-rule stage count: the table's options whose layers
 *   split into whole chunks, each config with its stage count bound
 *   (apsolve_entry_mnss) and those that never fit dropped. A filtered
 *   subsequence of a list sorted by (cost, config), a total order (one
 *   config per item), is what sorting the filtered set gives, so the
 *   options are the ones the search sorted per n before.
 *
 * The bound per (entry, n) of the interleaved and zero-bubble schedules is
 * a bisection over in-flight counts (evaluate.c); a DpFamily makes it once
 * per entry and schedule instead: the in-flight counts of every stage count
 * the search tries are few distinct values, an entry fits a prefix of them
 * in ascending order (its need is non-decreasing in the count when its
 * intermediate is >= 0), so one bisection over them per entry gives that
 * prefix's length u, and each n's bisection is replayed on the ranks of its
 * counts (rank < u: fits), once per (n, u) at the family's start: the
 * same tests answered the same way, hence the same bound. An entry with a
 * negative intermediate takes the bisection itself.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"
#include "page_populate.h"
#include "solver_int.h"

/* The distinct values among keys added (KeySet): an open-addressing set on
 * the bit patterns, which equal exactly when the values do for the keys it
 * holds (>= +0 or +inf: no NaN, no -0). */
typedef struct {
    uint64_t *slot;                   /* EMPTY: free (a NaN's pattern, never a key) */
    size_t cap, n;                    /* cap a power of two, n <= cap / 2 */
} KeySet;

#define KEYSET_EMPTY UINT64_MAX

/* A slot from every bit of the pattern (MurmurHash3's 64-bit finalizer):
 * values such as 0.5, 1, 2, 3 differ only in their high bits. */
static size_t keyset_home(uint64_t b, size_t cap)
{
    b ^= b >> 33;
    b *= UINT64_C(0xFF51AFD7ED558CCD);
    b ^= b >> 33;
    return (size_t)b & (cap - 1);
}

/* Makes ks twice as large (its first 4096 slots), its keys moved. */
static __attribute__((noinline)) int keyset_grow(KeySet *ks)
{
    size_t cap = ks->cap ? 2 * ks->cap : 4096;
    uint64_t *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return -1;
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t k = 0; k < ks->cap; k++)
        if (ks->slot[k] != KEYSET_EMPTY) {
            size_t g = keyset_home(ks->slot[k], cap);
            while (slot[g] != KEYSET_EMPTY)
                g = (g + 1) & (cap - 1);
            slot[g] = ks->slot[k];
        }
    free(ks->slot);
    ks->slot = slot;
    ks->cap = cap;
    return 0;
}

/* Adds x to ks (inlined in the table's loop: the call itself was a third
 * of its cost; the rehash, rare, is keyset_grow's). */
static inline int keyset_add(KeySet *ks, double x)
{
    uint64_t b;
    size_t h;
    memcpy(&b, &x, sizeof b);
    if (2 * (ks->n + 1) > ks->cap && keyset_grow(ks) < 0) /* rehash into twice the slots */
        return -1;
    for (h = keyset_home(b, ks->cap); ks->slot[h] != KEYSET_EMPTY; h = (h + 1) & (ks->cap - 1))
        if (ks->slot[h] == b)
            return 0;
    ks->slot[h] = b;
    ks->n++;
    return 0;
}

/* An entry's apply key when it is usable (allowed, finite cost): negative
 * or unknown counted as 0. */
static int entry_apply_key(const ApsolveProblem *p, const ApsolveOptions *opt, size_t k,
                           double *key)
{
    int s, c;
    if (!(p->cost[k] < INFINITY)) /* +inf or NaN: never usable */
        return 0;
    s = (int)(k / (size_t)p->num_configs % (size_t)p->num_submeshes);
    c = (int)(k % (size_t)p->num_configs);
    if (isinf(apsolve_entry_cost(p, k)) || !apsolve_config_allowed(p, opt, s, c))
        return 0;
    *key = p->apply_cost[k] > 0 ? p->apply_cost[k] : 0;
    return 1;
}

/* The apply limits of the FULL objective's search: the distinct apply
 * costs (negative or unknown counted as 0) of the usable entries, ascending,
 * the last replaced by +inf (0 values: no usable entry). They depend on the
 * problem and the configs the objective allows only, so sh keeps them for
 * every stage count and chunk count. The usable entries are sh's items
 * (built first: apsolve_dp_shared_ready) and those of the submeshes its
 * table leaves out (no device, or more than the cluster's), read from the
 * problem; only ranges i <= j are read (apsolve.h: j < i is no range and
 * has no cell); their distinct values are gathered
 * in a KeySet before the sort (a full-space table has some 200,000 items
 * and some 17,000 distinct apply costs). */
int apsolve_dp_apply_limits(ApsolveDpShared *sh, const ApsolveProblem *p,
                            const ApsolveOptions *opt, const double **vals, size_t *n_vals)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs, D = p->num_devices;
    KeySet ks = {0};
    size_t m = 0;
    double *v, key;
    if (sh->limits_built) {
        *vals = sh->limits;
        *n_vals = sh->n_limits;
        return APSOLVE_OK;
    }
    if (!sh->built)
        return APSOLVE_EINVAL;
    for (size_t k = 0; k < sh->n_items; k++)
        if (keyset_add(&ks, sh->items[k].apply > 0 ? sh->items[k].apply : 0) < 0)
            goto nomem;
    for (int s = 0; s < S; s++) {
        int dev = p->submeshes[s].hosts * p->submeshes[s].gpus;
        if (p->submeshes[s].hosts >= 1 && p->submeshes[s].gpus >= 1 && dev <= D)
            continue; /* in the table */
        for (int i = 0; i < L; i++)
            for (int j = i; j < L; j++)
                for (int c = 0; c < C; c++)
                    if (entry_apply_key(p, opt, apsolve_index(p, i, j, s, c), &key) &&
                        keyset_add(&ks, key) < 0)
                        goto nomem;
    }
    v = malloc((ks.n ? ks.n : 1) * sizeof *v);
    if (!v)
        goto nomem;
    for (size_t k = 0; k < ks.cap; k++)
        if (ks.slot[k] != KEYSET_EMPTY)
            memcpy(&v[m++], &ks.slot[k], sizeof *v);
    free(ks.slot);
    if (apsolve_dp_sort_nonneg(v, m) < 0) {
        free(v);
        return APSOLVE_ENOMEM;
    }
    /* The last value admits every entry (negative, unknown, counts as 0). */
    if (m)
        v[m - 1] = INFINITY;
    sh->limits = v;
    sh->n_limits = m;
    sh->limits_built = 1;
    *vals = v;
    *n_vals = m;
    return APSOLVE_OK;
nomem:
    free(ks.slot);
    return APSOLVE_ENOMEM;
}

/* The fit counts a family has worked out, by memory figures (DpFamily.memo).
 * A fit count (apsolve_entry_fit_prefix) is a pure function of the
 * entry's figures (peak, initial, intermediate, avail), the options (the
 * memory rule, and avail's budget, apsolve_search_budget) and the
 * family's counts fv; within one family the options and the counts are
 * fixed (DpFamily.fit, kept across its preps, already rests on that), so
 * entries of equal figures have equal fit counts. The figures repeat
 * across a model's uniform layers (the ranges of one length on one
 * submesh and config), so an item whose figures were met before takes
 * their fit count rather than working it out again (0.67 G instructions
 * of 2.9 M fits on the 126-layer 405B). A direct-mapped cache: a slot per
 * hash of the figures, holding the last figures to reach it; a miss works
 * the fit out as before and takes the slot. */
typedef struct FitMemo {
    int64_t peak, intermediate, initial, avail;
    int fit, used;
} FitMemo;

enum { FIT_MEMO_BITS = 15, FIT_MEMO_SLOTS = 1 << FIT_MEMO_BITS };

void apsolve_dp_family_free(DpFamily *f)
{
    free(f->fv);
    free(f->rank);
    free(f->bound);
    free(f->fit);
    free(f->lopts);
    free(f->loff);
    free(f->lsrc);
    free(f->memo);
    memset(f, 0, sizeof *f);
}

int apsolve_dp_family_init(DpFamily *f, const ApsolveDpShared *sh, const ApsolveProblem *p,
                           const ApsolveOptions *opt, const int *ns, int count)
{
    int nmax = 0;
    memset(f, 0, sizeof *f);
    /* the cases apsolve_entry_mnss answers by the bisection over counts */
    if (!p->memory || opt->ignore_memory || opt->inference || count < 1 ||
        opt->schedule == APSOLVE_SCHEDULE_1F1B || opt->schedule == APSOLVE_SCHEDULE_GPIPE)
        return APSOLVE_OK;
    for (int q = 0; q < count; q++)
        nmax = ns[q] > nmax ? ns[q] : nmax;
    f->nmax = nmax;
    f->fit = malloc((sh->n_items ? sh->n_items : 1) * sizeof *f->fit);
    if (!f->fit) {
        apsolve_dp_family_free(f);
        return APSOLVE_ENOMEM;
    }
    switch (apsolve_count_ranks(opt, ns, count, nmax, INT_MIN, &f->fv, &f->nf, &f->rank,
                                &f->bound)) {
    case APSOLVE_OK:
        break;
    case 1: /* not a count: every entry takes the bisection */
        apsolve_dp_family_free(f);
        return APSOLVE_OK;
    default:
        apsolve_dp_family_free(f);
        return APSOLVE_ENOMEM;
    }
    /* every item's written next: its fresh pages in one call, not a fault
     * each (a family per chunked search's counts; 5 MB on the 126-layer file) */
    cdb_populate(f->fit, sh->n_items * sizeof *f->fit);
    for (size_t k = 0; k < sh->n_items; k++)
        f->fit[k] = -1; /* not yet known */
    /* without it every fit is worked out from its entry, as before */
    f->memo = calloc(FIT_MEMO_SLOTS, sizeof *f->memo);
    f->counts = count;
    f->on = 1;
    return APSOLVE_OK;
}

/* DpFamily.fit of an entry with a negative intermediate (its need falls
 * as the count grows: no prefix), which takes the bisection at every n. */
enum { FIT_NONE = -2 };

/* apsolve_search_budget of the last avail asked for: a pure function of
 * (opt, avail), and a table's entries share a few avails (one per device
 * kind), so one build works it out once per change of avail rather than
 * once per entry. */
typedef struct {
    int set;
    int64_t avail, budget;
} BudgetMemo;

static int64_t memo_budget(BudgetMemo *b, const ApsolveOptions *opt, int64_t avail)
{
    if (!b->set || b->avail != avail) {
        b->avail = avail;
        b->budget = apsolve_search_budget(opt, avail);
        b->set = 1;
    }
    return b->budget;
}

/* A slot of FitMemo by its figures: a multiplicative hash, its top bits
 * (a slot shared by other figures only costs a fit worked out again). */
static size_t fit_memo_slot(const ApsolveMemory *m)
{
    uint64_t h = (uint64_t)m->peak ^ (uint64_t)m->initial * 3 ^ (uint64_t)m->intermediate * 5 ^
                 (uint64_t)m->avail * 7;
    return (size_t)((h * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - FIT_MEMO_BITS));
}

/* item_fit's work when the fit is not known yet: from the memo, else
 * worked out (kept out of line: item_fit's known fits are most calls). */
static __attribute__((noinline)) int item_fit_read(DpFamily *f, BudgetMemo *b,
                                                   const ApsolveProblem *p,
                                                   const ApsolveOptions *opt, size_t k, size_t idx)
{
    const ApsolveMemory *m = apsolve_memory_at(p, idx);
    FitMemo *e;
    if (m->intermediate < 0) { /* not a prefix: the bisection, always */
        f->fit[k] = FIT_NONE;
        return f->fit[k];
    }
    e = f->memo ? &f->memo[fit_memo_slot(m)] : NULL;
    if (e && e->used && e->peak == m->peak && e->intermediate == m->intermediate &&
        e->initial == m->initial && e->avail == m->avail) {
        f->fit[k] = e->fit;
        return f->fit[k];
    }
    f->fit[k] = apsolve_entry_fit_prefix(m, opt, memo_budget(b, opt, m->avail), f->fv, f->nf);
    if (e)
        *e = (FitMemo){m->peak, m->intermediate, m->initial, m->avail, f->fit[k], 1};
    return f->fit[k];
}

/* The fit count of shared item k (entry idx) in family f (on, with
 * memory): the length of the prefix of its counts the entry fits, or
 * FIT_NONE for a negative intermediate; read once, then kept. */
static inline int item_fit(DpFamily *f, BudgetMemo *b, const ApsolveProblem *p,
                           const ApsolveOptions *opt, size_t k, size_t idx)
{
    return f->fit[k] != -1 ? f->fit[k] : item_fit_read(f, b, p, opt, k, idx);
}

/* The bound of shared item k (entry idx) for a plan of n stages, through
 * the family when it is on (the file's comment), else the bisection. */
static int item_mnss(DpFamily *f, BudgetMemo *b, const ApsolveProblem *p,
                     const ApsolveOptions *opt, size_t k, size_t idx, int n)
{
    int m;
    /* an item's fit count, once known, answers every n of the family
     * without reading its entry (a cache miss per item and prep, the top
     * cost of a chunked search's preps) */
    if (f && f->on && n <= f->nmax && f->fit[k] >= 0) {
        m = f->bound[(size_t)n * ((size_t)f->nf + 1) + (size_t)f->fit[k]];
        if (m != INT_MIN)
            return m;
    }
    {
        int64_t budget = p->memory ? memo_budget(b, opt, apsolve_memory_at(p, idx)->avail) : 0;
        if (!f || !f->on || n > f->nmax || item_fit(f, b, p, opt, k, idx) == FIT_NONE)
            return apsolve_entry_mnss_within(p, opt, idx, n, budget);
        m = f->bound[(size_t)n * ((size_t)f->nf + 1) + (size_t)f->fit[k]];
        return m == INT_MIN ? apsolve_entry_mnss_within(p, opt, idx, n, budget) : m;
    }
}

void apsolve_dp_prep_free(DpPrep *pr)
{
    free(pr->opts);
    free(pr->opt_off);
    free(pr->items);
    free(pr->apply);
    memset(pr, 0, sizeof *pr);
}

/* An item within apply limit x (x >= 0, dp_prepare: !(apply > x)) exactly
 * when its key is <= x: a NaN or an apply <= 0 is within every limit. */
static double apply_key(double apply)
{
    return isnan(apply) || apply <= 0 ? 0 : apply;
}

/* An earlier item of an option (apply key ka, bound or fit km) dominates
 * an item (a, m) when ka <= a and km >= m: within every apply limit the
 * item is within, the earlier one is too and fits as many stages, so
 * dp_prepare never keeps the item (and dropping it changes no later
 * item's verdict: its top is the earlier one's at least). Every earlier
 * item kept is checked (Stairs, below), so an item is kept exactly when no
 * earlier item of the option dominates it: an earlier one left out was
 * dominated by one kept before it, which then dominates this one too. */
typedef struct {
    double a;
    int m;
} Kept;

/* The items kept so far, as a staircase: of the kept (a, m), those no
 * other kept one dominates (a smaller or equal key, a bound or fit no
 * smaller), a ascending with m strictly ascending. An item is dominated
 * by some kept one exactly when it is by a step (each kept one is
 * dominated by a step or is one), and, m ascending, by a step exactly
 * when it is by the last step of a <= its key: one look from the top,
 * against a scan of every kept one (most steps are a few; with no apply
 * limit, every key 0, there is one). */
typedef struct {
    Kept *s;
    int n;
} Stairs;

static inline int stairs_last_within(const Stairs *st, double a)
{
    int k = st->n - 1;
    while (k >= 0 && st->s[k].a > a)
        k--;
    return k;
}

static inline int dominated_by(const Stairs *st, double a, int m)
{
    int k = stairs_last_within(st, a);
    return k >= 0 && st->s[k].m >= m;
}

/* Whether a step dominates (a, m); if none does, adds it: it takes the
 * place of a step of its own key (whose m is smaller), and the steps after
 * it of m no larger (dominated by it now) go. Mostly an append: the
 * steps are moved by hand, a call to memmove per item cost more than the
 * scan it saves. */
static inline int stairs_offer(Stairs *st, double a, int m)
{
    int k = stairs_last_within(st, a), at, past, shift;
    if (k >= 0 && st->s[k].m >= m)
        return 1;
    at = k >= 0 && st->s[k].a == a ? k : k + 1;
    past = k + 1;
    while (past < st->n && st->s[past].m <= m)
        past++;
    shift = 1 - (past - at); /* the steps gained: 1 (inserted), 0 or fewer */
    if (shift > 0)
        for (int q = st->n; q > at; q--)
            st->s[q] = st->s[q - 1];
    else if (shift < 0)
        for (int q = past; q < st->n; q++)
            st->s[q + shift] = st->s[q];
    st->s[at] = (Kept){a, m};
    st->n += shift;
    return 0;
}

/* A bound of the family as the prep keeps it: -1 never fits, else at most L. */
static int bound_kept(int m, int L)
{
    return m < 0 ? -1 : m > L ? L : m;
}

/* The family's list (DpFamily.list): made once, then every prep of one of
 * its counts reads it instead of the table. Its bound at count n of an
 * item fitting u counts, bound_kept(bound[n][u]), is checked
 * non-decreasing in u for every count it holds (else no list: -1). Then
 * an item fitting no count (u = 0: the bisection's first test fails at
 * every n) never fits, and an item is dominated at every count by an
 * earlier item of no larger apply key and no smaller fit count (its bound
 * no smaller at each n), or of every count fitted (bound L at each n)
 * whatever its own; those are left out of the list. An item of a
 * negative intermediate (FIT_NONE) is checked only against the latter and
 * dominates none. So each count's prep from the list keeps exactly the
 * items it keeps from the table: an item the list leaves out has, at
 * that count, an earlier dominator that fits, and the list's items are
 * the table's in its order. */
static int family_list(DpFamily *f, const ApsolveDpShared *sh, const ApsolveProblem *p,
                       const ApsolveOptions *opt)
{
    int L = p->num_layers, nf = f->nf, C = p->num_configs;
    int limited = opt->objective == APSOLVE_OBJECTIVE_FULL && !opt->inference;
    size_t n_opts = 0, n_items = 0;
    BudgetMemo memo = {0};
    Stairs kept = {0};
    f->list = -1;
    for (int n = 1; n <= f->nmax; n++) {
        const int *row = f->bound + (size_t)n * ((size_t)nf + 1);
        if (row[0] == INT_MIN)
            continue; /* not one of its counts */
        for (int u = 1; u <= nf; u++)
            if (bound_kept(row[u], L) < bound_kept(row[u - 1], L))
                return APSOLVE_OK;
    }
    f->lopts = malloc((sh->n_opts ? sh->n_opts : 1) * sizeof *f->lopts);
    f->loff = malloc((size_t)(L + 1) * sizeof *f->loff);
    f->lsrc = malloc((sh->n_items ? sh->n_items : 1) * sizeof *f->lsrc);
    kept.s = malloc((size_t)(C ? C : 1) * sizeof *kept.s);
    if (!f->lopts || !f->loff || !f->lsrc || !kept.s) {
        free(kept.s);
        return APSOLVE_ENOMEM; /* freed with the family */
    }
    for (int i = 0; i < L; i++) {
        f->loff[i] = (int)n_opts;
        for (int o = sh->opt_off[i]; o < sh->opt_off[i + 1]; o++) {
            const DpOpt *so = &sh->opts[o];
            int nt = 0;
            if (!apsolve_chunks_whole(opt, i, so->end))
                continue;
            kept.n = 0;
            for (int k = so->item_off; k < so->item_off + so->item_n; k++)
                if (f->fit[k] == -1)
                    __builtin_prefetch(apsolve_memory_at(p, (size_t)sh->items[k].entry));
            for (int k = so->item_off; k < so->item_off + so->item_n; k++) {
                double a = limited ? apply_key(sh->items[k].apply) : 0;
                int u;
                if (dominated_by(&kept, a, nf)) /* an earlier one fits every count */
                    continue;
                u = item_fit(f, &memo, p, opt, (size_t)k, (size_t)sh->items[k].entry);
                if (u == 0 || (u != FIT_NONE && stairs_offer(&kept, a, u)))
                    continue; /* else kept (a FIT_NONE item is no step) */
                f->lsrc[n_items + (size_t)nt++] = k;
            }
            if (!nt)
                continue;
            f->lopts[n_opts] = *so;
            f->lopts[n_opts].item_off = (int)n_items;
            f->lopts[n_opts].item_n = nt;
            n_items += (size_t)nt;
            n_opts++;
        }
    }
    f->loff[L] = (int)n_opts;
    free(kept.s);
    f->list = 1;
    return APSOLVE_OK;
}

/* The pages of pr's items and apply (cap items each) faulted in ahead of
 * writes up to item used, as shared_build's: the buffers are made once
 * per table and reused, so a later build finds them populated (the
 * counts are 0 with fresh buffers). */
static void prep_populate(DpPrep *pr, size_t cap, size_t used)
{
    cdb_populate_ahead(pr->items, cap * sizeof *pr->items, used * sizeof *pr->items,
                       &pr->items_done);
    cdb_populate_ahead(pr->apply, cap * sizeof *pr->apply, used * sizeof *pr->apply,
                       &pr->apply_done);
}

/* dp_prepare keeps an item at a limit only when it fits more stages than
 * every earlier (cheaper) item of its option within that limit; an item
 * with an earlier one whose apply key is no larger (within every limit it
 * is within) and whose bound is no smaller is kept at no limit, so it is
 * left out here: each limit's options, items and candidates are the same.
 * The items are read from the table, or, for a count of a family of two
 * counts or more, from the family's list (family_list): the same prep. */
int apsolve_dp_prep_build(DpPrep *pr, const ApsolveDpShared *sh, DpFamily *fam,
                          const ApsolveProblem *p, const ApsolveOptions *opt, int mem_n)
{
    int L = p->num_layers, C = p->num_configs;
    int unbounded = opt->ignore_memory || opt->inference;
    /* the FULL objective's search over apply limits (dp.c, solve_apply);
     * otherwise every item is within the one limit, +inf */
    int limited = opt->objective == APSOLVE_OBJECTIVE_FULL && !opt->inference;
    BudgetMemo memo = {0};
    /* where the items are read: the table's, or the family's list */
    const DpOpt *sopts = sh->opts;
    const int *soff = sh->opt_off, *src = NULL;
    int known = fam && fam->on && mem_n <= fam->nmax; /* its fits answer mem_n */
    Stairs kept = {0};
    if (known && fam->counts >= 2 && !unbounded && p->memory &&
        fam->bound[(size_t)mem_n * ((size_t)fam->nf + 1)] != INT_MIN) {
        if (!fam->list && family_list(fam, sh, p, opt) != APSOLVE_OK)
            return APSOLVE_ENOMEM;
        if (fam->list == 1) {
            sopts = fam->lopts;
            soff = fam->loff;
            src = fam->lsrc;
        }
    }
    /* the buffers, as large as sh's, are made once and reused: a search
     * builds one prep per (n, v), and fresh buffers of a full-space table
     * (15 MB) cost their page faults each time */
    if (!pr->opts) {
        pr->items_done = pr->apply_done = 0;
        pr->opts = malloc((sh->n_opts ? sh->n_opts : 1) * sizeof *pr->opts);
        pr->opt_off = malloc((size_t)(L + 1) * sizeof *pr->opt_off);
        pr->items = malloc((sh->n_items ? sh->n_items : 1) * sizeof *pr->items);
        pr->apply = malloc((sh->n_items ? sh->n_items : 1) * sizeof *pr->apply);
        if (!pr->opts || !pr->opt_off || !pr->items || !pr->apply) {
            apsolve_dp_prep_free(pr);
            return APSOLVE_ENOMEM;
        }
    }
    if (!(kept.s = malloc((size_t)(C ? C : 1) * sizeof *kept.s)))
        return APSOLVE_ENOMEM;
    pr->n_opts = pr->n_items = 0;
    for (int i = 0; i < L; i++) {
        pr->opt_off[i] = (int)pr->n_opts;
        for (int o = soff[i]; o < soff[i + 1]; o++) {
            const DpOpt *so = &sopts[o];
            int nt = 0;
            kept.n = 0;
            /* interleaved: a stage splits into v chunks of whole layers
             * (the list holds only those) */
            if (!src && !apsolve_chunks_whole(opt, i, so->end))
                continue;
            prep_populate(pr, sh->n_items, pr->n_items + (size_t)so->item_n);
            /* the entries whose memory figures item_mnss reads below
             * (those of items whose fit the family does not know yet), all
             * asked for before the first is read: each is a cache miss
             * (an option's configs are scattered over the table), and this
             * way they overlap rather than queue one behind the other;
             * reads nothing else but each one's slot (apsolve_memory_at) */
            if (!unbounded && p->memory)
                for (int k = so->item_off; k < so->item_off + so->item_n; k++)
                    if (!known || fam->fit[src ? src[k] : k] == -1)
                        __builtin_prefetch(
                            apsolve_memory_at(p, (size_t)sh->items[src ? src[k] : k].entry));
            for (int k = so->item_off; k < so->item_off + so->item_n; k++) {
                size_t t = src ? (size_t)src[k] : (size_t)k; /* in the table */
                const DpSharedItem *si = &sh->items[t];
                double a = limited ? apply_key(si->apply) : 0;
                int m;
                /* an earlier item with no larger apply key and the largest
                 * bound (L) dominates this one whatever its bound: left
                 * out before its memory test */
                if (dominated_by(&kept, a, L))
                    continue;
                m = unbounded ? APSOLVE_UNBOUNDED
                              : item_mnss(fam, &memo, p, opt, t, (size_t)si->entry, mem_n);
                if (m < 0)
                    continue;
                m = m > L ? L : m;
                if (stairs_offer(&kept, a, m)) /* else kept */
                    continue;
                pr->items[pr->n_items + (size_t)nt] = (DpItem){si->cost, m, si->config, si->entry};
                pr->apply[pr->n_items + (size_t)nt] = si->apply;
                nt++;
            }
            if (!nt)
                continue;
            pr->opts[pr->n_opts] = *so;
            pr->opts[pr->n_opts].item_off = (int)pr->n_items;
            pr->opts[pr->n_opts].item_n = nt;
            pr->n_items += (size_t)nt;
            pr->n_opts++;
        }
    }
    pr->opt_off[L] = (int)pr->n_opts;
    free(kept.s);
    return APSOLVE_OK;
}
