/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the approf command line: the command functions each
 * cli/cmd_*.c file provides (argc/argv start at the command name), and
 * opening the database with a message; usage errors and option parsing
 * are cliutil's (cliutil/cliutil.h). Exit codes: 0 ok, 1 runtime failure, 2 usage, 3 infeasible,
 * 130/143 interrupted.
 */
#ifndef APPROF_CLI_H
#define APPROF_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "cliutil.h"
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
/* sweep_summary.c: what a sweep says at its end (stderr) */
struct ApprofSweepSummary;
struct ApprofSweepConfig;
void cli_sweep_print_summary(const struct ApprofSweepSummary *s, const char *db_path);
/* entries out of memory in Alpa's plain space over the command's sweeps,
 * and what adds the memory-saving variants */
void cli_sweep_oom_notice(const struct ApprofSweepConfig *cfg, size_t out_of_memory, int sweeps);
/* a sweep at one micro-batch size: what it leaves out, and the sizes to add */
void cli_sweep_one_size_notice(const struct ApprofSweepConfig *cfg);
/* cmd_merge.c */
int approf_cmd_merge(int argc, char **argv);
/* cmd_probe.c */
int approf_cmd_probe(int argc, char **argv);
/* cmd_compare.c */
int approf_cmd_compare(int argc, char **argv);

/* Opens the database, printing a clear message on failure. */
int cli_open_db(const char *path, int flags, Costdb **out);
/* The sweep to use: the given id (checked), else the newest. Prints errors. */
int cli_pick_sweep(Costdb *db, int64_t requested, int64_t *out);
/* The exit status of a command that returned rc, once standard output is
 * flushed: a command that succeeded but whose output could not be written
 * ('approf models > /dev/full') prints "write error on standard output:
 * why" and fails (APPROF_EXIT_FAIL); any other rc comes back as it is. */
int cli_stdout_finish(int rc);

#endif
