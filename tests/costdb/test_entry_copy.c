/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_entry_copy (costdb.h; issue 38, wrhand): the sweep's writer queue
 * and its batch copy entries with it, not whole, so a copy lands on a
 * buffer that still holds an older entry's bytes. Every field comes over,
 * the error text with its NUL (all 512 bytes when it has none), and the
 * bytes after the NUL are the destination's own: which is exact only
 * because every reader takes error as a string, checked here by a put of
 * copies made over dirty buffers that reads back the same as the originals.
 */
#include <CUnit/Basic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "testutil.h"

/* An entry whose every byte is set (error's unused rest too). */
static CostdbEntry sample(int config, const char *error)
{
    CostdbEntry e;
    memset(&e, 0x5a, sizeof e);
    e.start_layer = 0;
    e.end_layer = 1;
    e.submesh_index = 0;
    e.config_index = config;
    e.phase = config % 2 ? COSTDB_BWD : COSTDB_FWD;
    e.compute_cost = 0.25 + config;
    e.peak_memory = 1000 + config;
    e.invar_size = 10;
    e.outvar_size = 20;
    e.temp_buffer_size = 30;
    e.available_memory = 80000000000LL;
    e.intermediate_size = 40;
    e.initial_size = 50;
    e.repeats = 1;
    e.spread = 0;
    e.reused = 0;
    e.status = *error ? COSTDB_STATUS_FAILED : COSTDB_STATUS_OK;
    memcpy(e.error, error, strlen(error) + 1); /* the rest stays 0x5a */
    e.apply_cost = 0.5;
    e.wgrad_cost = -1;
    e.unfit_cost = 0;
    e.temp_activation_size = 7;
    return e;
}

/* The fields, and error up to its NUL, equal; the rest of the buffer is
 * what the destination held. */
static void test_fields_and_text(void)
{
    static const char *texts[] = {"", "x", "out of memory: 3 GB more than the GPU holds"};
    for (size_t t = 0; t < 3; t++) {
        CostdbEntry e = sample(3, texts[t]), d;
        size_t len = strlen(texts[t]);
        memset(&d, 0xc3, sizeof d);
        costdb_entry_copy(&d, &e);
        CU_ASSERT_EQUAL(memcmp(&d, &e, offsetof(CostdbEntry, error)), 0);
        CU_ASSERT_STRING_EQUAL(d.error, texts[t]);
        CU_ASSERT_EQUAL((unsigned char)d.error[len + 1], 0xc3);
        CU_ASSERT_EQUAL(memcmp((char *)&d + offsetof(CostdbEntry, apply_cost),
                               (char *)&e + offsetof(CostdbEntry, apply_cost),
                               sizeof e - offsetof(CostdbEntry, apply_cost)), 0);
    }
}

/* An error without a NUL (refused by a put) comes over whole. */
static void test_no_nul_whole(void)
{
    CostdbEntry e = sample(1, ""), d;
    memset(e.error, 'a', sizeof e.error);
    memset(&d, 0, sizeof d);
    costdb_entry_copy(&d, &e);
    CU_ASSERT_EQUAL(memcmp(&d, &e, sizeof e), 0);
}

/* Entries put from copies over dirty buffers read back as the originals
 * put directly do (tu_two_layer_sweep's 8 entries, two of them failed
 * with an error text). */
static void test_put_reads_back_same(void)
{
    const char *paths[2] = {"copy_a.db", "copy_b.db"};
    CostdbEntry orig[8], copy[8], *got[2] = {NULL, NULL};
    CostdbSweep s;
    size_t n[2] = {0, 0};
    for (int f = 0; f < 2; f++) {
        Costdb *db = tu_two_layer_sweep(tu_path(paths[f]), "copy", &s, orig);
        for (int i = 0; i < 8; i++) {
            if (i == 2 || i == 5) {
                orig[i].status = COSTDB_STATUS_FAILED;
                orig[i].compute_cost = 1.0 / 0.0;
                snprintf(orig[i].error, sizeof orig[i].error, "failed: case %d", i);
            }
            memset(&copy[i], 0x77, sizeof copy[i]);
            snprintf(copy[i].error, sizeof copy[i].error, "an older, longer error text of another");
            costdb_entry_copy(&copy[i], &orig[i]);
        }
        CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, f ? copy : orig, 8, 0), 0);
        CU_ASSERT_EQUAL(costdb_entries_get(db, s.id, &got[f], &n[f]), 0);
        costdb_close(&db);
    }
    CU_ASSERT_EQUAL(n[0], 8);
    CU_ASSERT_EQUAL(n[1], n[0]);
    for (size_t i = 0; i < n[0] && i < n[1]; i++) {
        CU_ASSERT_EQUAL(got[0][i].config_index, got[1][i].config_index);
        CU_ASSERT_EQUAL(got[0][i].phase, got[1][i].phase);
        CU_ASSERT_EQUAL(got[0][i].status, got[1][i].status);
        CU_ASSERT_EQUAL(got[0][i].compute_cost, got[1][i].compute_cost);
        CU_ASSERT_EQUAL(got[0][i].peak_memory, got[1][i].peak_memory);
        CU_ASSERT_STRING_EQUAL(got[0][i].error, got[1][i].error);
    }
    CU_ASSERT_STRING_EQUAL(got[1][2].error, "failed: case 2");
    free(got[0]);
    free(got[1]);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the fields and the error text", test_fields_and_text},
        {"an error without a NUL whole", test_no_nul_whole},
        {"put from copies reads back the same", test_put_reads_back_same},
    };
    return CUNIT_RUN("costdb_entry_copy", tests);
}
