/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the approf command line: the command functions each
 * cli/cmd_*.c file provides (argc/argv start at the command name), and
 * helpers for usage errors, NxM parsing and opening the database with a
 * message. Exit codes: 0 ok, 1 runtime failure, 2 usage, 3 infeasible,
 * 130/143 interrupted.
 */
#ifndef APPROF_CLI_H
#define APPROF_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "costdb.h"

#define APPROF_EXIT_OK 0
#define APPROF_EXIT_FAIL 1
#define APPROF_EXIT_USAGE 2
#define APPROF_EXIT_INFEASIBLE 3

typedef int (*ApprofCommandFn)(int argc, char **argv);

/* cmd_db.c */
int approf_cmd_list(int argc, char **argv);
int approf_cmd_show(int argc, char **argv);
int approf_cmd_export(int argc, char **argv);
int approf_cmd_import(int argc, char **argv);
/* cmd_model.c */
int approf_cmd_model(int argc, char **argv);
int approf_cmd_models(int argc, char **argv);
/* cmd_hardware.c */
int approf_cmd_hardware(int argc, char **argv);
/* cmd_curves.c: approf hardware curves (argv[0] is "curves") */
int approf_cmd_curves(int argc, char **argv);
/* cmd_sweep.c */
int approf_cmd_sweep(int argc, char **argv);
/* cmd_merge.c */
int approf_cmd_merge(int argc, char **argv);
/* cmd_probe.c */
int approf_cmd_probe(int argc, char **argv);
/* cmd_compare.c */
int approf_cmd_compare(int argc, char **argv);

/* Prints "approf: <message>" and the --help hint to stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "approf: <message>" to stderr; returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses "NxM" (both > 0). 0 or -1. */
int cli_parse_mesh(const char *s, int *n, int *m);
/* Parses a whole decimal integer in [lo, hi]. 0 or -1. */
int cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Parses a finite double in [lo, hi]. 0 or -1. */
/* A comma-separated list: each item (NUL-terminated copy) through item,
 * which returns its value (>= 0) or -1. Returns the count (<= max), or -1
 * for an empty list or item, a bad item or more than max items. */
int cli_parse_list(const char *s, int64_t (*item)(const char *), int64_t *out, int max);
int cli_parse_double(const char *s, double lo, double hi, double *out);
/* Opens the database, printing a clear message on failure. */
int cli_open_db(const char *path, int flags, Costdb **out);
/* The sweep to use: the given id (checked), else the newest. Prints errors. */
int cli_pick_sweep(Costdb *db, int64_t requested, int64_t *out);

#endif
