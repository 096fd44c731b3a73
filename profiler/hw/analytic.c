/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The analytic backend: estimates a stage module's ModuleProfileResult from
 * a hardware spec instead of running it. compute_cost is the sum of the
 * roofline times of the phase's kernels plus the ring times of its
 * collectives, less what the spec's tp_comm_overlap hides under the GEMMs
 * (approf_phase_seconds; the once-per-iteration gradient all-reduce
 * excluded, as in Alpa); the memory figures come from the stage program; a
 * module whose peak exceeds the spec's available memory is reported out of
 * memory with cost +inf, the time computed kept apart (unfit_cost). Sums
 * run in program order, so equal inputs give bit-identical results. Also the generic approf_backend_destroy.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "costdb.h"

int approf_analytic_measure_memo(ApprofPriceMemo **memo, const ApprofStageProgram *p, int phase,
                                 const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    ApprofPhasePrice price;
    return approf_analytic_measure_priced(memo, p, phase, hw, out, &price);
}

int approf_analytic_measure_priced(ApprofPriceMemo **memo, const ApprofStageProgram *p, int phase,
                                   const ApprofHardwareSpec *hw, ApprofMeasurement *out,
                                   ApprofPhasePrice *price)
{
    double cost;
    int64_t avail;

    if (!p || !hw || !out || !price || phase < 0 || phase > 1)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    cost = approf_phase_price_memo(hw, p, phase, memo, price);
    avail = approf_hardware_available_memory(hw);
    out->peak_memory = p->peak_memory[phase];
    out->available_memory = avail;
    out->repeats = 1;
    out->spread = 0.0;
    if (out->peak_memory > avail) {
        out->status = COSTDB_STATUS_OOM;
        out->compute_cost = INFINITY;
        out->unfit_cost = cost; /* what apsolve's cp and ep steps price from */
        snprintf(out->error, sizeof out->error, "needs %.1f GiB, %.1f GiB available on %s",
                 (double)out->peak_memory / 1073741824.0, (double)avail / 1073741824.0,
                 hw->name);
        return APPROF_OK;
    }
    out->status = COSTDB_STATUS_OK;
    out->compute_cost = cost;
    return APPROF_OK;
}

static int analytic_measure(void *ctx, const ApprofStageProgram *p, int phase,
                            const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    (void)ctx;
    return approf_analytic_measure_memo(NULL, p, phase, hw, out);
}

int approf_backend_prices_phases(const ApprofBackend *b)
{
    return b && b->measure == analytic_measure;
}

int approf_backend_analytic(ApprofBackend *out)
{
    if (!out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    out->name = "model";
    out->ctx = NULL;
    out->measure = analytic_measure;
    out->destroy = NULL;
    return APPROF_OK;
}

void approf_backend_destroy(ApprofBackend *b)
{
    if (!b)
        return;
    if (b->destroy)
        b->destroy(b->ctx);
    memset(b, 0, sizeof *b);
}
