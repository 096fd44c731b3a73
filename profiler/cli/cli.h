/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the approf command line: the command functions each
 * cli/cmd_*.c file provides (argc/argv start at the command name),
 * opening the database with a message, the one bad-option-value message
 * (common.c), the defaults, and the model options every command that
 * builds a model shares (model_options.c); usage errors and number parsing
 * are cliutil's (cliutil/cliutil.h). Exit codes: 0 ok, 1 runtime failure, 2 usage, 3 infeasible,
 * 130/143 interrupted.
 */
#ifndef APPROF_CLI_H
#define APPROF_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "cliutil.h"
#include "costdb.h"
#include "model/zoo.h"

typedef int (*ApprofCommandFn)(int argc, char **argv);

/* Defaults, each named once: the commands and their --help texts use these.
 * APPROF_DEFAULT_HARDWARE and APPROF_DEFAULT_EPS belong to the libraries
 * (profiler/sweep/sweep.c falls back to the same spec by itself; the
 * layering of graph.h takes eps from its caller), which name none; they are
 * kept here until a library header does. */
/* the analytic backend's spec without a GPU or --hardware */
#define APPROF_DEFAULT_HARDWARE "a100-40g"
/* Alpa's AutoLayerOption eps: the layer FLOP imbalance allowance */
#define APPROF_DEFAULT_EPS 0.5
#define APPROF_DEFAULT_MODEL "resnet50"    /* approf sweep without --model */
#define APPROF_DEFAULT_DB "results.db"     /* the cost database of sweep, probe, hardware curves */
#define APPROF_SWEEP_DEFAULT_LAYERS 16     /* approf sweep without --layers */
#define APPROF_SHOW_DEFAULT_LAYERS 4       /* approf model show without --layers */
/* A macro's value as a string literal, for help texts: CLI_STR(APPROF_DEFAULT_EPS) is "0.5". */
#define CLI_STR(x) CLI_STR_(x)
#define CLI_STR_(x) #x

/* ---- option values (common.c) ----------------------------------------------
 * The one message of a bad option value: "approf: --OPT needs WHAT, got
 * 'VALUE'" and "Try 'approf CMD --help'" on stderr (opt without "--"; what
 * is a printf format: "an integer in 1..8"). Returns APPROF_EXIT_USAGE. */
int cli_bad_value(const char *cmd, const char *opt, const char *value, const char *what, ...)
    __attribute__((format(printf, 4, 5)));
/* An integer option in [lo, hi]: 0 with *out set, or cli_bad_value's status. */
int cli_int_value(const char *cmd, const char *opt, const char *value, int64_t lo, int64_t hi,
                  int64_t *out);
/* A choice option: 0 with *out set, or cli_bad_value's status ("one of a|b|c"). */
int cli_choice_value(const char *cmd, const char *opt, const char *value, const CliChoice *choices,
                     int *out);

/* ---- the model options (model_options.c) -----------------------------------
 * One table of the options that describe the model and its layers, taken
 * by every command that builds a model (approf model show|export, approf
 * sweep): --model, --model-file, --hf-config, --preset, --dataset,
 * --attention, --capacity-factor, --mlm-positions, --dropout, --dtype,
 * --num-layers, --hidden, --heads, --seq-len, --vocab, --depth, --width
 * (also --width-factor), --num-filters, --image-size, --num-classes,
 * --manual-boundaries (also --manual-boundary), --layers, --eps and
 * --manual-layers (also --manual). A command adds cli_model_longopts() to
 * its getopt_long table and hands each code to cli_model_option(). */
typedef struct CliModelArgs {
    const char *name;          /* --model (approf model: also its NAME operand) */
    const char *model_file;    /* --model-file */
    const char *hf_config;     /* --hf-config */
    ApprofZooOptions zoo;      /* the zoo's options; zoo.dtype: --dtype's canonical name */
    ApprofDtype dtype;         /* --dtype, when dtype_set */
    int dtype_set;
    int layers;                /* --layers L; 0: the command's default */
    double eps;                /* --eps (APPROF_DEFAULT_EPS) */
    int manual_layers;         /* --manual-layers */
    const char *model_only;    /* the first option given that a sweep cannot carry
                                * (ApprofSweepConfig has no field for it), or NULL */
} CliModelArgs;

/* getopt codes of the model options: CLI_MODEL_OPT_BASE + their index; a
 * command's own codes stay below. */
#define CLI_MODEL_OPT_BASE 0x1000
#define CLI_MODEL_NOT_MINE (-1)
struct option;

/* Defaults: nothing given, eps APPROF_DEFAULT_EPS. */
void cli_model_args_init(CliModelArgs *m);
/* The getopt_long entries of the model options (aliases included) into
 * out: their count, or -1 when cap is too small. */
int cli_model_longopts(struct option *out, int cap);
/* Option code of command cmd with value (spelled: the name given, NULL: the
 * option's own): CLI_MODEL_NOT_MINE when code is not a model option, else
 * 0 with the value stored in m, or APPROF_EXIT_USAGE after the message. */
int cli_model_option(const char *cmd, int code, const char *value, const char *spelled,
                     CliModelArgs *m);
/* The model options, then the command's own (own ends with a zero entry),
 * then the zero entry, into out: 0, or -1 when cap is too small. */
#define CLI_MAX_LONGOPTS 96
int cli_longopts_join(struct option *out, int cap, const struct option *own);
/* One model source at most (name, --model-file, --hf-config) and no choice
 * that does not apply to it: 0, or APPROF_EXIT_USAGE after the message. */
int cli_model_check_source(const char *cmd, const CliModelArgs *m);
/* The "Model" and "Layers" sections of cmd's --help. */
void cli_model_help(FILE *f, const char *cmd, int default_layers);

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
/* sweep_usage.c: approf sweep --help (stdout) */
void cli_sweep_usage(void);

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
/* The name of the signal that stopped a command: SIGTERM, SIGHUP, else
 * SIGINT (the sweep's stop handler catches these three). */
const char *cli_stop_signal_name(int sig);

#endif
