/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf hardware curves import|show: measured communication curves of a
 * hardware row. `import` reads nccl-tests outputs (all_reduce_perf and
 * friends) and stores their points on the row of an analytic spec (or any
 * row by id), all files in one transaction: a bad file leaves the database
 * as it was. A sweep of that hardware then prices every collective the
 * curves cover from them (interpolated) instead of the spec's alpha-beta
 * model. `show` lists the curves of a row.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cuda/host.h"
#include "grow.h"
#include "hardware.h"
#include "json_write.h"


static void usage(FILE *f)
{
    fputs("Usage: approf hardware curves import FILE... [--db FILE] [--hardware NAME|FILE | --hardware-id ID]\n"
          "                                   [--collective KIND] [--group HxG]\n"
          "       approf hardware curves show [--db FILE] [--hardware NAME|FILE | --hardware-id ID]\n"
          "                                   [--format text|json]\n"
          "Measured communication curves of a hardware row. 'import' reads the output of\n"
          "nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,\n"
          "sendrecv_perf; out-of-place time per size) and replaces the curves it covers;\n"
          "every file is read before anything is written, in one transaction. A sweep on\n"
          "that hardware prices the collectives the curves cover from them (linear\n"
          "interpolation in bytes) and the others with the spec's alpha-beta model.\n"
          "'approf probe' measures and stores such curves on a GPU machine itself.\n\n"
          "Options:\n"
          "  --db FILE            database (default " APPROF_DEFAULT_DB ")\n"
          "  --hardware NAME|FILE the analytic spec whose row gets the curves (default\n"
          "                       " APPROF_DEFAULT_HARDWARE ", as approf sweep); the row is created if missing\n"
          "  --hardware-id ID     an existing hardware row instead (e.g. a measured one)\n"
          "  --collective KIND    all-reduce|all-gather|reduce-scatter|all-to-all|send-recv,\n"
          "                       when the output does not name its test\n"
          "  --group HxG          the device group (hosts x GPUs per host), when the output\n"
          "                       has no '#  Rank ... on HOST device D' lines\n"
          "  -f, --format FMT     show: text (default) or json (every point)\n"
          "  -h, --help           show this help\n", f);
}

enum { OPT_DB = 256, OPT_HARDWARE, OPT_HARDWARE_ID, OPT_COLLECTIVE, OPT_GROUP };

/* The hardware row: by id (must exist), or the spec's row (created). */
static int resolve_row(Costdb *db, const char *spec, int64_t id, int create, CostdbHardware *row)
{
    char err[1024];
    ApprofHardwareSpec hw;
    int rc;
    if (id > 0) {
        rc = costdb_hardware_get(db, id, row);
        if (rc == COSTDB_ENOTFOUND)
            return cli_fail("%s: no hardware row %lld (approf list shows the sweeps' rows)",
                            costdb_path(db), (long long)id);
        return rc < 0 ? cli_fail("%s", costdb_errmsg(db)) : 0;
    }
    if (approf_hardware_resolve(spec, &hw, err, sizeof err) < 0)
        return cli_fail("%s", err[0] ? err : "cannot resolve hardware spec");
    approf_hardware_to_costdb(&hw, row);
    if (create)
        rc = costdb_hardware_upsert(db, row);
    else
        rc = costdb_hardware_find(db, row->fingerprint, row);
    if (rc == COSTDB_ENOTFOUND) {
        row->id = 0;
        return 0;
    }
    return rc < 0 ? cli_fail("%s", costdb_errmsg(db)) : 0;
}

