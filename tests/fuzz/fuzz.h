/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the fuzz harnesses: the libFuzzer entry point every
 * harness defines, a scratch directory for parsers that read files, and
 * FUZZ_CHECK, which aborts (a finding for libFuzzer, a failed test for the
 * replayer) when a property the code promises does not hold.
 */
#ifndef APPROF_FUZZ_H
#define APPROF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private directory (made once per process, removed at exit) for files
 * the harness hands to path-taking parsers. Never NULL: aborts on failure. */
const char *fuzz_tmpdir(void);
/* Writes data to DIR/name and returns the path in a static buffer (the
 * next call overwrites it); aborts when the file cannot be written. */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);
/* Copies data into a malloc'd NUL-terminated string (aborts on ENOMEM). */
char *fuzz_strndup(const uint8_t *data, size_t size);
/* Prints "fuzz: check failed: what (file:line)" and aborts. */
void fuzz_fail(const char *what, const char *file, int line) __attribute__((noreturn));

#define FUZZ_CHECK(cond) \
    do { \
        if (!(cond)) \
            fuzz_fail(#cond, __FILE__, __LINE__); \
    } while (0)

#endif
