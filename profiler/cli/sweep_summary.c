/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What approf sweep says when a sweep ends (cli.h): the summary of one
 * sweep, and the notices about the whole command's sweeps — entries out of
 * memory in Alpa's plain space, and a sweep at one micro-batch size.
 */
#include <stdio.h>

#include "cli.h"
#include "hardware.h"
#include "plural.h"
#include "sweep/sweep.h"

void cli_sweep_print_summary(const ApprofSweepSummary *s, const char *db_path)
{
    fprintf(stderr,
            "approf: sweep %lld %s: %zu %s, %zu %s written, %zu already present, "
            "%zu %s not fit in memory, %zu failed, %zu skipped, %zu reused\n"
            " - backend %s%s%s%s on %s, %d worker%s; sharding ILPs solved %zu, reused %zu\n"
            "%s%.0zu%s"
            "%s%s%s%s"
            "%s%.0zu%s"
            "%s%.0zu%s"
            " - collectives: %s\n"
            "%s%s%s"
            " - time: build %.3f s, enumeration %.3f s, sharding %.3f s, costing %.3f s, "
            "writing %.3f s (handing over %.3f s), total %.3f s\n"
            " - database: %s\n",
            (long long)s->sweep_id, s->resumed ? "resumed" : "done", s->tuples,
            costdb_plural((long long)s->tuples, "tuple", "tuples"), s->entries,
            costdb_plural((long long)s->entries, "entry", "entries"), s->existing,
            s->out_of_memory, costdb_plural((long long)s->out_of_memory, "does", "do"),
            s->failures, s->skipped, s->reused, s->backend, s->devices[0] ? " (" : "",
            s->devices, s->devices[0] ? ")" : "", s->hardware, s->workers > 0 ? s->workers : 1,
            s->workers > 1 ? "s" : "", s->sharding_solved, s->sharding_cached,
            s->skipped ? " - skipped: " : "", s->skipped,
            s->skipped ? " variant entries that do not apply to their stage (a memory level "
                         "past its distinct sharding points, ZeRO without data-parallel "
                         "replicas, selective recomputation without attention): not failures, "
                         "and not stored (docs/variants.md, \"Storage\")\n"
                       : "",
            s->dtype[0] ? " - dtype " : "", s->dtype,
            !s->dtype[0] ? ""
            : s->dtype_mixed_default
                ? ": mixed precision (16-bit compute, f32 master weights and Adam state), the "
                  "default for transformer models on this GPU; --dtype f32 for full precision\n"
                : "\n",
            !s->fp8 ? ""
            : s->fp8 == COSTDB_FP8_DELAYED
                ? " - precision: FP8 (Transformer Engine's delayed scaling: the linear layers' "
                  "GEMMs in E4M3 forward, E5M2 gradients, with their casts; docs/fp8.md)\n"
            : s->fp8 == COSTDB_FP8_TENSORWISE
                ? " - precision: FP8 (Transformer Engine's current (tensorwise) scaling: the "
                  "linear layers' GEMMs in E4M3 forward, E5M2 gradients, an amax pass before "
                  "each cast; docs/fp8.md)\n"
            : s->fp8 == COSTDB_FP8_MXFP8
                ? " - precision: MXFP8 (Transformer Engine's MXFP8 block scaling: the linear "
                  "layers' GEMMs with E8M0 scales per 32 elements; docs/fp8.md)\n"
                : " - precision: FP8 (Transformer Engine's block scaling: 1x128 input and "
                  "gradient blocks, 128x128 weight blocks; docs/fp8.md)\n",
            s->unfit ? " - left out: " : "", s->unfit,
            s->unfit ? " tuples out of memory whatever their configuration (--skip-unfit)\n"
                     : "",
            s->dominated ? " - dominated variants not stored: " : "", s->dominated,
            s->dominated ? " (slower and larger than another of their stage: docs/variants.md; "
                           "--keep-dominated stores them)\n"
                         : "",
            s->collectives[0] ? s->collectives : "the alpha-beta model",
            s->comm_timing[0] ? " - communication: " : "", s->comm_timing,
            s->comm_timing[0] ? "\n" : "",
            s->t_build, s->t_enumerate, s->t_sharding, s->t_costing,
            s->t_writing, s->t_handover, s->t_total, db_path);
}

/* Alpa's plain space replicates what its fastest sharding replicates: say
 * once, for every sweep of the command, what adds the memory-saving
 * variants (docs/variants.md). */
void cli_sweep_oom_notice(const ApprofSweepConfig *cfg, size_t out_of_memory, int sweeps)
{
    if (out_of_memory > 0 && costdb_variant_space_is_plain(cfg->variants))
        fprintf(stderr,
                "approf: %zu %s%s %s out of memory in Alpa's plain space (each stage's "
                "fastest sharding); --memory-levels 3 adds the leaner shardings (Megatron-style "
                "tensor parallelism) and --variants all also recomputation and ZeRO, for "
                "apsolve to choose from (docs/variants.md)\n",
                out_of_memory, costdb_plural((long long)out_of_memory, "entry", "entries"),
                sweeps > 1 ? " of these sweeps" : "",
                costdb_plural((long long)out_of_memory, "is", "are"));
}

/* A sweep at one micro-batch size limits the plans apsolve can find: a
 * stage can be at most b-way data parallel on a micro-batch of b samples,
 * and without a micro-batch of the whole batch no plan is plain data
 * parallelism (docs/solver.md, "Micro-batch sizes"). Names the option that
 * adds the sizes that matter for this global batch. */
void cli_sweep_one_size_notice(const ApprofSweepConfig *cfg)
{
    int64_t gb = 0;
    char err[256], list[160] = "";
    size_t at = 0;
    if (approf_sweep_global_batch(cfg, &gb, err, sizeof err) < 0 || gb <= 0 ||
        cfg->micro_batches < 1 || gb % cfg->micro_batches)
        return;
    int64_t sizes[8];
    int n = costdb_micro_batch_family(gb, sizes, 8);
    for (int q = 0; q < n && at < sizeof list; q++) {
        int w = snprintf(list + at, sizeof list - at, "%s%lld", at ? "," : "", (long long)sizes[q]);
        at += w > 0 ? (size_t)w : 0;
    }
    if (cfg->micro_batches == 1 || !list[0])
        return;
    fprintf(stderr,
            "approf: one micro-batch size (%lld %s, %d micro-batches of the global batch "
            "%lld): a stage can be at most %lld-way data parallel and every plan accumulates "
            "gradients over %d micro-batches; --micro-batch-sizes %s profiles the sizes that "
            "matter for this batch (%lld: plain data parallelism in one step) and apsolve "
            "chooses among them\n",
            (long long)(gb / cfg->micro_batches),
            costdb_plural(gb / cfg->micro_batches, "sample", "samples"), cfg->micro_batches,
            (long long)gb, (long long)(gb / cfg->micro_batches), cfg->micro_batches, list,
            (long long)gb);
}
