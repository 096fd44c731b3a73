/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of solver/schedule.c: names round-trip; Alpa's T for 1F1B and
 * GPipe; the interleaved closed form (B + (n - 1)/v) t for equal costs and
 * sum c / v + (B - 1/v) max c for unequal ones, equal to 1F1B at v = 1 and
 * decreasing in v; in-flight counts (1F1B min(B, n - k), GPipe B,
 * interleaved n + (n - 1)/v on the first device, capped at B, decreasing
 * along the pipeline); transfer factors; the validity rules. Agreement with
 * the pass-by-pass simulation is tested in tests/reports/test_schedule.c.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "schedule.h"

static void test_names(void)
{
    for (int s = 0; s < APSOLVE_SCHEDULE_COUNT; s++)
        CU_ASSERT_EQUAL(apsolve_schedule_parse(apsolve_schedule_name((ApsolveSchedule)s)), s);
    CU_ASSERT_STRING_EQUAL(apsolve_schedule_name(APSOLVE_SCHEDULE_INTERLEAVED), "interleaved");
    CU_ASSERT_PTR_NULL(apsolve_schedule_name(APSOLVE_SCHEDULE_COUNT));
    CU_ASSERT_EQUAL(apsolve_schedule_parse("1F1B"), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_parse(""), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_parse(NULL), -1);
}

static void test_time(void)
{
    double c[4] = {1.0, 3.0, 2.0, 0.5}, eq[8];
    /* Alpa's T: 6.5 + (B - 1) * 3 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 5, c, 4), 18.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_GPIPE, 4, 5, c, 4), 18.5, 1e-12);
    /* interleaved, v = 2: 6.5 / 2 + (5 - 0.5) * 3 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 2, 5, c, 4),
                           3.25 + 13.5, 1e-12);
    for (int n = 1; n <= 8; n++) {
        for (int k = 0; k < n; k++)
            eq[k] = 0.75;
        for (int B = 1; B <= 12; B++) {
            double prev = INFINITY;
            double t1 = apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, B, eq, (size_t)n);
            CU_ASSERT_DOUBLE_EQUAL(t1, (B + n - 1) * 0.75, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 1, B, eq,
                                                         (size_t)n), t1, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 0, B, eq,
                                                         (size_t)n), t1, 1e-12);
            for (int v = 1; v <= 6; v++) {
                double t = apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, eq, (size_t)n);
                CU_ASSERT_DOUBLE_EQUAL(t, (B + (double)(n - 1) / v) * 0.75, 1e-12);
                /* never below the work of one device, never above 1F1B */
                CU_ASSERT(t >= B * 0.75 - 1e-12);
                CU_ASSERT(t <= t1 + 1e-12);
                CU_ASSERT(n == 1 ? prev == INFINITY || fabs(t - prev) < 1e-12 : t < prev);
                prev = t;
            }
        }
    }
    /* unequal costs: v = 1 is T, and more chunks never cost more */
    for (int B = 1; B <= 9; B++) {
        double t1 = apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, B, c, 4), prev = t1;
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 1, B, c, 4), t1,
                               1e-12);
        for (int v = 2; v <= 6; v++) {
            double t = apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, c, 4);
            CU_ASSERT(t < prev);
            CU_ASSERT(t >= B * 3.0 - 1e-12);
            prev = t;
        }
    }
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 0, c, 4)));
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 2, c, 0)));
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 2, NULL, 4)));
}

static void test_in_flight(void)
{
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 0), 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 2, 4, 0), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 3), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_GPIPE, 1, 8, 4, 3), 8, 0);
    /* Megatron-LM: p = 4, v = 2: warm-up 2 * 3 + 4 = 10 chunks on device 0,
     * plus one: 11 chunks of 1/2 = 5.5 = 4 + 3/2 micro-batches */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, 0),
                           5.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, 3),
                           2.5, 1e-12);
    /* capped at all B v chunks */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 4, 4, 0),
                           4.0, 1e-12);
    for (int n = 1; n <= 8; n++)
        for (int B = 1; B <= 16; B++)
            for (int k = 0; k < n; k++) {
                double f1 = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, B, n, k);
                CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 1,
                                                                  B, n, k), f1, 0);
                for (int v = 2; v <= 4; v++) {
                    double x = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v, B, n, k);
                    CU_ASSERT(x <= B + 1e-12);
                    CU_ASSERT(x >= f1 - 1e-12);    /* interleaving never needs less */
                    if (k == 0 && B * v >= 2 * (n - 1) + (v - 1) * n + 1)
                        CU_ASSERT_DOUBLE_EQUAL(x, n + (double)(n - 1) / v, 1e-12);
                    if (k > 0)
                        CU_ASSERT(x <= apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v,
                                                                  B, n, k - 1) + 1e-12);
                }
            }
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 4, 4, 4)));
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 4, 4, -1)));
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_GPIPE, 1, 0, 4, 0)));
}

static void test_transfer_and_valid(void)
{
    char why[160];
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_1F1B, 4), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_GPIPE, 4), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_INTERLEAVED, 3), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_INTERLEAVED, 0), 1, 0);
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, why, sizeof why));
    CU_ASSERT_STRING_EQUAL(why, "");
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 1, 7, 4, why, sizeof why));
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_1F1B, 1, 7, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 6, 4, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "multiple"));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 6, 1, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "at least 2"));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 0, 8, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_GPIPE, 1, 0, 4, NULL, 0));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_GPIPE, 1, 4, 0, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_COUNT, 1, 4, 4, why, sizeof why));
}

int main(void)
{
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("solver-schedule", NULL, NULL);
    CU_add_test(s, "names", test_names);
    CU_add_test(s, "iteration time", test_time);
    CU_add_test(s, "in-flight activations", test_in_flight);
    CU_add_test(s, "transfer factor and validity", test_transfer_and_valid);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
