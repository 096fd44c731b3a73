/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve --framework megatron's search beside a layout's stored
 * variants (session_framework.c, docs/solver.md "The best plan a
 * framework runs"): the two knobs Megatron-LM runs that no sweep stores
 * as a variant, priced as --parallel prices them.
 *
 * - recompute=full,recompute_layers=K for each K of 1 .. the chunk's
 *   layers - 1 (Megatron-LM core_v0.19.0 --recompute-method block
 *   --recompute-num-layers K, megatron/core/recompute.py
 *   `checkpointed_forward`, the 'block' branch: the first K layers of
 *   each model chunk), composed from the stored full and none entries
 *   (recompute_layers.h). K = the chunk's layers is plain full, which the
 *   search prices already. Every K is priced, not the auto step's one
 *   (session_rlayers.c picks by the objective alone, the search by its
 *   own rule: the headroom first, then the full estimate).
 * - offload=N for each N of 1 .. the stage's layers - 1 on a pp=1 layout
 *   with recompute=none (Megatron-Core core_v0.19.0
 *   --cpu-offloading-num-layers; its TransformerConfig refuses a pipeline
 *   and recomputation with it), where the sweep's hardware row gives the
 *   host link (activation_offload.h); a spec without one prices none.
 *
 * Both compose into one clone of the candidate's problem, rewritten for
 * each K or N (apsolve_recompute_layers_compose, apsolve_offload_compose:
 * the owners of the pricing), so a layout costs one clone, not one a K.
 */
#include <stdlib.h>
#include <string.h>

#include "activation_offload.h"
#include "apsolve.h"
#include "costdb.h"
#include "recompute_layers.h"
#include "session.h"
#include "session_int.h"

/* The layers of each of `chunks` chunks of the specs' stages (the
 * fewest), or 0 when the chunks do not split a stage (--parallel refuses
 * recompute_layers then: session_rlayers.c). */
static int chunk_layers(const ApsolveStageSpec *sp, size_t n, int chunks)
{
    int m = 0;
    for (size_t t = 0; t < n; t++) {
        int l = sp[t].end_layer - sp[t].start_layer + 1;
        if (l % chunks)
            return 0;
        if (!m || l / chunks < m)
            m = l / chunks;
    }
    return m;
}

/* *scratch: a clone of c's problem, made the first time one is needed. */
static int scratch_of(const ApsolveCand *c, ApsolveProblem **scratch)
{
    return *scratch ? APSOLVE_OK : apsolve_problem_clone(c->p, scratch);
}

int apsolve_fw_partial(const ApsolveRun *r, const ApsolveCand *c, ApsolveParallel *par,
                       int plain_schedule, int has_none, ApsolveProblem **scratch,
                       ApsolveFwTry try_fn, void *ctx)
{
    const ApsolveProblem *p = c->p;
    int cp = par->cp > 1 ? par->cp : 1, chunks = par->vpp > 1 ? par->vpp : 1, rc = 0, m;
    size_t n = (size_t)par->pp;
    ApsolveStageSpec *sp;
    ApsolveCand cc = *c;
    char why[400];
    /* --batch re-prices neither (session_rlayers.c, session_offload.c) */
    if (r->a->batch > 0 || !p->memory)
        return 0;
    if (!(sp = calloc(n, sizeof *sp)))
        return 1;
    /* the stages of the layout as apsolve_fw_try_layout and parallel_plan make them */
    if (apsolve_3d_specs(p->num_layers, p->cluster_gpus, par->dp * cp, par->tp, par->pp, sp))
        goto done;
    m = par->recompute == COSTDB_RECOMPUTE_FULL && has_none ? chunk_layers(sp, n, chunks) : 0;
    for (int k = 1; k < m && !rc; k++) {
        if ((rc = scratch_of(c, scratch)) != APSOLVE_OK ||
            (rc = apsolve_recompute_layers_compose(p, *scratch, sp, n, k, chunks)) != 0) {
            rc = rc == APSOLVE_ENOMEM;
            break;
        }
        cc.p = *scratch;
        par->recompute_layers = k;
        rc = try_fn(ctx, &cc, par);
    }
    par->recompute_layers = 0;
    /* offload: one stage, one chunk, the layout's own schedule */
    if (par->recompute != COSTDB_RECOMPUTE_NONE || par->pp != 1 || chunks != 1 ||
        !plain_schedule)
        goto done;
    for (int k = 1; k < sp[0].end_layer - sp[0].start_layer + 1 && !rc; k++) {
        int e;
        if ((e = scratch_of(c, scratch)) != APSOLVE_OK ||
            (e = apsolve_offload_compose(r->db, c->sweep, p, *scratch, sp, n, k, why,
                                         sizeof why)) != 0) {
            /* no host link, no per-layer record: no offload plan here */
            rc = e == APSOLVE_ENOMEM;
            break;
        }
        cc.p = *scratch;
        par->offload = k;
        rc = try_fn(ctx, &cc, par);
    }
    par->offload = 0;
done:
    free(sp);
    return rc;
}
