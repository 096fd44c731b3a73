/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `approf probe` keeps: a hardware row of kind 'measured' built from
 * the probe's device information and its measured points, and the points
 * themselves as communication and compute curves and GEMM shape tables. Host code only (costdb);
 * the module never includes this.
 */
#ifndef APPROF_CUDA_PROBE_STORE_H
#define APPROF_CUDA_PROBE_STORE_H

#include <stddef.h>

#include "costdb.h"
#include "probe.h"

/* "measured:<gpu model>:<count>x<MiB>MiB:driver <v>:cuda <v>:nccl <v>". */
void approf_probe_fingerprint(const ApprofProbeInfo *info, char *out, size_t len);

/* Fills a hardware row from info and the measured points: peak_flops_* the
 * best "gemm" rate per dtype, memory_bandwidth the best "memcpy" rate,
 * intra_host_bandwidth the best send-recv algorithm bandwidth of the
 * smallest group (one direction, per GPU) and intra_host_latency its time
 * at the smallest message; inter-host figures likewise from send-recv over "2x1" (an
 * mpirun probe across hosts), else 0;
 * capabilities a JSON object with the compute capability, SM count,
 * library versions, the memory reserve and, when the probe measured it,
 * "overlap_gemm_slowdown" (approf_probe_overlap_slowdown). APPROF_EINVAL when a text field
 * does not fit. */
int approf_probe_hardware_row(const ApprofProbeInfo *info, const CostdbComputePoint *cp,
                              size_t n_cp, const CostdbCommPoint *mp, size_t n_mp,
                              CostdbHardware *out);

/* The GEMM slowdown beside a collective (ApprofHardwareSpec
 * overlap_gemm_slowdown) from the probe's overlap points (probe_overlap.c):
 * per collective c with both a bf16 "overlap-gemm:c" (GEMM rate alone)
 * and "overlap-gemm+c" (beside c), 1 - beside / alone, at least 0 (a GEMM
 * that ran faster beside it is within the noise); *out the largest of
 * them, the collective that slows the GEMM most, and which (may be NULL,
 * else len >= 32). 1 when one was measured, 0 (*out 0) when none. */
int approf_probe_overlap_slowdown(const CostdbComputePoint *cp, size_t n_cp, double *out,
                                  char *which, size_t len);

/* Upserts the row (hw->id set) and replaces its curves with the points, in
 * one transaction. 0 or a COSTDB_E* code (costdb_errmsg has the message). */
int approf_probe_store(Costdb *db, CostdbHardware *hw, const CostdbComputePoint *cp, size_t n_cp,
                       const CostdbCommPoint *mp, size_t n_mp);
/* The same, and the GEMM shape tables of the dtypes in gp replaced by its
 * points (costdb_gemm_put), in the same transaction. */
int approf_probe_store_all(Costdb *db, CostdbHardware *hw, const CostdbComputePoint *cp,
                           size_t n_cp, const CostdbCommPoint *mp, size_t n_mp,
                           const CostdbGemmPoint *gp, size_t n_gp);

#endif
