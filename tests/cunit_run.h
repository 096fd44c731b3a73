/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The main of a CUnit test program: its tests run as one suite in CUnit's
 * verbose mode, the exit status meson reads. Shared by every test area.
 */
#ifndef CUNIT_RUN_H
#define CUNIT_RUN_H

#include <stddef.h>

/* One test of a program: its name and its function. */
typedef struct CunitTest {
    const char *name;
    void (*fn)(void);
} CunitTest;

/* Runs the n tests as the suite `suite`; returns the program's exit
 * status: 0 when every test passed, 1 when one failed, 2 when CUnit could
 * not be set up. */
int cunit_run(const char *suite, const CunitTest *tests, size_t n);
#define CUNIT_RUN(suite, tests) cunit_run(suite, tests, sizeof(tests) / sizeof((tests)[0]))

/* The same with a suite set-up run before the first test and a tear-down
 * after the last (CUnit's suite initialisation and cleanup functions: a
 * non-zero return from either counts as a failure). */
int cunit_run_fixture(const char *suite, int (*setup)(void), int (*teardown)(void),
                      const CunitTest *tests, size_t n);
#define CUNIT_RUN_FIXTURE(suite, setup, teardown, tests)                                           \
    cunit_run_fixture(suite, setup, teardown, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
