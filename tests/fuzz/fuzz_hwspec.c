/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for hardware spec files (approf_hardware_load). Properties
 * checked on every spec the loader accepts: every figure is finite and
 * inside its documented range, the spec written back out
 * (approf_hardware_write_spec) loads again with the same fingerprint, and
 * the roofline and collective cost functions give finite, non-negative
 * times for small and huge sizes. A refused file leaves a message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "fuzz.h"
#include "hardware.h"

static void check_costs(const ApprofHardwareSpec *hw)
{
    static const double sizes[] = {0, 1, 4096, 1e9, 1e18};
    for (int kind = APPROF_COLL_ALL_REDUCE; kind <= APPROF_COLL_SEND_RECV; kind++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int n = 1; n <= 64; n *= 4) {
                double t = approf_collective_seconds(hw, (ApprofCollKind)kind, sizes[s], n,
                                                     n > hw->gpus_per_host);
                FUZZ_CHECK(!isnan(t) && t >= 0);
            }
    for (int kk = APPROF_K_GEMM; kk <= APPROF_K_COPY; kk++)
        for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                ApprofKernel k;
                double t;
                memset(&k, 0, sizeof k);
                k.kind = (ApprofKernelKind)kk;
                k.dtype = (ApprofDtype)dt;
                k.flops = sizes[s];
                k.bytes = sizes[s];
                t = approf_kernel_seconds(hw, &k);
                FUZZ_CHECK(!isnan(t) && t >= 0);
            }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ApprofHardwareSpec hw, hw2;
    CostdbHardware row;
    char err[1024] = "", fp1[COSTDB_TEXT_MAX], fp2[COSTDB_TEXT_MAX];
    char *text = NULL;
    size_t len = 0;
    const char *path;
    FILE *f;
    int rc;

    if (size > 1 << 16)
        return 0;
    path = fuzz_write_file("in.spec", data, size);
    rc = approf_hardware_load(path, &hw, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(err[0] != '\0');
        return 0;
    }
    for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++)
        FUZZ_CHECK(isfinite(hw.peak_flops[dt]) && hw.peak_flops[dt] > 0);
    FUZZ_CHECK(isfinite(hw.memory_bandwidth) && hw.memory_bandwidth > 0);
    FUZZ_CHECK(isfinite(hw.intra_host_bandwidth) && hw.intra_host_bandwidth > 0);
    FUZZ_CHECK(isfinite(hw.inter_host_bandwidth) && hw.inter_host_bandwidth > 0);
    FUZZ_CHECK(hw.device_memory > 0 && hw.memory_reserve >= 0);
    FUZZ_CHECK(hw.memory_reserve < hw.device_memory);
    FUZZ_CHECK(hw.gpus_per_host >= 1 && hw.gpus_per_host <= 1024);
    FUZZ_CHECK(approf_hardware_available_memory(&hw) > 0);
    FUZZ_CHECK(memchr(hw.name, '\0', sizeof hw.name) != NULL);
    FUZZ_CHECK(memchr(hw.source, '\0', sizeof hw.source) != NULL);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    approf_hardware_to_costdb(&hw, &row);
    check_costs(&hw);

    f = open_memstream(&text, &len);
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(approf_hardware_write_spec(&hw, f) == 0);
    FUZZ_CHECK(fclose(f) == 0);
    path = fuzz_write_file("out.spec", (const uint8_t *)text, len);
    rc = approf_hardware_load(path, &hw2, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "fuzz_hwspec: written spec does not load back: %s\n", err);
    FUZZ_CHECK(rc == 0);
    approf_hardware_fingerprint(&hw2, fp2, sizeof fp2);
    FUZZ_CHECK(strcmp(fp1, fp2) == 0);
    free(text);
    return 0;
}
