/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ranges that cannot fit (approf_sweep_skip_unfit, sweep_int.h): tuples
 * whose stage is out of memory on the analytic backend whatever its
 * configuration, taken out of the sweep's tuple list before profiling.
 *
 * The bound, over every configuration of a submesh (logical mesh, memory
 * level, recomputation, ZeRO stage): the forward module's peak
 * (program.c, finish_program: invars + outvars + temporaries - donated,
 * nothing donated in the forward) holds at least the invars, which are the
 * stage inputs and every parameter the stage reads at its local size
 * (shard_local_bytes: its bytes divided by the mesh axes it is split over,
 * so at least bytes / N on N devices). ZeRO-3 takes S (1 - 1/G) off them
 * (program_zero.c, shard_apply_zero), S at most those parameter bytes and
 * G, the gradient synchronisation's group, at most N; FP8 only adds. So
 * the forward peak is at least P / N^2, P the full bytes of the
 * parameters whose first reader is in the stage (a subset of those it
 * reads). The analytic backend reports a phase whose peak is above the
 * device's available memory out of memory (hw/analytic.c), and apsolve
 * uses no entry of which a phase is not 'ok' (solver/dbload.c), whatever
 * --memory-budget says: such a tuple can never be in a plan.
 *
 * Opt-in (--skip-unfit): the other tuples' entries are not always those of
 * the whole sweep, because the sharding context's memos keep what the
 * first stage of a kind solved (docs/performance.md, "Ranges that cannot
 * fit"), and a stage left out is one fewer to solve first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "sweep_int.h"

int approf_sweep_skip_unfit(Sweep *sw, const ApprofSweepConfig *cfg, size_t *skipped)
{
    const ApprofGraph *g = sw->graph;
    const ApprofLayering *l = &sw->layering;
    double *pre = NULL, *largest = NULL;
    char *seen = NULL;
    int64_t avail = approf_hardware_available_memory(&sw->hw);
    size_t kept = 0;
    *skipped = 0;
    /* the bound is the analytic backend's rule; a measuring backend's
     * peak is what ran (and individual mode composes ranges from layers) */
    if (!cfg->skip_unfit || cfg->individual || !sw->backend.name ||
        strcmp(sw->backend.name, "model") || avail <= 0 || !g || !sw->n_tuples)
        return 0;
    pre = calloc(g->n_ops + 1, sizeof *pre);
    seen = calloc(g->n_tensors ? g->n_tensors : 1, 1);
    largest = calloc((size_t)(sw->n_submeshes > 0 ? sw->n_submeshes : 1), sizeof *largest);
    if (!pre || !seen || !largest) {
        free(pre);
        free(seen);
        free(largest);
        return APPROF_ENOMEM;
    }
    /* pre[o]: bytes of the parameters first read by ops before o */
    for (size_t o = 0; o < g->n_ops; o++) {
        double first = 0.0;
        const ApprofOp *op = &g->ops[o];
        for (int i = 0; i < op->n_inputs; i++) {
            int t = op->inputs[i];
            if (t < 0 || (size_t)t >= g->n_tensors || seen[t] ||
                g->tensors[t].role != APPROF_TENSOR_PARAM)
                continue;
            seen[t] = 1;
            first += (double)approf_tensor_bytes(&g->tensors[t]);
        }
        pre[o + 1] = pre[o] + first;
    }
    /* N per submesh: its devices, or a configuration's logical mesh if
     * larger (never, but the bound then still holds) */
    for (int s = 0; s < sw->n_submeshes; s++) {
        double n = (double)sw->submeshes[s].n * (double)sw->submeshes[s].m;
        for (int c = 0; c < sw->n_configs[s]; c++) {
            double lm = (double)sw->configs[s][c].logical_a * sw->configs[s][c].logical_b;
            if (lm > n)
                n = lm;
        }
        largest[s] = n;
    }
    for (size_t k = 0; k < sw->n_tuples; k++) {
        const ApprofTuple *t = &sw->tuples[k];
        int fit = 1;
        if (t->start >= 0 && t->end < l->n_layers && t->start <= t->end && t->submesh >= 0 &&
            t->submesh < sw->n_submeshes && largest[t->submesh] >= 1.0) {
            int b = l->op_begin[t->start], e = l->op_end[t->end];
            if (b >= 0 && e >= b && (size_t)e <= g->n_ops) {
                double n = largest[t->submesh];
                /* a margin of a kilobyte for the rounding of llround sums */
                fit = (pre[e] - pre[b]) / (n * n) <= (double)avail + 1024.0;
            }
        }
        if (fit)
            sw->tuples[kept++] = sw->tuples[k];
    }
    *skipped = sw->n_tuples - kept;
    sw->n_tuples = kept;
    free(pre);
    free(seen);
    free(largest);
    return 0;
}
