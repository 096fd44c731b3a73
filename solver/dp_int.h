/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tables of the exact stage/mesh search (solver/dp.c, docs/solver.md):
 * options and items of each row, the live states, the frontier per state.
 * Private to dp.c and dp_rows.c (one threshold DP's rows).
 */
#ifndef APSOLVE_DP_INT_H
#define APSOLVE_DP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"

typedef struct DpItem {
    double cost;
    int mnss;                         /* clamped to L */
    int config;
    int opt;                          /* index of its DpOpt */
} DpItem;

/* An item of the shared table (ApsolveDpShared): a DpItem less its
 * stage count bound, which only a prep gives, with its entry's apply cost
 * beside it. 24 bytes where a DpItem and a separate apply cost took 32:
 * 10 MB less to write on the 126-layer file, and each prep's read of an
 * item and its apply cost one place, not two (docs/perf-apsdense.md). */
typedef struct DpSharedItem {
    double cost;
    double apply;                     /* apply_cost of its entry */
    int config;
    int entry;                        /* its entry's index (apsolve_index) */
} DpSharedItem;

typedef struct DpOpt {
    int end, submesh, dev;
    int item_off, item_n;
} DpOpt;

/* What a search may leave out (apsolve_solve_below): every apply limit and
 * threshold whose lower bound reaches bar (+inf: nothing), and with first
 * everything after its first plan whose total_cost is below bar. */
typedef struct DpCut {
    double bar;
    int first;
} DpCut;

/* A state of a row with a non-empty frontier, as dp_run_live reads it
 * when it offers that frontier to the states above (dp_rows.c): its
 * devices, its frontier's first place and size, its first stage count,
 * and whether its counts run n0, n0 + 1, ... without a gap. */
typedef struct DpChild {
    int32_t d, base;
    int16_t cnt, n0;
    int32_t consec;
} DpChild;

/* Chains of plans found on one table (dp_bound.c): a plan's stages as
 * (first layer, last layer, submesh), the last plan of each stage count,
 * a few counts kept; later searches on the table read them as bounds
 * (apsolve_dp_upper) whatever their own options and items: a chain a Dp
 * does not hold bounds nothing there. */
enum { DP_CHAINS_KEPT = 8 };
typedef struct DpChains {
    int n[DP_CHAINS_KEPT];
    int *ijs[DP_CHAINS_KEPT];         /* [3 n] */
    int next;
} DpChains;

typedef struct Dp {
    const ApsolveProblem *p;
    const ApsolveOptions *opt;
    int L, D, NS;                     /* NS = most stages + 1 */
    DpOpt *opts;
    int *opt_off;                     /* [L + 1] */
    DpItem *items;
    int *live;                        /* per row i, the device counts d a plan can hold */
    int *live_off;                    /* [L + 2]: row i is live[live_off[i] .. live_off[i+1]) */
    uint64_t *livebits;               /* [(L + 1) W]: bit d of row i set when (i, d) is live */
    size_t words;                     /* W = D / 64 + 1 */
    DpChild *nz;                      /* per row, the live states with a non-empty frontier in
                                       * the last run, d ascending (at live_off[i]; row L: the
                                       * end state) */
    int *nz_cnt;                      /* [L + 1] */
    double *rb;                       /* scratch of a row: best sum per (d, n) */
    unsigned *stamp;                  /* [D + 1]: rb of d was reset for the row of this gen */
    unsigned gen;
    int dense;                        /* every d a state, visited as before (tests' reference) */
    double *cands;
    size_t n_cands;
    /* The frontiers of one threshold DP, packed in the order it makes them
     * (row L's end state at place 0, then row L - 1's states by d, ...):
     * state st's entry e at place foff[st] + e (e < front_cnt[st]) holds
     * the stage count n and the least sum of n stages (its item is found
     * again where a plan reads it: apsolve_dp_entry_item). Packed,
     * the DP's read of a child's frontier (dp_offer) is one short run, and
     * the children of one option (d ascending) lie next to each other,
     * rather than NS places a state apart (docs/performance.md, "apsolve
     * on the 126-layer 405B: the time by phase, and six exact cuts", 2).
     * Room for (L+1)(D+1)NS. */
    double *val;
    int16_t *front;
    int32_t *foff;                    /* [(L+1)(D+1)]: a state's first place (read only
                                       * where front_cnt > 0) */
    size_t pool_top;                  /* the next free place (1 at each DP's start) */
    /* Rows kept from the last threshold DP (dp_rows.c, dp_run_live): per
     * option its item count within the last DP's threshold, and per row
     * the place its frontiers start at; ran 0 before the first DP. */
    int *lim;                         /* [n_opts] */
    int16_t *ncap;                    /* [(L+1)(D+1)]: the most stages dp_run_live keeps at a
                                       * live state (dp_rows.c, dp_stage_caps) */
    int levels;                       /* > 0: dp_stage_caps' levels (0: DP_LEVELS) */
    size_t *row_top;                  /* [L] */
    int ran;
    int16_t *front_cnt;               /* [(L+1)(D+1)] */
    double *best;                     /* [NS] */
    double t;                         /* the last threshold DP's t (apsolve_dp_rows) */
    /* The cut at an upper bound on g (dp_rows.c, apsolve_dp_rows_below):
     * pre, per state, a lower bound on the sum of the stages a chain of
     * options from the top (0, D) puts before it (made at the first DP
     * given a finite bound; NULL before); rows_bound, the least bound the
     * rows held were cut at (+inf: none cut, as apsolve_dp_tables leaves
     * it). */
    double *pre;                      /* [(L+1)(D+1)] */
    double *c0;                       /* [n_opts]: each option's least cost, pre's */
    int pre_kept;                     /* pre and c0 are a DpLiveKeep's */
    int nan_cost;                     /* an item's cost is NaN (dp.c, dp_prepare) */
    double rows_bound;
    /* Chains of options (top first) whose sums bound g from above
     * (dp_bound.c, apsolve_dp_upper): that of the least prefix to the end
     * state, and that of the best plan so far; path, the last plan's. */
    int *pre_chain, *chain, *path;    /* [NS] each */
    int pre_chain_n, chain_n, path_n;
    DpChains *store;                  /* the table's chains (NULL: none) */
    long evals;
    double apply_limit;               /* FULL: only entries with apply_cost <= this */
    int mem_n;                        /* stage count the memory rule assumes */
    int exact_n;                      /* > 0: plans of exactly this many stages */
    /* best plan so far */
    ApsolvePlan *plan;
    double plan_obj, plan_max;
    DpCut cut;                        /* thresholds bounded at or above cut.bar left out */
} Dp;

/* The stage options of one search before its apply limit (docs/solver.md,
 * "Objectives"): everything dp_prepare reads but the limit is fixed for
 * the problem, the options and the memory rule's stage count, so the FULL
 * objective's search over apply limits builds it once (solve_apply) and
 * each threshold search only filters it. Per (i, j, submesh), in Alpa's
 * loop order (end descending, submesh ascending), every usable config with
 * its cost, stage count bound and apply cost, sorted by (cost, config). */
typedef struct DpPrep {
    DpOpt *opts;                      /* item_off, item_n into items */
    int *opt_off;                     /* [L + 1] */
    DpItem *items;                    /* .opt: its entry's index */
    double *apply;                    /* per item, apply_cost of its entry */
    size_t n_opts, n_items;
    size_t items_done, apply_done;    /* bytes of items, apply populated (dp_prep.c) */
} DpPrep;

/* What no schedule, chunk count or stage count changes (dp_prep.c): the
 * usable configs of every (i, j, submesh), sorted, and the apply limits. */
typedef struct ApsolveDpShared ApsolveDpShared; /* solver_int.h's, C11 allows both */
struct ApsolveDpShared {
    const ApsolveProblem *p;          /* built for this problem */
    int full;                         /* and an objective FULL (1) or not */
    int built, limits_built;
    DpOpt *opts;                      /* as DpPrep's, every (i, j, submesh) */
    int *opt_off;
    DpSharedItem *items;
    size_t n_opts, n_items;
    double *limits;                   /* apply limits, ascending, last +inf */
    size_t n_limits;
    DpPrep prep;                      /* the one prep of the search now (its buffers) */
    /* Whose prep it is (apsolve_dp_solve_apply): 0 none known, else the run
     * id of the ApsolveCounts (dp_counts.c) whose search built it, for
     * memory-rule stage count prep_n: within one such run p, opt and the
     * table are the same, so a later search of that count reads it as is. */
    unsigned long prep_id;
    int prep_n;
    /* The prep of a search by no count family (1F1B, GPipe: fam NULL, run
     * 0), kept apart from the counts' slot: a function of the table, p,
     * the options and mem_n alone, so a later such search on this table
     * with the same options (bytes) and mem_n reads it as is (the auto
     * search's 1F1B first DPs, then its cut and whole searches after the
     * chunked ones, which use the slot above; docs/performance.md,
     * "apsolve's auto search by phase"). Compared as bytes so that a field
     * added to ApsolveOptions is compared too; options equal but for
     * their padding only build it again. */
    DpPrep plain;
    ApsolveOptions plain_opt;
    int plain_n, plain_ok;
    long plain_builds;                /* how many times it was built (a test reads it) */
    int whole_only;                   /* only ranges of whole chunks under the options
                                       * it is built with (apsolve_solve_below's own) */
    DpChains chains;                  /* plans' chains found on it (dp_bound.c) */
    /* opts, opt_off and items are another table's, lent by
     * apsolve_dp_shared_borrow: read, never freed or written here */
    int borrowed;
};

/* The in-flight counts of one schedule over the stage counts a search
 * tries, and per shared item how many of them (ascending) it fits
 * (dp_prep.c). on 0: every entry takes apsolve_entry_mnss. */
typedef struct DpFamily {
    int on, nmax, nf;
    double *fv;                       /* distinct counts, ascending */
    int *rank;                        /* [(nmax + 1) nmax]: rank of count (n, k) */
    int *bound;                       /* [(nmax + 1) (nf + 1)]: the bound at n of an
                                       * entry fitting u counts; INT_MIN: n not tried */
    int *fit;                         /* per shared item; -1 not yet known, -2 (FIT_NONE,
                                       * dp_prep.c) a negative intermediate */
    int counts;                       /* the stage counts it was made over */
    /* Its own list of the table's items (dp_prep.c, family_list), made at
     * its first prep when it holds two counts or more: per option of whole
     * chunks, the items not dominated at every count it holds, in the
     * table's order, each by its index in the table (lsrc; lopts' item_off
     * and item_n index lsrc). list 0: not made yet; 1: made; -1: not to be
     * made (a bound not monotone in the fit). */
    int list;
    DpOpt *lopts;
    int *loff;                        /* [L + 1] */
    int *lsrc;
    /* The fit counts read so far by memory figures (dp_prep.c, FitMemo):
     * NULL when it could not be made (every fit then read from its entry). */
    struct FitMemo *memo;
} DpFamily;

/* Makes sh hold p's table under opt's objective (kept when it already
 * does). APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_dp_shared_ready(ApsolveDpShared *sh, const ApsolveProblem *p,
                            const ApsolveOptions *opt);
/* The FULL objective's apply limits of sh's problem (kept in sh). */
int apsolve_dp_apply_limits(ApsolveDpShared *sh, const ApsolveProblem *p,
                            const ApsolveOptions *opt, const double **vals, size_t *n_vals);
/* The memory rule's ranks over the stage counts ns[0..count) (ascending,
 * at most nmax), one rule for the DP's count family and ZB-V's floor
 * (chunk_floor_mem.c): *fvp the distinct in-flight counts ascending
 * (*nfp of them); *rankp [(nmax + 1) nmax], count (n, k)'s rank in them;
 * *boundp [(nmax + 1) (nf + 1)], the bound at n of an entry fitting u
 * counts (apsolve_entry_mnss's bisection, "fits" read as rank < u),
 * `unset` at an n not in ns. APSOLVE_OK (the arrays the caller's to
 * free), 1 when an in-flight count is not defined (nothing made) or
 * APSOLVE_ENOMEM. */
int apsolve_count_ranks(const ApsolveOptions *opt, const int *ns, int count, int nmax, int unset,
                        double **fvp, int *nfp, int **rankp, int **boundp);
/* The family of opt's schedule over the stage counts ns[0..count). */
int apsolve_dp_family_init(DpFamily *f, const ApsolveDpShared *sh, const ApsolveProblem *p,
                           const ApsolveOptions *opt, const int *ns, int count);
void apsolve_dp_family_free(DpFamily *f);
/* The options under opt with the memory rule of mem_n stages, from sh
 * (fam: NULL or a family whose counts include mem_n's) into pr: zeroed,
 * or built before from the same sh (its buffers reused). */
int apsolve_dp_prep_build(DpPrep *pr, const ApsolveDpShared *sh, DpFamily *fam,
                          const ApsolveProblem *p, const ApsolveOptions *opt, int mem_n);
void apsolve_dp_prep_free(DpPrep *pr);
/* Sorts a block's items a[0..n) by (cost, config) ascending (finite costs
 * or NaN, one item per config), tmp holding n items (dp_sort.c). */
void apsolve_dp_sort_items(DpItem *a, DpItem *tmp, int n);
/* The same sort of a[0..n) (configs ascending, no NaN cost) that tries
 * first the order hint[0 .. *hint_n) of configs kept by an earlier call
 * (made its own when it fails); pos: C ints of -1, left so (dp_sort.c). */
void apsolve_dp_sort_items_hinted(DpItem *a, DpItem *tmp, int n, int *hint, int *hint_n,
                                  int *pos);
/* Sorts n doubles, each >= +0 or +inf (no NaN, no negative, no -0), in
 * place, ascending: their bit patterns order as the values do, so the
 * result is qsort's with a < compare. -1 when out of memory (v unchanged). */
int apsolve_dp_sort_nonneg(double *v, size_t n);

/* Fills the live states of dp (its options made): live, live_off,
 * livebits, nz, nz_cnt, stamp. APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_dp_live(Dp *dp);

/* The live states of the last Dp made by apsolve_dp_live_kept, with what
 * they were made from (dp_rows.c): the options' rows, ends and devices and
 * the Dp's shape. ok 0: none kept. Zeroed to start. */
typedef struct DpLiveKeep {
    int ok, L, D, NS, dense, levels;
    size_t n_opts;
    int *opt_off;                     /* [L + 1] */
    int *end_dev;                     /* [2 n_opts]: each option's end and dev */
    int *live, *live_off;
    uint64_t *livebits;
    int16_t *ncap;                    /* NULL when dense */
    /* The least prefixes (Dp.pre) of a Dp with these live states, and the
     * least cost of each of its options they were made from (NULL: none;
     * dp_bound.c, apsolve_dp_prefix_kept). */
    double *pre, *pre_c0;
} DpLiveKeep;

/* apsolve_dp_live, its states copied from keep when they were made there
 * from the same options' rows, ends and devices and the same shape, else
 * made and kept there. */
int apsolve_dp_live_kept(Dp *dp, DpLiveKeep *keep);
void apsolve_dp_live_keep_free(DpLiveKeep *keep);
/* The rows L-1 .. 0 of one threshold DP at t: frontiers of every live state
 * (of at most dp->ncap stages: dp_rows.c, dp_stage_caps). */
void apsolve_dp_rows(Dp *dp, double t);
/* The same DP when g at t is known to be at most bound (+inf: nothing
 * known, apsolve_dp_rows): entries no plan of sum <= bound passes through
 * are left out, the top state's least-sum entry (or the exact count's),
 * its plan and every state the plan reads being the ones apsolve_dp_rows
 * makes (dp_rows.c, "The cut at an upper bound"). */
void apsolve_dp_rows_below(Dp *dp, double t, double bound);
/* Makes dp->pre, cut at cap (+inf: none), and dp->pre_chain (dp_bound.c;
 * pre stays NULL when out of memory: nothing cut). */
void apsolve_dp_prefix(Dp *dp, double cap);
/* dp->pre from keep when its live states were kept there
 * (apsolve_dp_live_kept) and keep's prefixes were made from a least cost
 * of every option no higher than dp's; else none. */
void apsolve_dp_prefix_kept(Dp *dp, DpLiveKeep *keep);
/* Hands dp's own prefixes (if any) over to keep, for the next Dp with the
 * same live states (at the end of dp's search). */
void apsolve_dp_prefix_keep(Dp *dp, DpLiveKeep *keep);
/* The sum at t of a chain of n options from the top (top first), added as
 * the DP adds it, when the DP holds that chain (then g(t) <= it), else
 * +inf (dp_bound.c). */
double apsolve_dp_chain_sum(const Dp *dp, const int *chain, int n, double t);
/* The least of above and the sums at t of the chains dp knows (+inf:
 * none, or dense): an upper bound on g(t) when above is one; makes
 * dp->pre when it has none. */
double apsolve_dp_upper(Dp *dp, double t, double above);
/* Keeps the chain of options chain[0 .. n) of a plan of dp in c. */
void apsolve_dp_chains_put(DpChains *c, const Dp *dp, const int *chain, int n);
void apsolve_dp_chains_free(DpChains *c);
/* The item (index into dp->items) of the entry of n stages on state (i,
 * d)'s frontier in the last threshold DP, or -1 when it has none: the
 * offer to that entry the DP kept, found by replaying the state's offers
 * (the DP's rows keep sums only, not the 4-byte item per entry that each
 * offer blended in). */
int apsolve_dp_entry_item(const Dp *dp, int i, int d, int n);
/* The frontier tables of dp (its live states made), with the end state
 * (dp.c). APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_dp_tables(Dp *dp);
/* Frees every buffer of dp (dp.c), its plan included. */
void apsolve_dp_free(Dp *dp);
/* dp.c's steps of a search, for dp_counts.c: the checks, the table and
 * the apply limits (vals NULL unless the FULL objective); the stage counts
 * 1 .. the most stages opt's schedule allows with v chunks into ns, their
 * number; the search of one memory-rule stage count (and exact count,
 * 0: any) over the apply limits, *evals summing its threshold DPs and
 * *cands the largest number of distinct costs. run: 0, or the id of an
 * ApsolveCounts run (every search of it with the same p, opt and sh): the
 * options of mem_n are then built only when sh->prep does not already
 * hold that run's build of mem_n (apsolve_dp_prep_build's inputs, sh, p,
 * opt and mem_n, are then the same, and its family only a cache). */
int apsolve_dp_solve_setup(const ApsolveProblem *p, const ApsolveOptions *opt,
                           ApsolveDpShared *sh, const double **vals, size_t *n_vals);
int apsolve_dp_valid_counts(const ApsolveProblem *p, const ApsolveOptions *opt, int v, int *ns);
int apsolve_dp_solve_apply(const ApsolveProblem *p, const ApsolveOptions *opt,
                           ApsolveDpShared *sh, DpFamily *fam, const double *vals,
                           size_t n_vals, int mem_n, int exact_n, int dense, DpCut cut,
                           unsigned long run, ApsolvePlan **out, long *evals, long *cands);

#endif