static int do_import(const char *db_path, const char *spec, int64_t id, const char *collective,
                     const char *group, char **files, int n_files)
{
    CostdbCommPoint *all = NULL;
    size_t n_all = 0, cap_all = 0;
    CostdbHardware row;
    Costdb *db = NULL;
    char err[1024];
    int rc = APPROF_EXIT_FAIL;

    /* read everything first: a bad file changes nothing */
    for (int i = 0; i < n_files; i++) {
        CostdbCommPoint *pts = NULL;
        size_t n = 0;
        FILE *f = !strcmp(files[i], "-") ? stdin : fopen(files[i], "r");
        if (!f) {
            free(all);
            return cli_fail("%s: cannot open: %s", files[i], strerror(errno));
        }
        rc = approf_nccl_tests_parse(f, files[i], collective, group, &pts, &n, err, sizeof err);
        if (f != stdin)
            fclose(f);
        if (rc < 0) {
            free(all);
            return cli_fail("%s", err);
        }
        if (UTIL_GROW(all, cap_all, n_all + n) < 0) {
            free(pts);
            free(all);
            return cli_fail("out of memory");
        }
        if (n)
            memcpy(all + n_all, pts, n * sizeof *pts);
        n_all += n;
        free(pts);
    }
    if (cli_open_db(db_path, 0, &db) < 0) {
        free(all);
        return APPROF_EXIT_FAIL;
    }
    rc = costdb_begin(db);
    if (rc == 0 && resolve_row(db, spec, id, 1, &row) != 0) {
        costdb_rollback(db);
        rc = 1;
        goto out;
    }
    if (rc == 0)
        rc = costdb_comm_put(db, row.id, all, n_all);
    if (rc == 0)
        rc = costdb_commit(db);
    else
        costdb_rollback(db);
    if (rc < 0) {
        cli_fail("%s", costdb_errmsg(db));
        rc = 1;
        goto out;
    }
    {
        ApprofCommCurves *c = NULL;
        size_t np = 0, nc;
        approf_comm_curves_new(all, n_all, NULL, &c);
        nc = approf_comm_curves_count(c, &np);
        fprintf(stderr, "approf: %s: %zu points in %zu curve%s stored on hardware %lld (%s)\n",
                db_path, n_all, nc, nc == 1 ? "" : "s", (long long)row.id, row.fingerprint);
        approf_comm_curves_free(&c);
    }
    rc = 0;
out:
    free(all);
    costdb_close(&db);
    return rc;
}

static int do_show(const char *db_path, const char *spec, int64_t id, int fmt)
{
    CostdbHardware row;
    CostdbCommPoint *pts = NULL;
    size_t n = 0;
    Costdb *db = NULL;
    int rc;

    if (cli_open_db(db_path, COSTDB_OPEN_READONLY, &db) < 0)
        return APPROF_EXIT_FAIL;
    rc = resolve_row(db, spec, id, 0, &row);
    if (rc == 0 && row.id > 0 && costdb_comm_list(db, row.id, &pts, &n) < 0)
        rc = cli_fail("%s", costdb_errmsg(db));
    if (rc) {
        costdb_close(&db);
        return APPROF_EXIT_FAIL;
    }
    if (fmt == CLI_FORMAT_JSON) {
        printf("{\"hardware_id\": %lld, \"points\": [", (long long)row.id);
        for (size_t i = 0; i < n; i++) {
            printf("%s\n {\"collective\": ", i ? "," : "");
            costdb_json_string(stdout, pts[i].collective);
            fputs(", \"group\": ", stdout);
            costdb_json_string(stdout, pts[i].group_desc);
            fputs(", \"dtype\": ", stdout);
            costdb_json_string(stdout, pts[i].dtype);
            printf(", \"bytes\": %lld, \"seconds\": ", (long long)pts[i].bytes);
            costdb_json_number(stdout, pts[i].seconds);
            fputs("}", stdout);
        }
        printf("]}\n");
    } else if (!n) {
        printf("hardware %lld (%s): no measured communication curves; sweeps use the "
               "alpha-beta model\n",
               (long long)row.id, row.id ? row.fingerprint : "not in the database");
    } else {
        printf("hardware %lld (%s)\n", (long long)row.id, row.fingerprint);
        printf("%-15s %-7s %-5s %6s %12s %12s %14s %14s\n", "COLLECTIVE", "GROUP", "DTYPE",
               "POINTS", "MIN BYTES", "MAX BYTES", "LATENCY us", "BUSBW GB/s");
        for (size_t i = 0; i < n;) {
            size_t j = i;
            int h = 1, g = 1;
            double busbw = 0;
            while (j < n && !strcmp(pts[j].collective, pts[i].collective) &&
                   !strcmp(pts[j].group_desc, pts[i].group_desc) &&
                   !strcmp(pts[j].dtype, pts[i].dtype))
                j++;
            if (sscanf(pts[i].group_desc, "%dx%d", &h, &g) != 2)
                h = g = 1;
            for (int k = 0; k < APPROF_COLL_KIND_COUNT; k++)
                if (!strcmp(pts[i].collective, approf_coll_kind_name((ApprofCollKind)k)))
                    busbw = approf_algbw(pts[j - 1].bytes, pts[j - 1].seconds) *
                            approf_busbw_factor((ApprofCollKind)k, h * g) / 1e9;
            printf("%-15s %-7s %-5s %6zu %12lld %12lld %14.3f %14.2f\n", pts[i].collective,
                   pts[i].group_desc, pts[i].dtype, j - i, (long long)pts[i].bytes,
                   (long long)pts[j - 1].bytes, pts[i].seconds * 1e6, busbw);
            i = j;
        }
    }
    free(pts);
    costdb_close(&db);
    return fflush(stdout) == 0 && !ferror(stdout) ? APPROF_EXIT_OK : cli_fail("cannot write output");
}

