/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdb_prepare's guess by the SQL text's address (costdb_int.h
 * Costdb.stmt_hint; issue 38, wrrows): with more statement texts than
 * slots, so that texts share slots, asked for in turns and in other
 * orders, each text always gets its own statement, prepared once.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb_int.h"
#include "testutil.h"

#define N_TEXTS 150

static char texts[N_TEXTS][48]; /* static, as cdb_prepare's texts are */

static void test_each_text_its_statement(void)
{
    const char *path = tu_path("stmt_hint.db");
    sqlite3_stmt *first[N_TEXTS];
    Costdb *db = NULL;
    char err[256];
    int wrong = 0;
    tu_unlink_db(path);
    CU_ASSERT_FATAL(costdb_open(path, 0, &db, err, sizeof err) == 0);
    for (int i = 0; i < N_TEXTS; i++) {
        snprintf(texts[i], sizeof texts[i], "SELECT %d", i);
        CU_ASSERT_FATAL(cdb_prepare(db, texts[i], &first[i]) == 0);
        cdb_release(first[i]);
    }
    CU_ASSERT_EQUAL(db->n_cache >= N_TEXTS, 1);
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < N_TEXTS; k++) {
            /* in order, backwards, in strides, and the same text twice */
            int i = round == 0 ? k : round == 1 ? N_TEXTS - 1 - k
                    : round == 2 ? (k * 7) % N_TEXTS : k / 2;
            sqlite3_stmt *st = NULL;
            CU_ASSERT_FATAL(cdb_prepare(db, texts[i], &st) == 0);
            wrong += st != first[i] || strcmp(sqlite3_sql(st), texts[i]) != 0;
            cdb_release(st);
        }
    CU_ASSERT_EQUAL(wrong, 0);
    costdb_close(&db);
    tu_unlink_db(path);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"each text its own statement", test_each_text_its_statement},
    };
    return CUNIT_RUN("costdb_stmt_hint", tests);
}
