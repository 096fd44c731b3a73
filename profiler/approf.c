/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf: the profiler's command line. Dispatches "approf COMMAND ..." to the
 * command functions of cli/cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli/cli.h"

typedef struct {
    const char *name;
    ApprofCommandFn fn;
    const char *summary;
} Command;

static const Command commands[] = {
    {"sweep", approf_cmd_sweep, "profile every (layer range, submesh, config) of a model"},
    {"merge", approf_cmd_merge, "combine the sweeps of --shard K/N runs into one database"},
    {"list", approf_cmd_list, "list the sweeps of a database"},
    {"show", approf_cmd_show, "print a sweep's entries in Alpa's format"},
    {"export", approf_cmd_export, "write a sweep's stage profiles as CSV"},
    {"import", approf_cmd_import, "create a sweep from a CSV cost table"},
    {"models", approf_cmd_models, "list the model zoo"},
    {"model", approf_cmd_model, "show or export a model (layers, FLOPs, parameters)"},
    {"hardware", approf_cmd_hardware, "list or show hardware specs"},
    {"probe", approf_cmd_probe, "measure this machine's GPUs and links into the database"},
    {"compare", approf_cmd_compare, "compare two databases entry by entry"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fputs("Usage: approf COMMAND [OPTIONS]\n"
          "Offline profiling and cost-model database for auto-parallel training.\n\n"
          "Commands:\n", f);
    for (const Command *c = commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fputs("\n'approf COMMAND --help' describes a command's options.\n"
          "Exit status: 0 ok, 1 runtime failure, 2 usage error, 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).\n", f);
}

int main(int argc, char **argv)
{
    cli_set_program("approf");
    if (argc < 2)
        return cli_usage_error(NULL, "no command given");
    if (!strcmp(argv[1], "help") && argc > 2) {
        /* 'approf help sweep' is 'approf sweep --help' */
        for (const Command *c = commands; c->name; c++)
            if (!strcmp(c->name, argv[2])) {
                char *args[] = {argv[2], "--help", NULL};
                return cli_stdout_finish(c->fn(2, args));
            }
        return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return cli_stdout_finish(APPROF_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("approf %s\n", APPROF_VERSION);
        return cli_stdout_finish(APPROF_EXIT_OK);
    }
    /* every command's output is checked once here, before the exit */
    for (const Command *c = commands; c->name; c++)
        if (!strcmp(c->name, argv[1]))
            return cli_stdout_finish(c->fn(argc - 1, argv + 1));
    return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
}