int approf_cmd_curves(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"hardware", required_argument, NULL, OPT_HARDWARE},
        {"hardware-id", required_argument, NULL, OPT_HARDWARE_ID},
        {"collective", required_argument, NULL, OPT_COLLECTIVE},
        {"group", required_argument, NULL, OPT_GROUP},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db_path = APPROF_DEFAULT_DB, *spec = NULL, *collective = NULL, *group = NULL;
    const char *sub;
    int64_t id = 0;
    int fmt = CLI_FORMAT_TEXT;
    int c;

    /* argv[0] is "curves" */
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: db_path = optarg; break;
        case OPT_HARDWARE: spec = optarg; break;
        case OPT_HARDWARE_ID:
            if (cli_parse_int(optarg, 1, INT64_MAX, &id) < 0)
                return cli_usage_error("hardware curves", "--hardware-id: '%s' is not a row id",
                                       optarg);
            break;
        case OPT_COLLECTIVE: collective = optarg; break;
        case OPT_GROUP: group = optarg; break;
        case 'f':
            if (cli_choice_option("hardware curves", "format", optarg, cli_text_json, &fmt))
                return APPROF_EXIT_USAGE;
            break;
        case 'h':
            usage(stdout);
            return APPROF_EXIT_OK;
        case ':':
            return cli_usage_error("hardware curves", "option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return cli_usage_error("hardware curves", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (spec && id)
        return cli_usage_error("hardware curves", "give --hardware or --hardware-id, not both");
    if (!spec)
        spec = APPROF_DEFAULT_HARDWARE;
    if (optind >= argc)
        return cli_usage_error("hardware curves", "missing subcommand (import or show)");
    sub = argv[optind++];
    if (!strcmp(sub, "import")) {
        if (optind >= argc)
            return cli_usage_error("hardware curves", "import needs at least one nccl-tests output file");
        return do_import(db_path, spec, id, collective, group, argv + optind, argc - optind);
    }
    if (!strcmp(sub, "show")) {
        if (optind < argc)
            return cli_usage_error("hardware curves", "unexpected argument '%s'", argv[optind]);
        if (collective || group)
            return cli_usage_error("hardware curves", "--collective and --group belong to import");
        return do_show(db_path, spec, id, fmt);
    }
    return cli_usage_error("hardware curves", "unknown subcommand '%s' (import or show)", sub);
}
