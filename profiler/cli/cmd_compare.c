/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf compare A.db B.db: matches the stage profiles of a sweep of each
 * database (model signature, layer range, submesh shape, config, phase) and
 * prints the ratio B/A per entry sorted by deviation, summary statistics,
 * the entries only one side has and the plan the solver finds on each side
 * (reports/apreport.h does the work). A measured database against an
 * analytic one gives the cost model's error table; two machines give what
 * changes when moving from one to the other.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apreport.h"
#include "costdb_text.h"
#include "cli/cli.h"
#include "outfile.h"

/* 1 when sweep id (0: the newest) of db prices FP8 training (its options'
 * "precision", profiler/sweep/sweep_db.c); 0 otherwise or unknown. */
static int precision_of(Costdb *db, int64_t id)
{
    CostdbSweep s;
    if (!id && costdb_sweep_latest(db, &id) < 0)
        return 0;
    if (!id || costdb_sweep_get(db, id, &s) < 0)
        return 0;
    return strstr(s.options, "\"precision\":\"fp8\"") != NULL;
}

static void compare_help(void)
{
    puts("Usage: approf compare A.db B.db [OPTIONS]\n"
         "Compare two cost databases entry by entry (ratios are B / A).\n\n"
         "  --sweep-a ID      sweep of A (default: the newest)\n"
         "  --sweep-b ID      sweep of B (default: the newest)\n"
         "  --format FMT      text (default), csv, json or html\n"
         "  --no-plan         do not run the solver on each side\n"
         "  --across-precision  compare an FP8 sweep (approf sweep --fp8) with a 16-bit\n"
         "                    one: the ratios are then what FP8 changes (refused without)\n"
         "  --help            this text\n\n"
         "Exit status: 0 ok, 1 runtime failure, 2 usage error.");
}

int approf_cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sweep-a", required_argument, NULL, 'a'}, {"sweep-b", required_argument, NULL, 'b'},
        {"format", required_argument, NULL, 'f'},  {"no-plan", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},          {"across-precision", no_argument, NULL, 'X'},
        {NULL, 0, NULL, 0},
    };
    ApreportCompareOptions opt = {0, 0, NULL, NULL, 1};
    const char *format = "text";
    Costdb *a = NULL, *b = NULL;
    ApreportCompare *cmp = NULL;
    char err[1024] = "";
    int c, wrc, rc = APPROF_EXIT_FAIL, across = 0;
    int64_t v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
        case 'b':
            if (cli_parse_int(optarg, 1, INT64_MAX, &v) < 0)
                return cli_usage_error("compare", "--sweep-%c needs a positive sweep id, not '%s'",
                                       c, optarg);
            if (c == 'a')
                opt.sweep_a = v;
            else
                opt.sweep_b = v;
            break;
        case 'f':
            format = optarg;
            break;
        case 'P':
            opt.solve = 0;
            break;
        case 'X':
            across = 1;
            break;
        case 'h':
            compare_help();
            return APPROF_EXIT_OK;
        default:
            return cli_usage_error("compare", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (strcmp(format, "text") && strcmp(format, "csv") && strcmp(format, "json") &&
        strcmp(format, "html"))
        return cli_usage_error("compare", "unknown format '%s' (text, csv, json or html)", format);
    if (argc - optind != 2)
        return cli_usage_error("compare", "expected two databases, got %d", argc - optind);
    opt.label_a = argv[optind];
    opt.label_b = argv[optind + 1];
    if (cli_open_db(argv[optind], COSTDB_OPEN_READONLY, &a) < 0 ||
        cli_open_db(argv[optind + 1], COSTDB_OPEN_READONLY, &b) < 0)
        goto cleanup;
    if (!across && precision_of(a, opt.sweep_a) != precision_of(b, opt.sweep_b)) {
        rc = cli_usage_error("compare", "one sweep prices FP8 training (approf sweep --fp8), the "
                             "other 16-bit: the ratios would be what FP8 changes, not two "
                             "measurements of one program (--across-precision to compare them)");
        goto cleanup;
    }
    if (apreport_compare(a, b, &opt, &cmp, err, sizeof(err)) < 0) {
        cli_fail("%s", err[0] ? err : "comparison failed");
        goto cleanup;
    }
    wrc = apreport_compare_write(cmp, format, stdout);
    err[0] = '\0';
    if (apsolve_stdout_check(err, sizeof(err)) < 0 || wrc < 0) {
        cli_fail("%s", err[0] ? err : "cannot write the comparison");
        goto cleanup;
    }
    rc = APPROF_EXIT_OK;
cleanup:
    apreport_compare_free(&cmp);
    costdb_close(&a);
    costdb_close(&b);
    return rc;
}
