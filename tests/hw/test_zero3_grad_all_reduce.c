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

static int zero3_grad_all_reduce_of(const ApprofHardwareSpec *hw)
{
    return hw->zero3_grad_all_reduce;
}

static void test_spec_key(void)
{
    hw_fixture_flag_key("zero3_grad_all_reduce", zero3_grad_all_reduce_of);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"zero3_grad_all_reduce: parse, range, round trip, fingerprint", test_spec_key},
    };
    return CUNIT_RUN("hw_zero3_grad_all_reduce", tests);
}
