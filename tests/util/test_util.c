/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: growable arrays (first growth, doubling, a need past the double,
 * nothing to do, zeroed growth, sizes that overflow or cannot be
 * allocated, the array left whole on failure).
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

typedef struct Wide {
    double v[5];
} Wide;

static void test_grow_zero_need(void)
{
    int *a = NULL;
    size_t cap = 0;
    /* nothing asked: nothing allocated */
    CU_ASSERT_EQUAL(UTIL_GROW(a, cap, 0), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(cap, 0);
    CU_ASSERT_EQUAL(util_grow_zero((void **)&a, &cap, 0, sizeof *a), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(cap, 0);
}

static void test_grow_growth(void)
{
    Wide *w = NULL, *before;
    size_t cap = 0, n = 0, moves = 0;
    /* a first element: UTIL_GROW_MIN of them */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 1) == 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    /* within the capacity: the array stays where it is */
    before = w;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, UTIL_GROW_MIN), 0);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    /* one past: doubled */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, UTIL_GROW_MIN + 1) == 0);
    CU_ASSERT_EQUAL(cap, 2 * UTIL_GROW_MIN);
    /* past the double: exactly what was asked */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 1000) == 0);
    CU_ASSERT_EQUAL(cap, 1000);
    free(w);
    /* 100000 appends: every element kept, the capacity doubled each time */
    w = NULL;
    cap = 0;
    for (n = 0; n < 100000; n++) {
        size_t old = cap;
        if (UTIL_GROW(w, cap, n + 1) < 0)
            break;
        if (cap != old && ++moves && old && cap != 2 * old) {
            CU_FAIL("the capacity did not double");
            break;
        }
        w[n].v[0] = (double)n;
        w[n].v[4] = -(double)n;
    }
    CU_ASSERT_EQUAL_FATAL(n, 100000);
    CU_ASSERT(cap >= n && cap < 2 * n);
    CU_ASSERT(moves <= 14); /* 16 .. 131072 */
    for (size_t i = 0; i < n; i++)
        if (w[i].v[0] != (double)i || w[i].v[4] != -(double)i) {
            CU_FAIL("an element was lost when the array grew");
            break;
        }
    free(w);
}

static void test_grow_zeroed(void)
{
    unsigned char *b = NULL;
    size_t cap = 0;
    CU_ASSERT_FATAL(util_grow_zero((void **)&b, &cap, 3, 1) == 0);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    for (size_t i = 0; i < cap; i++)
        CU_ASSERT_EQUAL(b[i], 0);
    memset(b, 0xab, cap);
    /* the old bytes kept, every added one zero */
    CU_ASSERT_FATAL(util_grow_zero((void **)&b, &cap, 100, 1) == 0);
    CU_ASSERT_EQUAL(cap, 100);
    for (size_t i = 0; i < cap; i++)
        CU_ASSERT_EQUAL(b[i], i < UTIL_GROW_MIN ? 0xab : 0);
    free(b);
}

static void test_grow_overflow(void)
{
    Wide *w = NULL, *before;
    size_t cap = 0;
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 5) == 0);
    w[4].v[0] = 42;
    before = w;
    /* need * elem past SIZE_MAX, or past PTRDIFF_MAX: refused before any
     * multiplication, the array and its capacity unchanged */
    errno = 0;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, SIZE_MAX / sizeof *w + 1), -1);
    CU_ASSERT_EQUAL(errno, ENOMEM);
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, SIZE_MAX), -1);
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, (size_t)PTRDIFF_MAX / sizeof *w + 1), -1);
    CU_ASSERT_EQUAL(util_grow_zero((void **)&w, &cap, SIZE_MAX / 2 + 1, 2), -1);
    CU_ASSERT_EQUAL(util_grow((void **)&w, &cap, cap + 1, SIZE_MAX / 2 + 1), -1);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    /* representable but more than memory holds: realloc fails, the same */
    errno = 0;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, (size_t)PTRDIFF_MAX / sizeof *w), -1);
    CU_ASSERT_EQUAL(errno, ENOMEM);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    /* still usable afterwards */
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, 40), 0);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    free(w);
}

int main(void)
{
    static const struct { const char *name; CU_TestFunc fn; } tests[] = {
        {"grow: nothing asked", test_grow_zero_need},
        {"grow: first, doubled, past the double, appends", test_grow_growth},
        {"grow: added elements zeroed", test_grow_zeroed},
        {"grow: overflow and no memory", test_grow_overflow},
    };
    CU_pSuite suite;
    unsigned failed;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    suite = CU_add_suite("util", NULL, NULL);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        CU_add_test(suite, tests[i].name, tests[i].fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
