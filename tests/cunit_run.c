/* SPDX-License-Identifier: Apache-2.0 */
/* The main of a CUnit test program (see cunit_run.h). */
#include <CUnit/Basic.h>

#include "cunit_run.h"

int cunit_run(const char *suite, const CunitTest *tests, size_t n)
{
    return cunit_run_fixture(suite, NULL, NULL, tests, n);
}

int cunit_run_fixture(const char *suite, int (*setup)(void), int (*teardown)(void),
                      const CunitTest *tests, size_t n)
{
    CU_pSuite s;
    unsigned failed;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    s = CU_add_suite(suite, setup, teardown);
    for (size_t i = 0; s && i < n; i++)
        if (!CU_add_test(s, tests[i].name, tests[i].fn))
            s = NULL;
    if (!s) {
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
             CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
