/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the costdb tests: a private temporary directory, reading a
 * whole file to compare bytes, writing a file, and counting rows through a
 * separate raw SQLite connection (an oracle independent of costdb).
 */
#ifndef COSTDB_TESTUTIL_H
#define COSTDB_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Creates (once) and returns a fresh temporary directory. */
const char *tu_dir(void);
/* Joins tu_dir() and name into a static rotating buffer. */
const char *tu_path(const char *name);
/* Reads a whole file (malloc'd, NUL-terminated); NULL if missing. */
char *tu_read(const char *path, size_t *len);
/* Writes text to a file; 0 or -1. */
int tu_write(const char *path, const char *text);
/* Removes a database file and its -wal/-shm/-journal siblings. */
void tu_unlink_db(const char *path);
/* SELECT count(*) FROM table via a raw read-only connection; -1 on error. */
int64_t tu_count(const char *db_path, const char *table);
/* Runs SQL through a raw connection; 0 or -1. */
int tu_exec(const char *db_path, const char *sql);
/* Runs SQL through a raw connection as a careless writer would: no CHECK
 * constraints, no foreign keys and none of schema 4's typeof triggers
 * (strict_*: dropped for the statement and put back as they were), while
 * the triggers that make the stage_profile view writable still run; 0 or
 * -1. */
int tu_exec_untyped(const char *db_path, const char *sql);
/* 1 if the file exists. */
int tu_exists(const char *path);
/* Removes the temporary directory and everything in it. */
void tu_cleanup(void);

#endif
