/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apreport: the reports command line. Loads a plan from a cost database and
 * writes the Alpa-compatible dumps, report.json, report.html, trace.json
 * the plan as code and the launch configurations (Megatron-LM, DeepSpeed,
 * torchtitan) into --out; prints a short summary. Exit status: 0
 * ok, 1 runtime failure, 2 usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"
#include "cliutil.h"
#include "config.h"
#include "outfile.h"
#include "schedule.h"

static void help(void)
{
    puts("Usage: apreport [--db FILE] --out DIR [OPTIONS]\n"
         "Explain a plan: Alpa-compatible dumps, report.json, report.html, trace.json,\n"
         "the plan as code and its launch configuration for Megatron-LM / NeMo,\n"
         "DeepSpeed and torchtitan.\n\n"
         "  --db FILE      the cost database (with a plan from apsolve; default\n"
         "                 results.db, as approf sweep)\n"
         "  --plan ID      the plan to report (default: the newest)\n"
         "  --out DIR      where to write the files (created if missing)\n"
         "  --name NAME    prefix of the Alpa dump files (default: plan<ID>)\n"
         "  --no-store     do not store the derived resharding tasks in the database\n"
         "  --schedule S   the schedule the plan runs: 1f1b, gpipe, interleaved, zb-h1,\n"
         "                 interleaved-zb or zbv\n"
         "                 (default: the one apsolve stored with the plan, else 1f1b);\n"
         "                 the deadlock check, the memory per stage, trace.json and\n"
         "                 the plan code follow it\n"
         "  --virtual-stages V  model chunks per stage for interleaved (default 2)\n"
         "  --allow-infeasible  write the plan code (<name>_plan.py, the HTML code\n"
         "                 block) for a plan stored as infeasible too, marked as such;\n"
         "                 without it an infeasible plan gets every other output,\n"
         "                 each marked INFEASIBLE, and no code\n"
         "  --export LIST  launch configurations to write: megatron, deepspeed,\n"
         "                 torchtitan (comma-separated), all or none (default all):\n"
         "                 <name>_megatron.args, <name>_deepspeed.json,\n"
         "                 <name>_torchtitan.toml; a plan a runtime cannot express\n"
         "                 gets the closest one it can, with its estimated cost\n"
         "                 (infeasible plans: as the plan code)\n"
         "  --quiet        print nothing on success\n"
         "  --help         this text\n"
         "  --version      the version\n\n"
         "Exit status: 0 ok, 1 runtime failure, 2 usage error.");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},   {"plan", required_argument, NULL, 'p'},
        {"out", required_argument, NULL, 'o'},  {"name", required_argument, NULL, 'n'},
        {"no-store", no_argument, NULL, 'S'},   {"quiet", no_argument, NULL, 'q'},
        {"schedule", required_argument, NULL, 's'}, {"virtual-stages", required_argument, NULL, 'v'},
        {"allow-infeasible", no_argument, NULL, 'I'}, {"export", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},       {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *dbpath = NULL, *outdir = NULL;
    ApreportOptions opt = {0, NULL, 1, APREPORT_SCHED_1F1B, 0};
    int sset = 0;
    int vset = 0;
    int c, quiet = 0, rc;
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    char err[1024] = "";
    cli_set_program("apreport");
    opterr = 0;
    while ((c = getopt_long(argc, argv, "d:p:o:n:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dbpath = optarg; break;
        case 'o': outdir = optarg; break;
        case 'n': opt.name = optarg; break;
        case 'S': opt.store_resharding = 0; break;
        case 'q': quiet = 1; break;
        case 'I': opt.allow_infeasible = 1; break;
        case 'e':
            if (apreport_export_parse(optarg, &opt.exports, err, sizeof(err)) < 0)
                return cli_usage_error(NULL, "--export: %s", err);
            break;
        case 'h': help(); return APPROF_EXIT_OK;
        case 'V':
            printf("apreport %s\n", APPROF_VERSION);
            return APPROF_EXIT_OK;
        case 's': {
            /* the solver's names, in the order of ApreportScheduleKind */
            int k = apsolve_schedule_parse(optarg);
            if (k < 0)
                return cli_usage_error(NULL, "--schedule must be 1f1b, gpipe, interleaved, zb-h1, "
                                       "interleaved-zb or zbv, not '%s'", optarg);
            opt.schedule = (ApreportScheduleKind)k;
            sset = 1;
            break;
        }
        case 'v': {
            int64_t v;
            if (cli_parse_int(optarg, 2, 1024, &v))
                return cli_usage_error(NULL, "--virtual-stages needs an integer from 2 to 1024, not '%s'",
                                   optarg);
            opt.virtual_stages = (int)v;
            vset = 1;
            break;
        }
        case 'p': {
            int64_t v;
            if (cli_parse_int(optarg, 1, INT64_MAX, &v))
                return cli_usage_error(NULL, "--plan needs a positive plan id, not '%s'", optarg);
            opt.plan_id = v;
            break;
        }
        default:
            return cli_usage_error(NULL, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(NULL, "unexpected argument '%s'", argv[optind]);
    if (!dbpath)
        dbpath = "results.db"; /* approf sweep's default */
    if (!outdir)
        return cli_usage_error(NULL, "--out DIR is required");
    if (vset && opt.schedule != APREPORT_SCHED_INTERLEAVED &&
        opt.schedule != APREPORT_SCHED_INTERLEAVED_ZB)
        return cli_usage_error(NULL, "--virtual-stages needs --schedule interleaved or "
                               "interleaved-zb");
    if ((opt.schedule == APREPORT_SCHED_INTERLEAVED ||
         opt.schedule == APREPORT_SCHED_INTERLEAVED_ZB) && !vset)
        opt.virtual_stages = 2;
    opt.schedule_from_plan = !sset;
    if (opt.name && (!*opt.name || strchr(opt.name, '/')))
        return cli_usage_error(NULL, "--name must be a non-empty file name prefix");
    rc = costdb_open(dbpath, opt.store_resharding ? COSTDB_OPEN_NOCREATE : COSTDB_OPEN_READONLY,
                     &db, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "apreport: %s\n", err[0] ? err : costdb_strerror(rc));
        return APPROF_EXIT_FAIL;
    }
    rc = apreport_load(db, &opt, &r, err, sizeof(err));
    if (rc == 0)
        rc = apreport_write_all(r, outdir, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "apreport: %s\n", err[0] ? err : apreport_strerror(rc));
    } else if (!quiet) {
        apreport_write_summary(r, stdout);
        int code = apreport_feasible(r) || opt.allow_infeasible;
        printf("wrote %s/report.html, report.json, trace.json, the Alpa dumps%s%s\n", outdir,
               code && !(opt.exports & APREPORT_EXPORT_NONE) ? " and the launch files" : "",
               code ? "" : " (no plan code or launch files: the plan is infeasible)");
    }
    if (rc == 0 && apsolve_stdout_check(err, sizeof(err)) < 0) {
        fprintf(stderr, "apreport: %s\n", err);
        rc = APREPORT_EIO;
    }
    apreport_free(&r);
    costdb_close(&db);
    return rc < 0 ? APPROF_EXIT_FAIL : APPROF_EXIT_OK;
}
