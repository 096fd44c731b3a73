/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The context-parallel step of a --parallel plan (session_int.h): the
 * candidate whose entries are cp stages (context_parallel.h), and the
 * refusals of a layout the model or the request cannot take
 * (docs/context-parallel.md).
 */
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "plural.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

/* What cp adds to each stage, said once per stage (its first config of
 * the equivalent layout; the variants share the attention's shapes). */
static void say_stages(const ApsolveRun *r, const ApsolveCand *eq, const ApsolveCpLayout *l)
{
    const ApsolveProblem *p = eq->p;
    for (size_t k = 0; k < r->nspec; k++) {
        const ApsolveStageSpec *sp = &r->specs[k];
        ApsolveCpStage x;
        char why[200];
        int s = apsolve_find_submesh(p, sp->hosts, sp->gpus), c = -1;
        char rerun[120] = "", ring[240] = "", merge[200] = "";
        /* the first of the requested recomputation, else the first */
        for (int pass = 0; pass < 2 && c < 0; pass++)
            for (int q = 0; s >= 0 && q < p->num_configs && c < 0; q++) {
                const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + q];
                if (cf->valid && cf->logical_a == l->dp * l->cp && cf->logical_b == l->tp &&
                    cf->force_batch_dim == 0 &&
                    (pass || (int)cf->variant.recompute == l->recompute))
                    c = q;
            }
        if (c < 0)
            continue;
        ApsolveCpLayout m = *l;
        m.recompute = p->configs[(size_t)s * p->num_configs + c].variant.recompute;
        if (apsolve_cp_stage(r->db, eq->sweep, p, sp->start_layer, sp->end_layer, s, c, &m, &x,
                             why, sizeof why))
            continue;
        if (x.rerun > 0)
            snprintf(rerun, sizeof rerun, ", of it %.6g s the forward's exchange that %s "
                     "recomputation reruns", x.rerun,
                     costdb_recompute_name(m.recompute));
        if ((x.attn_fwd != 0 || x.attn_bwd != 0) && x.ag_keys_max > 0)
            snprintf(ring, sizeof ring, "; the all-gathered K/V's attention kernels over %lld "
                     "to %lld keys' work, %+.6g s forward and %+.6g s backward against the "
                     "entry's over %lld", (long long)x.ag_keys_min, (long long)x.ag_keys_max,
                     x.attn_fwd, x.attn_bwd, (long long)x.seq);
        else if (x.attn_fwd > 0 || x.attn_bwd > 0)
            snprintf(ring, sizeof ring, "; the ring's attention kernels over %lld keys, "
                     "+%.6g s forward and +%.6g s backward against the entry's over %lld",
                     (long long)x.ring_keys, x.attn_fwd, x.attn_bwd, (long long)x.seq);
        if (x.merge_fwd > 0 || x.merge_bwd > 0)
            snprintf(merge, sizeof merge, "; PyTorch's ring (cp_ring_torch): K and V at the "
                     "query heads, its f32 merges +%.6g s forward and +%.6g s backward",
                     x.merge_fwd, x.merge_bwd);
        apsolve_say(r->a, "notice: cp stage %zu (layers %d-%d): %d attention layers; per "
                    "micro-batch and GPU the %s sends %.1f MiB forward and %.1f MiB backward "
                    "(+%.6g s, +%.6g s%s), receive buffers %.1f MiB%s%s", k, sp->start_layer,
                    sp->end_layer, x.attention_layers, apsolve_cp_comm_name(l->comm),
                    x.traffic_fwd / 1048576.0, x.traffic_bwd / 1048576.0, x.comm_fwd,
                    x.comm_bwd, rerun, (double)x.buffers / 1048576.0, ring, merge);
    }
}

