/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the profiler/hw unit tests share: a spec with round numbers for
 * hand computation, a collective, a micro-batch phase of one GEMM, one
 * elementwise kernel and one all-gather, a stage program whose gradient
 * sync may hide under its backward, spec texts written to temporary files,
 * a spec text refused with its path, line and field, and a spec written
 * out by approf_hardware_write_spec and read back.
 */
#ifndef HW_FIXTURE_H
#define HW_FIXTURE_H

#include <stddef.h>

#include "collective.h"
#include "hardware.h"
#include "stage.h"

/* An A100-like spec with round numbers, without a TF32 rate: peaks 20
 * (f32), 300 (f16, bf16) TFLOP/s, 2000 GB/s memory at efficiency 0.5,
 * 80 GiB, 8 GPUs a host on 300 GB/s, 25 GB/s between hosts, GEMM
 * efficiency 0.5, convolution 0.25; every other field 0. */
void hw_fixture_round_spec(ApprofHardwareSpec *hw);

/* A collective of kind over group GPUs on hosts hosts (crossing hosts when
 * more than one), of bytes bytes; every other field 0. */
ApprofCollective hw_fixture_coll(ApprofCollKind kind, double bytes, int group, int hosts);

/* Phase 1 (backward) of a stage program: ks[0] a GEMM of gemm_dtype and
 * gemm_flops, ks[1] an elementwise kernel of 0.05e12 bytes, c an
 * all-gather of 8e9 bytes over 8 GPUs on one host. Filled in place: the
 * program points at ks and c. */
typedef struct HwFixturePhase {
    ApprofStageProgram p;
    ApprofKernel ks[2];
    ApprofCollective c;
} HwFixturePhase;
void hw_fixture_phase(HwFixturePhase *ph, ApprofDtype gemm_dtype, double gemm_flops);

/* A stage program of one elementwise kernel in the forward (fwd_bytes) and
 * one in the backward (bwd_bytes), whose apply phase syncs the gradients
 * with one all-reduce of 15e9 bytes over 8 GPUs on one host. Filled in
 * place: the program points at fwd and bwd. */
typedef struct HwFixtureGradSync {
    ApprofStageProgram p;
    ApprofKernel fwd, bwd;
} HwFixtureGradSync;
void hw_fixture_grad_sync(HwFixtureGradSync *g, double fwd_bytes, double bwd_bytes);

/* Writes text to a fresh temporary file and returns its path (valid until
 * the next call), or NULL; the file the previous call wrote is removed
 * first. hw_fixture_tmp_remove removes the last one. */
const char *hw_fixture_tmp(const char *text);
void hw_fixture_tmp_remove(void);

/* Writes text to a temporary file (hw_fixture_tmp) and checks that
 * approf_hardware_load refuses it with APPROF_EPARSE and a message that
 * begins "PATH:line: expect"; a wrong message is printed and fails the
 * test (CU_FAIL). */
void hw_fixture_refused(const char *text, int line, const char *expect);

/* Writes hw to a temporary file with approf_hardware_write_spec (a CUnit
 * assertion that it succeeds), loads that file into back, removes it, and
 * returns approf_hardware_load's code. */
int hw_fixture_reload(const ApprofHardwareSpec *hw, ApprofHardwareSpec *back, char *err,
                      size_t errlen);

/* A spec text with the fields a spec file must have (name t, peaks 20 /
 * 300 / 300 TFLOP/s, 80 GiB at 2000 GB/s, 8 GPUs a host on 300 GB/s, 25
 * GB/s between hosts): nine lines, so a field appended is on line 10. */
#define HW_FIXTURE_REQUIRED                                                                        \
    "name = t\npeak_tflops_f32 = 20\npeak_tflops_f16 = 300\npeak_tflops_bf16 = 300\n"             \
    "memory_gib = 80\nmemory_bandwidth_gbs = 2000\ngpus_per_host = 8\n"                           \
    "intra_host_bandwidth_gbs = 300\ninter_host_bandwidth_gbs = 25\n"

/* A 0/1 spec field key (read by get): 0 by default and then absent from
 * the fingerprint and the stored row's capabilities; 1 read, stored as
 * "key": 1, written back and read again, fingerprinted apart from 0; 2
 * refused with path:10: field 'key'. */
void hw_fixture_flag_key(const char *key, int (*get)(const ApprofHardwareSpec *hw));

#endif
