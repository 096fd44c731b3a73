/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Schema 13's migration of the shared placement lists (schemas/README.md,
 * "placement"): each list already stored is rewritten with repeats by the
 * encoder the writer uses (placement_codec.c), so an old file's lists are
 * as compact as a new one's and the writer finds them by hash and text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "placement_codec.h"

/* Schema 13's migration (costdb/db.c, inside its transaction): every shared
 * list rewritten with repeats, its id kept, so the sets that reference it
 * read the same items. A list that does not decode stays as it is (the
 * reader refuses it, naming its set, as before). In batches by id: no
 * update of a row the running SELECT has yet to read. */
int cdb_placement_tails_recode(Costdb *db)
{
    static const char sql_sel[] =
        "SELECT id, items FROM placement_tail WHERE id > ?1 ORDER BY id LIMIT 256";
    static const char sql_upd[] = "UPDATE placement_tail SET hash = ?1, items = ?2 WHERE id = ?3";
    int64_t last = INT64_MIN, ids[256];
    char *texts[256], *buf = NULL;
    size_t cap = 0, got;
    int rc = 0;
    do {
        sqlite3_stmt *st = NULL;
        got = 0;
        if ((rc = cdb_prepare(db, sql_sel, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, last);
        while (got < 256 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 1);
            ids[got] = last = sqlite3_column_int64(st, 0);
            if (!(texts[got++] = strdup(t ? (const char *)t : ""))) {
                rc = COSTDB_ENOMEM;
                break;
            }
        }
        rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : rc < 0 ? rc : cdb_fail(db, rc, sql_sel);
        cdb_release(st);
        for (size_t k = 0; k < got && rc >= 0; k++) {
            CdbItem *it = NULL;
            CdbPair *pr = NULL;
            size_t ni = 0, len = 0;
            /* from a base in the middle of the indices: a list's deltas go
             * below its first tensor (inputs before parameters) */
            int64_t count[3] = {0, 0, 0}, prev = INT64_C(1) << 30;
            if (cdb_items_decode(texts[k], 1, prev, 0, &it, &ni) < 0)
                continue;
            if (ni && !(pr = malloc(ni * sizeof *pr)))
                rc = COSTDB_ENOMEM;
            for (size_t i = 0; i < ni && pr; i++) {
                pr[i] = (CdbPair){it[i].tensor - prev, it[i].spec};
                prev = it[i].tensor;
                count[it[i].role]++;
            }
            if (rc >= 0 && (rc = cdb_items_encode(count, pr, ni, &buf, &cap, &len)) >= 0 &&
                strcmp(buf, texts[k]) != 0 && (rc = cdb_prepare(db, sql_upd, &st)) >= 0) {
                sqlite3_bind_int64(st, 1, (int64_t)cdb_tail_hash(buf));
                cdb_bind_text(st, 2, buf, 0);
                sqlite3_bind_int64(st, 3, ids[k]);
                rc = cdb_exec_stmt(db, st, sql_upd);
                cdb_release(st);
            }
            free(it);
            free(pr);
        }
        for (size_t k = 0; k < got; k++)
            free(texts[k]);
    } while (rc >= 0 && got == 256);
    free(buf);
    return rc < 0 ? rc : 0;
}
