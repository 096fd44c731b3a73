/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HSDP step of a --parallel ZeRO-3 plan (session_int.h): the
 * candidate whose ZeRO-3 entries are HSDP stages (hsdp.h) with
 * dp_shard=S and FSDP2's reshard_after_forward, the figures it changes
 * per stage as messages, and the refusals of what it cannot price
 * (docs/hsdp.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "costdb_text.h"
#include "hsdp.h"
#include "session.h"
#include "session_int.h"

static void layout_of(const ApsolveParallel *pr, ApsolveHsdpLayout *l)
{
    *l = (ApsolveHsdpLayout){pr->dp, pr->tp, pr->dp_shard > 0 ? pr->dp_shard : pr->dp,
                             !pr->raf_off};
}

void apsolve_hsdp_say(ApsolveRun *r, const ApsolvePlan *g)
{
    const ApsolveCand *c = &r->hsdp_c;
    ApsolveHsdpLayout l;
    if (!r->have_hsdp_c || !g || r->a->quiet)
        return;
    layout_of(&r->a->par, &l);
    for (size_t k = 0; k < g->n_stages; k++) {
        const ApsolveStage *st = &g->stages[k];
        ApsolveHsdpStage x;
        char why[200];
        if (st->submesh < 0 || st->config < 0 || st->variant.zero != 3 ||
            apsolve_hsdp_stage(r->db, c->sweep, c->p->cluster_gpus, st->start_layer,
                               st->end_layer, st->submesh, st->config, &l, &x, why,
                               sizeof why) || !(x.param_bytes > 0))
            continue;
        char head[96];
        if (l.shard < l.dp)
            snprintf(head, sizeof head, "HSDP shard %d x replicate %d%s", l.shard,
                     l.dp / l.shard, l.raf ? "" : ", raf=0");
        else
            snprintf(head, sizeof head, "ZeRO-3 over dp=%d with raf=0", l.dp);
        apsolve_say(r->a, "%s, stage %zu (layers %d-%d): %.0f bytes of sharded parameters, "
                    "%.0f per GPU (ZeRO-3 over dp=%d: %.0f); %d all-gathers a phase over %d "
                    "GPUs (%.6g s; over %d: %.6g s)%s, %d reduce-scatters (%.6g s; over %d: "
                    "%.6g s); the shard's all-reduce over %d replicas %.6g s an iteration; peak "
                    "%+lld bytes, initial %+lld bytes", head, k, st->start_layer, st->end_layer,
                    x.param_bytes, x.param_bytes / l.shard, l.dp, x.param_bytes / l.dp,
                    x.modules, l.shard, x.gather_after, l.dp, x.gather_before,
                    l.raf ? "" : " in the forward, none in the backward (kept gathered)",
                    x.modules, x.rs_after, l.dp, x.rs_before, l.dp / l.shard, x.allreduce,
                    (long long)x.peak_delta, (long long)x.initial_delta);
    }
}

int apsolve_run_hsdp(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    const ApsolveCand *eq = *pc;
    ApsolveHsdpLayout l;
    ApsolveHsdpStage *st;
    const char *what = a->parallel ? a->parallel : "of the stored plan";
    char why[400] = "";
    int rc;
    if (pr->zero != 3 || (pr->dp_shard <= 0 && !pr->raf_off))
        return 0;
    layout_of(pr, &l);
    if (a->opt.inference)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: dp_shard and raf price "
                            "training (the backward's gathers and reduce-scatters, the "
                            "gradient all-reduce); not with --inference", what);
    if (a->batch > 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: --batch does not re-price "
                            "an HSDP plan (give the new batch with --global-batch)", what);
    /* The serial schedule's collectives add up; an overlapping one's
     * exposed part is a replay of the stage's kernels, which the database
     * does not keep (docs/variants.md, "ZeRO-3 overlap") */
    if (apsolve_zero3_schedule_of(eq->sw.options) != APSOLVE_ZERO3_SERIAL)
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: the sweep prices ZeRO-3 "
                            "with the %s overlap schedule, whose exposed collectives are a "
                            "replay of the stage's kernels that the database does not keep; "
                            "dp_shard and raf re-price the serial schedule's (approf sweep "
                            "--zero3-schedule serial)", what,
                            apsolve_zero3_schedule_name(apsolve_zero3_schedule_of(eq->sw.options)));
    if (!(st = calloc(r->nspec ? r->nspec : 1, sizeof *st)))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    rc = apsolve_hsdp_problem(r->db, eq->sweep, eq->p, r->specs, r->nspec, &l, &r->hsdp_c.p, st,
                              why, sizeof why);
    free(st);
    if (rc)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, rc == APSOLVE_ENOMEM ? "out of memory"
                            : "--parallel %s: %s", what, why);
    r->have_hsdp_c = 1;
    r->hsdp_c.sweep = eq->sweep;
    r->hsdp_c.sw = eq->sw;
    r->hsdp_c.opt = eq->opt;
    r->hsdp_c.global_batch = eq->global_batch;
    r->hsdp_c.micro = eq->micro;
    *pc = &r->hsdp_c;
    return 0;
}
