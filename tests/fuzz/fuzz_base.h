/* SPDX-License-Identifier: Apache-2.0 */
/* The small real database the db and CLI harnesses start from. */
#ifndef APPROF_FUZZ_BASE_H
#define APPROF_FUZZ_BASE_H

#include <stddef.h>
#include <stdint.h>

/* Creates (replacing) the database at path: mlp, 2 layers, 1x2, analytic
 * backend, with a stored auto plan. Returns its bytes (malloc'd; *len set);
 * aborts on failure. */
uint8_t *fuzz_base_db(const char *path, size_t *len);

#endif
