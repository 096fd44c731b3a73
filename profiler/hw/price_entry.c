/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The phase price's and the weight-gradient share's plain entry points
 * (hardware.h): approf_phase_price_memo and approf_wgrad_seconds_memo
 * (phase_cost.c) without a memo, and the share from a phase's price; and
 * the userbuffers' account of phase_cost.c's collective loop (stage.h).
 * Moved out of phase_cost.c as they were, to keep it under 800 lines
 * (issue 38, zends).
 */
#include <math.h>

#include "hardware.h"
#include "stage.h"

/* Megatron-Core's --tp-comm-overlap runs Transformer Engine's userbuffers
 * (transformer_engine/pytorch/module/base.py initialize_ub and
 * csrc/comm_gemm_overlap.h at v1.8, 3ec998e; Megatron-LM core_r0.8.0
 * megatron/training/initialize.py passes no config unless
 * --tp-comm-overlap-cfg, so TE's defaults hold). Its default method per
 * GEMM of a transformer layer: a ring exchange for the all-gathers before
 * qkv_fprop and fc1_fprop and for the output gradient's before proj_dgrad
 * and fc2_dgrad (point-to-point sends on copy engines, use_ce: no SM);
 * a pipeline for the reduce-scatters after proj_fprop and fc2_fprop
 * (num_splits chunks, each reduced by num_sm CTAs beside the next chunk's
 * GEMM); bulk for the backward's re-gather of the input beside qkv_dgrad
 * and fc1_dgrad and the input gradient's reduce-scatter beside qkv_wgrad
 * and fc1_wgrad (num_sm CTAs for the whole collective). The CTAs of a
 * pipeline or bulk collective hold their SMs while they run; with
 * set_sm_margin (TE's default since v2.0, NeMo's pipeline configs) the
 * GEMM is also launched on sm_count - num_sm SMs. Either way the GEMM
 * beside it has sm_count - num_sm of the device's SMs. Adds collective cl
 * (of c seconds, in phase ph) to the seconds *slowed (c x the share of
 * the GEMM's rate lost beside it) and *exposed (the pipelined
 * reduce-scatter's last chunk, reduced after the last GEMM chunk:
 * split_overlap_rs). Collectives of other kinds (all-reduce, all-to-all,
 * point-to-point) are no userbuffers ones: NCCL's (approf_overlap_slowdown). */
void approf_ub_account(const ApprofHardwareSpec *hw, const ApprofCollective *cl, int ph,
                       double c, double *slowed, double *exposed)
{
    int ub = cl->kind == APPROF_COLL_REDUCE_SCATTER || cl->kind == APPROF_COLL_ALL_GATHER;
    /* backward: the gradient's all-gather (sharding_mesh.c marks the
     * gradient's collective async_wgrad) is the ring exchange; the
     * re-gather of the input (async_wgrad 0) is bulk */
    int holds_sms = cl->kind == APPROF_COLL_REDUCE_SCATTER || (ph == 1 && !cl->async_wgrad);
    if (!ub || hw->tp_comm_overlap_sms <= 0 || hw->sm_count <= hw->tp_comm_overlap_sms) {
        *slowed += approf_overlap_slowdown(hw) * c;
    } else if (holds_sms) {
        *slowed += (double)hw->tp_comm_overlap_sms / (double)hw->sm_count * c;
    }
    if (ub && ph == 0 && cl->kind == APPROF_COLL_REDUCE_SCATTER && hw->tp_comm_overlap_splits > 0)
        *exposed += c / (double)hw->tp_comm_overlap_splits;
}

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
