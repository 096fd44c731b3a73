/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transaction-control SQL texts, defined once in db_stmt.c. db.c's
 * migrations and open checks use the same texts: the statement cache keys a
 * statement by its text's address, so one definition means one cached
 * statement each. Only the costdb sources include it.
 */
#ifndef COSTDB_DB_TXN_SQL_H
#define COSTDB_DB_TXN_SQL_H

extern const char cdb_sql_begin[];    /* "BEGIN IMMEDIATE" */
extern const char cdb_sql_commit[];   /* "COMMIT" */
extern const char cdb_sql_rollback[]; /* "ROLLBACK" */

#endif