/* The one rule of how many micro-batches a cp plan runs (session_int.h).
 * A micro-batch of the cp plan is mbs x dp sequences, each split over its
 * cp GPUs on the sequence (Megatron-Core core_v0.19.0:
 * megatron/core/utils.py _get_batch_on_this_cp_rank_per_sequence_balancing
 * cuts every [mbs, seq, ...] tensor of a micro-batch into 2 cp chunks of
 * the sequence; megatron/training/arguments.py validate_args counts data
 * parallelism without cp, world / (tp pp cp), and
 * num_microbatches_calculator.py runs G / (mbs x dp) micro-batches;
 * torchtitan 9dec370: train.py hands each dp rank its local batch and
 * create_context_parallel_ctx, torchtitan/utils.py, shards inputs and
 * labels on dimension 1, the sequence, over the cp mesh). Its twin (the
 * entry of (dp cp, tp), one of mbs whole sequences per GPU, at micro-batch
 * m = mbs x dp x cp, B of them) supplies per-micro-batch figures only,
 * which do not depend on the twin sweep's global batch, so the count is
 * the cp plan's own, G / (m / cp): cp x B when m divides G (every plan
 * priced before), else from G itself -- a global batch of fewer sequences
 * than m, or one not whole twin micro-batches (docs/context-parallel.md,
 * "A global batch of fewer sequences than the twin's micro-batch"). A
 * stored plan's count (stored > 0, --plan) is given. m or G unknown (<= 0):
 * cp x B. The callers' bound (COSTDB_MAX_MICRO_BATCHES) and messages are
 * theirs: --parallel refuses (cp_micro_batches below), the auto search's
 * cp step leaves the candidate out (session_autocp.c). */
ApsolveCpCount apsolve_cp_micro_batches(int64_t global_batch, int64_t micro, int batches, int cp,
                                        int stored, int64_t *count)
{
    *count = 0;
    if (stored > 0) {
        *count = stored;
        return APSOLVE_CP_COUNT_STORED;
    }
    if (micro > 0 && micro % cp)
        return APSOLVE_CP_COUNT_NOT_WHOLE;
    if (micro > 0 && global_batch > 0 && global_batch % micro) {
        if (global_batch % (micro / cp))
            return APSOLVE_CP_COUNT_NOT_WHOLE;
        *count = global_batch / (micro / cp);
        return APSOLVE_CP_COUNT_BATCH;
    }
    *count = (int64_t)batches * cp;
    return APSOLVE_CP_COUNT_TWIN;
}

/* The micro-batches the --parallel or stored cp plan runs (*count), by
 * apsolve_cp_micro_batches on the twin eq, with its refusals and notice.
 * 0, or 1 after a message. */
static int cp_micro_batches(ApsolveRun *r, const ApsolveCand *eq, const char *what, int *count)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    int64_t per = eq->micro > 0 ? eq->micro / pr->cp : 0, n;
    /* apsolve_run_cp refused a micro-batch that cp does not divide, so
     * NOT_WHOLE is a global batch not whole micro-batches of m / cp */
    ApsolveCpCount how = apsolve_cp_micro_batches(eq->global_batch, eq->micro,
                                                  eq->opt.micro_batches, pr->cp,
                                                  pr->cp_micro_batches, &n);
    if (how == APSOLVE_CP_COUNT_NOT_WHOLE)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: the global batch %lld "
                            "is not whole micro-batches of mbs x dp = %lld %s (a cp plan's "
                            "micro-batch: each of its sequences split over cp = %d GPUs)",
                            what, (long long)eq->global_batch, (long long)per,
                            costdb_plural(per, "sequence", "sequences"), pr->cp);
    if (how == APSOLVE_CP_COUNT_BATCH && !a->quiet)
        apsolve_say(a, "notice: --parallel %s: the global batch %lld is not whole "
                    "micro-batches of the dp x cp twin's %lld samples: the cp plan runs "
                    "%lld %s of %lld, each sequence split over %d GPUs, priced from sweep "
                    "%lld's entries at micro-batch %lld (one micro-batch's figures, which "
                    "do not depend on that sweep's global batch %lld)", what,
                    (long long)eq->global_batch, (long long)eq->micro, (long long)n,
                    costdb_plural(n, "micro-batch", "micro-batches"), (long long)per,
                    pr->cp, (long long)eq->sweep, (long long)eq->micro,
                    (long long)eq->sw.global_batch);
    if (n > COSTDB_MAX_MICRO_BATCHES)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: the cp plan's %lld "
                            "micro-batches are more than %d (COSTDB_MAX_MICRO_BATCHES)", what,
                            (long long)n, COSTDB_MAX_MICRO_BATCHES);
    *count = (int)n;
    return 0;
}

