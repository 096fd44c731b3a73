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

/* The bytes of the file at path (malloc'd; *len set); aborts when it cannot
 * be read or is empty. */
uint8_t *fuzz_read_file(const char *path, size_t *len);

/* Writes base (len bytes) to work_path and runs the input's SQL on it as
 * someone crafting a database would: bounded (no ATTACH, a step budget, 1
 * MB values), foreign keys and CHECK constraints off, triggers off when
 * no_triggers; SQL errors are part of the game. */
void fuzz_craft_db(const char *work_path, const uint8_t *base, size_t base_len,
                   const uint8_t *sql, size_t size, int no_triggers);

#endif
