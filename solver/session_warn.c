/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What apsolve says about a --parallel plan beside its price
 * (session_int.h): why the sweep lacks a stage's layout and the sweep option
 * that adds it, and where the priced sharding keeps weight matrices whole
 * over the tensor-parallel axis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "plural.h"
#include "session_int.h"

/* Why the sweep has no config for a --parallel stage, and the sweep option
 * that adds one: the micro-batch cannot be split dp ways (the sweep profiles
 * a batch-forced mesh only when dp divides the micro-batch), the logical
 * space has no such mesh, or the variant (recompute, ZeRO) was not profiled. */
void apsolve_missing_layout_reason(const ApsolveProblem *p, const CostdbSweep *sw,
                                  const ApsolveStage *st, const ApsolveParallel *par,
                                  int64_t micro, int64_t G, const ApsolveBatchSweep *fam,
                                  size_t nfam, char *out, size_t len)
{
    int mesh = 0, variant = 0, s;
    for (s = 0; s < p->num_submeshes; s++)
        if (p->submeshes[s].hosts == st->hosts && p->submeshes[s].gpus == st->gpus)
            break;
    for (int c = 0; s < p->num_submeshes && c < p->num_configs; c++) {
        const ApsolveConfig *cf = &p->configs[(size_t)s * (size_t)p->num_configs + (size_t)c];
        if (!cf->valid || cf->logical_a != par->dp || cf->logical_b != par->tp ||
            cf->force_batch_dim != st->force_batch_dim)
            continue;
        mesh = 1;
        if (cf->variant.recompute == par->recompute && cf->variant.zero == par->zero)
            variant = 1;
    }
    if (s == p->num_submeshes) {
        snprintf(out, len, "the sweep has no submesh (%d, %d) (approf sweep --submesh-space)",
                 st->hosts, st->gpus);
    } else if (!mesh && micro > 0 && par->dp > 1 && micro % par->dp) {
        char sizes[160] = "", have[160] = "";
        size_t at = 0, hat = 0;
        int64_t sz[8], first = 0;
        int nf = costdb_micro_batch_family(G, sz, 8);
        for (int q = 0; q < nf && at < sizeof sizes; q++)
            if (sz[q] % par->dp == 0) {
                int w = snprintf(sizes + at, sizeof sizes - at, "%s%lld", at ? "," : "",
                                 (long long)sz[q]);
                at += w > 0 ? (size_t)w : 0;
            }
        /* the sizes that split dp ways which this database already holds
         * (the sweep's family): --parallel's mbs picks one, no new sweep */
        for (size_t q = 0; q < nfam && hat < sizeof have; q++) {
            int64_t m = fam[q].micro_batch_size;
            if (m > 0 && m % par->dp == 0 && (G <= 0 || G % m == 0)) {
                int w = snprintf(have + hat, sizeof have - hat, "%s%lld", hat ? "," : "",
                                 (long long)m);
                hat += w > 0 ? (size_t)w : 0;
                if (!first)
                    first = m;
            }
        }
        if (first)
            snprintf(out, len, "a micro-batch of %lld %s cannot be split %d ways (dp=%d); "
                     "this database has sweeps at micro-batch sizes %s, which --parallel's "
                     "mbs= picks (mbs=%lld: micro-batch size %lld)",
                     (long long)micro, costdb_plural(micro, "sample", "samples"), par->dp, par->dp, have,
                     (long long)(first / (par->dp > 0 ? par->dp : 1)), (long long)first);
        else
            snprintf(out, len, "a micro-batch of %lld %s cannot be split %d ways "
                     "(dp=%d)%s%s", (long long)micro, costdb_plural(micro, "sample", "samples"),
                     par->dp, par->dp,
                     sizes[0] ? "; approf sweep --micro-batch-sizes " : "", sizes);
    } else if (!mesh) {
        snprintf(out, len, "the sweep's logical space '%s' has no mesh (%d, %d) "
                 "(approf sweep --logical-space all)", sw->logical_space, par->dp, par->tp);
    } else if (!variant) {
        snprintf(out, len, "the sweep did not profile this variant (approf sweep --variants all, "
                 "or --recompute and --zero)");
    } else {
        snprintf(out, len, "its configs are not allowed under this objective "
                 "(--objective full reads the variants)");
    }
}

/* A --parallel plan with tp > 1 is priced with the sharding the ILP chose
 * for that mesh: say where it keeps weight matrices whole over the tp axis,
 * which a framework's tensor parallelism splits (the rule apreport warns by
 * too, costdb_weight_whole_on_axis1). */
void apsolve_tp_whole_warning(Costdb *db, const ApsolveRequest *a, int64_t sweep,
                             const ApsolvePlan *pl)
{
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        size_t weights = 0;
        int whole;
        if (st->logical_b <= 1 || st->submesh < 0 || st->config < 0)
            continue;
        whole = apsolve_whole_weights(db, sweep, st->start_layer, st->end_layer, st->submesh,
                                      st->config, st->logical_a, st->logical_b, &weights);
        if (whole > 0)
            apsolve_say(a, "warning: 3-D stage %zu: %zu of its %zu weight matrices are priced "
                        "whole on every device of the tp axis (the sharding ILP's layout for "
                        "logical (%d, %d), memory level %d, the level of this sweep that "
                        "splits the most), not split %d ways as tensor parallelism holds "
                        "them; approf sweep --memory-levels 3 (or --variants all) profiles the "
                        "memory levels that split them", k, (size_t)whole, weights, st->logical_a, st->logical_b,
                        st->variant.memory_level, st->logical_b);
    }
}

/* A plan at the memory edge: a stage that fits in its device's memory but
 * leaves less free than the headroom for the allocator's fragmentation
 * (docs/solver.md, "Memory headroom"). A given plan is judged by the raw
 * capacity and only warned about; an auto plan is here only when no plan
 * of the search leaves the headroom. */
void apsolve_warn_headroom(const ApsolveRequest *a, const ApsolvePlan *pl, const char *label)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (a->quiet || pl->inference)
        return;
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        int64_t left = st->available_memory - st->memory_needed;
        if (st->memory_reserve <= 0 || st->memory_needed <= 0 || left < 0 ||
            left >= st->memory_reserve)
            continue;
        apsolve_say(a, "warning: %s plan, stage %zu: leaves %.3f GiB of %.3f GiB free, less "
                    "than the %.3f GiB reserve for allocator fragmentation%s (--memory-headroom)",
                    label, k, left / gib, st->available_memory / gib, st->memory_reserve / gib,
                    strcmp(label, "auto") ? " the auto search keeps"
                                          : ": no plan of the search leaves it");
    }
}
