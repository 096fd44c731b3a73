/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf merge: combines the sweeps of `approf sweep --shard K/N` runs into
 * one complete sweep (profiler/sweep/merge.h does the work).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "graph.h"
#include "plural.h"
#include "sweep/merge.h"

static void usage(void)
{
    fputs(
        "Usage: approf merge --db OUT.db IN.db [IN.db ...]\n"
        "Combines the shard sweeps of `approf sweep --shard K/N` runs into one complete\n"
        "sweep in OUT.db, equal row by row to the sweep one process would have written.\n"
        "From each input it takes the newest shard sweep and the newest sweep of every\n"
        "other shard with the same inputs (several shards may share one file). The\n"
        "shards must be 0/N ... N-1/N, each once, each complete, all of one model,\n"
        "hardware, cluster, batch, layer split, search space, mode, dtype and backend.\n"
        "OUT.db is created if missing; an existing one gets a new sweep. Profile mode\n"
        "individual: the range entries are composed after merging.\n\n"
        "  --db FILE       output database (required; may be one of the inputs)\n"
        "  --quiet         no summary\n"
        "  -h, --help      this text\n\n"
        "Exit status: 0 merged, 1 the shards do not form one sweep or a database\n"
        "failed (nothing is written then), 2 usage.\n",
        stdout);
}

enum { OPT_DB = 256, OPT_QUIET };

static const struct option long_opts[] = {
    {"db", required_argument, NULL, OPT_DB},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int approf_cmd_merge(int argc, char **argv)
{
    ApprofMergeSummary sum;
    const char *out = NULL;
    char err[2048] = "";
    int opt, quiet = 0, rc;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (opt) {
        case OPT_DB: out = optarg; break;
        case OPT_QUIET: quiet = 1; break;
        case 'h': usage(); return APPROF_EXIT_OK;
        case ':': return cli_usage_error("merge", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("merge", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!out)
        return cli_usage_error("merge", "--db OUT.db is required");
    if (optind >= argc)
        return cli_usage_error("merge", "no input databases");
    rc = approf_merge_shards(out, (const char *const *)(argv + optind), (size_t)(argc - optind),
                             &sum, err, sizeof err);
    if (rc < 0)
        return cli_fail("merge: %s", err[0] ? err : approf_strerror(rc));
    if (!quiet)
        fprintf(stderr,
                "approf: merged %d %s into sweep %lld of %s: %zu %s, %zu %s%s\n", sum.shard_n,
                costdb_plural(sum.shard_n, "shard", "shards"), (long long)sum.sweep_id, out,
                sum.entries + sum.composed,
                costdb_plural((long long)(sum.entries + sum.composed), "entry", "entries"),
                sum.placements, costdb_plural((long long)sum.placements, "placement", "placements"), sum.composed ? " (range entries composed: individual mode)" : "");
    return APPROF_EXIT_OK;
}
