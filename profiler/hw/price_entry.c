/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The phase price's and the weight-gradient share's plain entry points
 * (hardware.h): approf_phase_price_memo and approf_wgrad_seconds_memo
 * (phase_cost.c) without a memo, and the share from a phase's price.
 * Moved out of phase_cost.c as they were, to keep it under 800 lines
 * (issue 38, zends).
 */
#include <math.h>

#include "hardware.h"
#include "stage.h"

double approf_phase_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph)
{
    return approf_phase_seconds_memo(hw, p, ph, NULL);
}

double approf_phase_seconds_memo(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                                 int ph, ApprofPriceMemo **memo)
{
    ApprofPhasePrice price;
    return approf_phase_price_memo(hw, p, ph, memo, &price);
}

double approf_wgrad_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                            double bwd_seconds)
{
    return approf_wgrad_seconds_of(hw, p, bwd_seconds, NULL);
}

double approf_wgrad_seconds_of(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                               double bwd_seconds, const double *bwd_phase)
{
    return approf_wgrad_seconds_memo(hw, p, bwd_seconds, bwd_phase, NULL);
}

double approf_wgrad_seconds_priced(double bwd_seconds, const ApprofPhasePrice *bwd)
{
    /* approf_wgrad_seconds_memo's rule with its w and all given */
    double w, all;
    if (!bwd || !isfinite(bwd_seconds) || bwd_seconds < 0)
        return -1.0;
    w = bwd->wgrad_kernels;
    all = bwd->seconds;
    if (!(all > 0))
        return -1.0;
    return w >= all ? bwd_seconds : bwd_seconds * (w / all);
}
