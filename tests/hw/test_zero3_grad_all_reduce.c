/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zero3_grad_all_reduce (ApprofHardwareSpec): DeepSpeed's stage 3 with
 * contiguous_gradients off (its default from v0.3.13 to v0.4.2)
 * all-reduces each gradient bucket instead of reduce-scattering it. Its
 * spec-file key: 0 by default and then absent from the fingerprint and the
 * stored row; 1 read, written back, fingerprinted; 2 refused with
 * path:line: field. The pricing is tested in
 * tests/sharding/test_zero3_grad_all_reduce.c.
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "hardware.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define REQ "name = t\npeak_tflops_f32 = 20\npeak_tflops_f16 = 300\npeak_tflops_bf16 = 300\n" \
            "memory_gib = 80\nmemory_bandwidth_gbs = 2000\ngpus_per_host = 8\n"                 \
            "intra_host_bandwidth_gbs = 300\n"                                                 \
            "inter_host_bandwidth_gbs = 25\n"

static void test_spec_key(void)
{
    ApprofHardwareSpec hw, back;
    CostdbHardware row;
    char err[512] = "", fp0[128], fp1[128];
    const char *p = hw_fixture_tmp(REQ);

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.zero3_grad_all_reduce, 0);
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NULL(strstr(row.capabilities, "zero3_grad_all_reduce"));

    p = hw_fixture_tmp(REQ "zero3_grad_all_reduce = 1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.zero3_grad_all_reduce, 1);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"zero3_grad_all_reduce\": 1"));
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.zero3_grad_all_reduce, 1);
    approf_hardware_fingerprint(&back, fp0, sizeof fp0);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);

    hw_fixture_refused(REQ "zero3_grad_all_reduce = 2\n", 10, "field 'zero3_grad_all_reduce'");
    hw_fixture_tmp_remove();
}

int main(void)
{
    static const CunitTest tests[] = {
        {"zero3_grad_all_reduce: parse, range, round trip, fingerprint", test_spec_key},
    };
    return CUNIT_RUN("hw_zero3_grad_all_reduce", tests);
}
