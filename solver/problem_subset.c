/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A problem restricted to some of its (submesh, config) pairs
 * (problem_subset.h): the copy the auto search's cp and ep steps solve
 * instead of a whole table with the other pairs +inf.
 */
#include <stdlib.h>
#include <string.h>

#include "problem_subset.h"

void apsolve_subset_free(ApsolveSubset *v)
{
    free(v->submesh);
    free(v->config);
    free(v->at);
    memset(v, 0, sizeof *v);
}

int apsolve_subset_new(const ApsolveProblem *p, const unsigned char *keep, int all_submeshes,
                       ApsolveSubset *out)
{
    int S = p->num_submeshes, C = p->num_configs, ns = 0, nc = 1;
    memset(out, 0, sizeof *out);
    for (int s = 0; s < S; s++) {
        int n = 0;
        for (int c = 0; c < C; c++)
            n += keep[(size_t)s * C + c] && p->configs[(size_t)s * C + c].valid;
        ns += all_submeshes || n > 0;
        nc = n > nc ? n : nc;
    }
    if (!ns)
        return APSOLVE_ENOTFOUND;
    out->num_submeshes = ns;
    out->num_configs = nc;
    out->submesh = malloc((size_t)ns * sizeof *out->submesh);
    out->config = malloc((size_t)ns * (size_t)nc * sizeof *out->config);
    out->at = malloc((size_t)S * (size_t)C * sizeof *out->at);
    if (!out->submesh || !out->config || !out->at) {
        apsolve_subset_free(out);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < (size_t)S * (size_t)C; k++)
        out->at[k] = -1;
    for (size_t k = 0; k < (size_t)ns * (size_t)nc; k++)
        out->config[k] = -1;
    ns = 0;
    for (int s = 0; s < S; s++) {
        int n = 0;
        for (int c = 0; c < C; c++)
            if (keep[(size_t)s * C + c] && p->configs[(size_t)s * C + c].valid) {
                out->config[(size_t)ns * nc + n] = c;
                out->at[(size_t)s * C + c] = ns * nc + n;
                n++;
            }
        if (all_submeshes || n > 0)
            out->submesh[ns++] = s;
    }
    return APSOLVE_OK;
}

int apsolve_subset_new_kept(const ApsolveProblem *p, const unsigned char *keep,
                            ApsolveSubset *out)
{
    int rc = apsolve_subset_new(p, keep, 0, out);
    return rc == APSOLVE_ENOTFOUND ? apsolve_subset_new(p, keep, 1, out) : rc;
}

/* A problem of L layers on p's cluster with v's pairs (their submeshes and
 * configs; padding invalid), every entry as apsolve_problem_new makes it,
 * and an unfit table of padding where p has one. */
static int shell(const ApsolveProblem *p, const ApsolveSubset *v, int L, int unfit,
                        ApsolveProblem **out)
{
    ApsolveProblem *q = NULL;
    int with = p->times && p->memory, rc;
    int S2 = v->num_submeshes, C2 = v->num_configs;
    *out = NULL;
    if ((rc = apsolve_problem_new(L, p->cluster_hosts, p->cluster_gpus, S2, C2, with, &q)) !=
        APSOLVE_OK)
        return rc;
    if (p->unfit_table && unfit && apsolve_unfit_table_new(q) != APSOLVE_OK) {
        apsolve_problem_free(&q); /* its padding has nothing to restore */
        return APSOLVE_ENOMEM;
    }
    for (int s2 = 0; s2 < S2; s2++) {
        q->submeshes[s2] = p->submeshes[v->submesh[s2]];
        for (int c2 = 0; c2 < C2; c2++) {
            int c = v->config[(size_t)s2 * C2 + c2];
            if (c >= 0)
                q->configs[(size_t)s2 * C2 + c2] =
                    p->configs[(size_t)v->submesh[s2] * p->num_configs + c];
        }
    }
    q->sweep_id = p->sweep_id;
    *out = q;
    return APSOLVE_OK;
}

