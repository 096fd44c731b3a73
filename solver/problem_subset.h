/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A problem restricted to some of its (submesh, config) pairs (not part of
 * the public API): the auto search's context- and expert-parallel steps
 * solve problems in which every other pair's entries are +inf (a cp plan
 * runs each stage with cp, a plan of one layout runs one submesh and
 * logical mesh). The DP (dp_prep.c, shared_build) makes its stage options
 * of the finite entries only, in the order (end descending, submesh
 * ascending, then cost and config), so a copy that leaves those pairs out, keeping the
 * others' order, has the same options under other indices and the DP the
 * same plan, thresholds and counts (docs/solver.md, "Context parallelism
 * in the auto search"). It copies only the pairs kept, instead of the whole
 * table; the plan's indices go back with apsolve_subset_plan.
 */
#ifndef APSOLVE_PROBLEM_SUBSET_H
#define APSOLVE_PROBLEM_SUBSET_H

#include "apsolve.h"

/* Which pairs of a problem p are kept, and where. */
typedef struct ApsolveSubset {
    int num_submeshes, num_configs;   /* S', C' of the copy (C' >= 1: padding) */
    int *submesh;                     /* [S'] p's submesh of the copy's s' */
    int *config;                      /* [S' * C'] p's config of (s', c'); -1 padding */
    int *at;                          /* [S * C] the copy's s' * C' + c' of p's (s, c); -1 out */
} ApsolveSubset;

/* The subset of p's pairs with keep[s * C + c] set (configs valid only),
 * their order kept; every submesh stays when all_submeshes, else only
 * those with a pair kept. 0; APSOLVE_ENOMEM; APSOLVE_ENOTFOUND when no
 * pair is kept and !all_submeshes (nothing to copy). */
int apsolve_subset_new(const ApsolveProblem *p, const unsigned char *keep, int all_submeshes,
                       ApsolveSubset *out);
/* The same with only the submeshes with a pair kept, and every submesh,
 * each of padding, when no pair is kept (no APSOLVE_ENOTFOUND): for a
 * step whose left-out pairs would be +inf, as a submesh with no pair kept
 * gives no stage option, floor term or layout (the cp and ep candidates;
 * docs/performance.md, "The cp candidates' subsets without empty
 * submeshes"). 0; APSOLVE_ENOMEM. */
int apsolve_subset_new_kept(const ApsolveProblem *p, const unsigned char *keep,
                            ApsolveSubset *out);
void apsolve_subset_free(ApsolveSubset *v);
/* The copy of p's entries of v's pairs, every layer range i..j (each table p
 * has, its unfit figures included); its padding configs are invalid and
 * +inf. 0; APSOLVE_ENOMEM; APSOLVE_EINVAL. */
int apsolve_subset_problem(const ApsolveProblem *p, const ApsolveSubset *v,
                           ApsolveProblem **out);
/* The one pass of that copy without the unfit figures (q->unfit_table
 * NULL), for a step that reads them from p and transforms each entry as it
 * copies it (the cp candidates, apsolve_cp_auto_table): the problem, every
 * entry as apsolve_problem_new makes it, and entry b of it becoming entry a
 * of p, every table it has (a table p lacks keeps apsolve_problem_new's
 * value, as apsolve_problem_clone copies it). The subset's problem is the
 * shell with every entry (i <= j, s', c' not padding) so copied. 0;
 * APSOLVE_ENOMEM (a place for unfit figures). */
int apsolve_subset_shell_less_unfit(const ApsolveProblem *p, const ApsolveSubset *v,
                                    ApsolveProblem **out);
int apsolve_subset_copy_entry(const ApsolveProblem *p, size_t a, ApsolveProblem *q, size_t b);
/* The copy of p's entries of v's pairs for the one layer range
 * first..last of p, as a problem of one layer: its entry (0, 0, s', c') is
 * p's (first, last, s, c), every table p has. Its plans are the one-stage
 * plans of p on those layers (the auto search's activation-offload step,
 * offload_one_stage.h). 0; APSOLVE_ENOMEM; APSOLVE_EINVAL. */
int apsolve_subset_range_problem(const ApsolveProblem *p, const ApsolveSubset *v, int first,
                                 int last, ApsolveProblem **out);
/* Plan pl of that copy as a plan of p: its stage on layers first..last,
 * its submesh and config p's indices. */
void apsolve_subset_range_plan(const ApsolveSubset *v, int first, int last, ApsolvePlan *pl);
/* Plan pl of v's copy as a plan of p: each stage's submesh and config
 * index p's. */
void apsolve_subset_plan(const ApsolveSubset *v, ApsolvePlan *pl);

#endif
