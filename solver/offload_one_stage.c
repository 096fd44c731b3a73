/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search's activation-offload candidates as one-stage problems
 * (offload_one_stage.h; docs/solver.md, "Activation offload in the auto
 * search"; docs/performance.md, "apsolve: the offload and cp steps
 * without whole-table solves and copies").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "offload_one_stage.h"

int apsolve_offload_pair(const ApsolveProblem *p, int s, int c)
{
    const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
    return cf->valid && p->submeshes[s].hosts == p->cluster_hosts &&
           p->submeshes[s].gpus == p->cluster_gpus &&
           cf->variant.recompute == COSTDB_RECOMPUTE_NONE;
}

int apsolve_offload_one_stage_whole(const ApsolveOffloadSource *src, const ApsolveProblem *p,
                                    int n, ApsolveProblem **out, char *why, size_t len)
{
    int L = p->num_layers, rc;
    ApsolveStageSpec one = {.start_layer = 0, .end_layer = L - 1, .hosts = p->cluster_hosts,
                            .gpus = p->cluster_gpus};
    ApsolveProblem *q = NULL;
    *out = NULL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    if ((rc = apsolve_offload_compose_with(src, p, q, &one, 1, n, why, len)) != 0) {
        apsolve_problem_free(&q);
        return rc;
    }
    /* only what Megatron-Core offloads from: every other entry of the
     * range +inf */
    for (int s = 0; s < q->num_submeshes; s++)
        for (int c = 0; c < q->num_configs; c++) {
            size_t idx = apsolve_index(q, 0, L - 1, s, c);
            if (!apsolve_offload_pair(q, s, c)) {
                q->cost[idx] = INFINITY;
                apsolve_times_drop(q, idx);
            }
        }
    *out = q;
    return APSOLVE_OK;
}

int apsolve_offload_one_stage_make(const ApsolveProblem *p, ApsolveOffloadSource *src,
                                   ApsolveOffloadOneStage *x)
{
    size_t pairs = (size_t)p->num_submeshes * (size_t)p->num_configs;
    unsigned char *keep = malloc(pairs ? pairs : 1);
    int rc;
    memset(x, 0, sizeof *x);
    x->src = *src;
    memset(src, 0, sizeof *src);
    x->layers = p->num_layers;
    if (!keep) {
        apsolve_offload_one_stage_free(x);
        return APSOLVE_ENOMEM;
    }
    for (int s = 0; s < p->num_submeshes; s++)
        for (int c = 0; c < p->num_configs; c++)
            keep[(size_t)s * p->num_configs + c] = (unsigned char)apsolve_offload_pair(p, s, c);
    rc = apsolve_subset_new(p, keep, 0, &x->v);
    free(keep);
    if (!rc)
        rc = apsolve_subset_range_problem(p, &x->v, 0, p->num_layers - 1, &x->q);
    if (rc)
        apsolve_offload_one_stage_free(x);
    return rc;
}

int apsolve_offload_one_stage_new(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                  ApsolveOffloadOneStage *x, char *why, size_t len)
{
    ApsolveOffloadSource src;
    int rc;
    memset(x, 0, sizeof *x);
    if ((rc = apsolve_offload_source_load(db, sweep, &src, why, len)) != 0)
        return rc;
    return apsolve_offload_one_stage_make(p, &src, x);
}

int apsolve_offload_one_stage_compose(ApsolveOffloadOneStage *x, const ApsolveProblem *p, int n,
                                      char *why, size_t len)
{
    int C2 = x->v.num_configs;
    for (int s2 = 0; s2 < x->v.num_submeshes; s2++)
        for (int c2 = 0; c2 < C2; c2++) {
            int c = x->v.config[(size_t)s2 * C2 + c2];
            if (c >= 0 && apsolve_offload_entry(p, &x->src, 0, x->layers - 1, x->v.submesh[s2],
                                                c, n, x->q, apsolve_index(x->q, 0, 0, s2, c2),
                                                why, len) < 0)
                return APSOLVE_EINVAL;
        }
    return APSOLVE_OK;
}

int apsolve_offload_one_stage_solve(const ApsolveOffloadOneStage *x, ApsolveOptions *o,
                                    ApsolvePlan **out)
{
    int e = apsolve_solve_keep_headroom(x->q, o, out);
    if (*out)
        apsolve_subset_range_plan(&x->v, 0, x->layers - 1, *out);
    return e;
}

void apsolve_offload_one_stage_free(ApsolveOffloadOneStage *x)
{
    apsolve_subset_free(&x->v);
    apsolve_problem_free(&x->q);
    apsolve_offload_source_free(&x->src);
}