int apsolve_run_cp(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    const ApsolveCand *eq = *pc;
    ApsolveCpLayout l = {pr->dp, pr->tp, pr->cp, pr->cp_comm, 0, pr->recompute};
    /* a --parallel layout, or that of a stored plan (--plan) */
    const char *what = a->parallel ? a->parallel : "of the stored plan";
    char why[400] = "";
    int64_t seq = 0;
    int attention = 0, rc, count = 0;
    if (pr->cp <= 1)
        return 0;
    if (a->opt.inference)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: cp=%d prices training "
                            "(the cp communication of the backward pass); not with --inference",
                            what, pr->cp);
    if (a->batch > 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: --batch does not re-price a "
                            "cp plan (give the new batch with --global-batch)", what);
    if (eq->micro > 0 && eq->micro % pr->cp)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: the sweep's micro-batch of "
                            "%lld %s does not split into dp x cp = %d replicas (give mbs=, "
                            "with a sweep at micro-batch mbs x dp x cp)", what,
                            (long long)eq->micro, costdb_plural(eq->micro, "sample", "samples"),
                            pr->dp * pr->cp);
    if ((rc = cp_micro_batches(r, eq, what, &count)) != 0)
        return rc;
    {
        char knob[32];
        snprintf(knob, sizeof knob, "cp=%d", pr->cp);
        if ((rc = apsolve_twin_check(r, eq, l.dp * l.cp, l.tp, what, knob)) != 0)
            return rc;
    }
    if (pr->cp_comm == APSOLVE_CP_A2A_P2P)
        l.a2a = apsolve_cp_a2a_size(pr->cp, pr->tp,
                                    apsolve_cp_fast_gpus(r->db, eq->sweep, eq->p->cluster_gpus));
    rc = apsolve_cp_problem(r->db, eq->sweep, eq->p, r->specs, r->nspec, &l, &r->cp_c.p, &seq,
                            &attention, why, sizeof why);
    if (rc == APSOLVE_ENOMEM)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    if (rc)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "--parallel %s: %s", what, why);
    r->have_cp_c = 1;
    if (!attention)
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: cp=%d splits attention's "
                            "sequence, and no stage of the plan holds an attention layer (a key "
                            "projection, key or k_proj, among its parameters)", what,
                            pr->cp);
    if (seq <= 0)
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: the stages' placements show "
                            "no sequence length to split cp=%d ways", what, pr->cp);
    /* the one check of a cp layout: the sequence in 2 cp chunks, and
     * a2a's heads per tp rank divisible by the GPUs it splits them over */
    {
        int heads = 0, kv_heads = 0;
        char note[400];
        apsolve_cp_heads(r->db, eq->sweep, eq->p, &heads, &kv_heads);
        if (!apsolve_cp_check(&l, seq, heads, kv_heads, why, sizeof why, note, sizeof note))
            return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: %s", what, why);
        if (note[0] && !a->quiet)
            apsolve_say(a, "warning: --parallel %s: %s", what, note);
    }
    if (!a->quiet)
        say_stages(r, eq, &l);
    r->cp_c.sweep = eq->sweep;
    r->cp_c.sw = eq->sw;
    r->cp_c.opt = eq->opt;
    r->cp_c.opt.micro_batches = count;
    r->cp_c.micro = eq->micro / pr->cp;
    /* the twin's batch when cp x its micro-batches; else count whole
     * micro-batches of the cp plan's mbs x dp sequences */
    r->cp_c.global_batch = count == eq->opt.micro_batches * pr->cp
                               ? eq->global_batch
                               : (int64_t)count * r->cp_c.micro;
    *pc = &r->cp_c;
    return 0;
}