int apsolve_subset_shell_less_unfit(const ApsolveProblem *p, const ApsolveSubset *v,
                                    ApsolveProblem **out)
{
    return shell(p, v, p->num_layers, 0, out);
}

int apsolve_subset_copy_entry(const ApsolveProblem *p, size_t a, ApsolveProblem *q, size_t b)
{
    q->cost[b] = p->cost[a];
    q->max_n_succ_stages[b] = p->max_n_succ_stages[a];
    q->apply_cost[b] = p->apply_cost[a];
    if (q->times) {
        if (apsolve_times_put(q, b, apsolve_times_at(p, a)) != APSOLVE_OK ||
            apsolve_memory_put(q, b, apsolve_memory_at(p, a)) != APSOLVE_OK)
            return APSOLVE_ENOMEM;
    }
    if (q->unfit_table && apsolve_unfit_at(p, a))
        return apsolve_unfit_put(q, b, apsolve_unfit_at(p, a));
    return APSOLVE_OK;
}

int apsolve_subset_problem(const ApsolveProblem *p, const ApsolveSubset *v, ApsolveProblem **out)
{
    ApsolveProblem *q = NULL;
    int L = p->num_layers, S2 = v->num_submeshes, C2 = v->num_configs, rc;
    if ((rc = shell(p, v, L, 1, &q)) != APSOLVE_OK)
        return rc;
    /* every layer range i..j of the pairs kept (j < i is no range: no
     * cell, apsolve_index) */
    for (int i = 0; i < L && rc == APSOLVE_OK; i++)
        for (int j = i; j < L && rc == APSOLVE_OK; j++)
            for (int s2 = 0; s2 < S2; s2++)
                for (int c2 = 0; c2 < C2; c2++) {
                    int c = v->config[(size_t)s2 * C2 + c2];
                    if (c >= 0 && rc == APSOLVE_OK)
                        rc = apsolve_subset_copy_entry(
                            p, apsolve_index(p, i, j, v->submesh[s2], c), q,
                            apsolve_index(q, i, j, s2, c2));
                }
    if (rc != APSOLVE_OK)
        apsolve_problem_free(&q);
    *out = q;
    return rc;
}

int apsolve_subset_range_problem(const ApsolveProblem *p, const ApsolveSubset *v, int first,
                                 int last, ApsolveProblem **out)
{
    ApsolveProblem *q = NULL;
    int S2 = v->num_submeshes, C2 = v->num_configs, rc;
    *out = NULL;
    if (first < 0 || last < first || last >= p->num_layers)
        return APSOLVE_EINVAL;
    if ((rc = shell(p, v, 1, 1, &q)) != APSOLVE_OK)
        return rc;
    for (int s2 = 0; s2 < S2; s2++)
        for (int c2 = 0; c2 < C2; c2++) {
            int c = v->config[(size_t)s2 * C2 + c2];
            if (c >= 0 && rc == APSOLVE_OK)
                rc = apsolve_subset_copy_entry(
                    p, apsolve_index(p, first, last, v->submesh[s2], c), q,
                    apsolve_index(q, 0, 0, s2, c2));
        }
    if (rc != APSOLVE_OK)
        apsolve_problem_free(&q);
    *out = q;
    return rc;
}

void apsolve_subset_range_plan(const ApsolveSubset *v, int first, int last, ApsolvePlan *pl)
{
    apsolve_subset_plan(v, pl);
    for (size_t k = 0; pl && k < pl->n_stages; k++) {
        pl->stages[k].start_layer = first;
        pl->stages[k].end_layer = last;
    }
}

void apsolve_subset_plan(const ApsolveSubset *v, ApsolvePlan *pl)
{
    for (size_t k = 0; pl && k < pl->n_stages; k++) {
        ApsolveStage *st = &pl->stages[k];
        int s2 = st->submesh, c2 = st->config;
        if (s2 < 0 || s2 >= v->num_submeshes)
            continue;
        st->submesh = v->submesh[s2];
        if (c2 >= 0 && c2 < v->num_configs)
            st->config = v->config[(size_t)s2 * v->num_configs + c2];
    }
}
