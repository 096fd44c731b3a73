/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database commands of approf: list (sweeps with their provenance), show
 * (a sweep's entries in Alpa's log format), export (a sweep's stage profiles
 * as CSV) and import (a CSV cost table into a new sweep). Thin front ends
 * over costdb: option parsing, messages and exit codes live here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "plural.h"
#include "text_mask.h"

enum { OPT_DB = 1000, OPT_SWEEP, OPT_FORMAT, OPT_OUTPUT, OPT_CLUSTER, OPT_MICRO, OPT_BATCH,
       OPT_NAME };

/* Reports an unknown option or a missing argument the getopt way. */
static int bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", arg);
    if (optopt)
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}

static int parse_sweep_id(const char *cmd, const char *s, int64_t *id)
{
    if (cli_parse_int(s, 1, INT64_MAX, id) < 0)
        return cli_usage_error(cmd, "--sweep needs a positive sweep id, not '%s'", s);
    return 0;
}

/* Fails the command when standard output could not be written ('approf
 * list > /dev/full'): prints the reason and returns 1, else 0. */
static int stdout_failed(void)
{
    return cli_stdout_finish(APPROF_EXIT_OK) != APPROF_EXIT_OK;
}

/* One CSV field: as it is when it holds no comma, quote, CR or LF, else in
 * double quotes with quotes doubled (RFC 4180). */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}


/* ---- list --------------------------------------------------------------- */

static void list_usage(FILE *f)
{
    fputs("Usage: approf list --db FILE [--format text|csv]\n"
          "List the sweeps of a database with their provenance: id, name, model,\n"
          "hardware (spec name or GPU model), dtype, shard (K/N of a sharded sweep),\n"
          "cluster, global batch, micro-batches, layers, backend, status, number of\n"
          "entries and start time. CSV fields holding a comma, quote or newline are\n"
          "quoted (RFC 4180).\n\n"
          "  --db FILE        the cost database (required)\n"
          "  --format FMT     text (default, a table) or csv\n"
          "  -h, --help       this text\n", f);
}

int approf_cmd_list(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *format = "text";
    CostdbSweep *sweeps = NULL;
    size_t n = 0;
    Costdb *db = NULL;
    int c, csv, ret = APPROF_EXIT_FAIL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: path = optarg; break;
        case OPT_FORMAT: format = optarg; break;
        case 'h': list_usage(stdout); return APPROF_EXIT_OK;
        default: return bad_option("list", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error("list", "unexpected argument '%s'", argv[optind]);
    if (!path)
        return cli_usage_error("list", "--db FILE is required");
    {
        static const CliChoice formats[] = {{"text", 0}, {"csv", 1}, {NULL, 0}};
        if (cli_choice_option("list", "format", format, formats, &csv))
            return APPROF_EXIT_USAGE;
    }
    if (cli_open_db(path, COSTDB_OPEN_READONLY, &db) < 0)
        return APPROF_EXIT_FAIL;
    if (costdb_sweep_list(db, &sweeps, &n) < 0) {
        cli_fail("%s", costdb_errmsg(db));
        goto cleanup;
    }
    if (csv)
        puts("id,name,model,hardware,dtype,shard,cluster,batch,micro_batches,layers,backend,"
             "status,entries,started");
    else
        printf("%-4s %-24s %-16s %-16s %-5s %-5s %-7s %7s %-16s %6s %-7s %-11s %7s %s\n", "id",
               "name", "model", "hardware", "dtype", "shard", "cluster", "batch", "micro-batches",
               "layers", "backend", "status", "entries", "started");
    for (size_t i = 0; i < n; i++) {
        const CostdbSweep *s = &sweeps[i];
        CostdbModel model;
        CostdbHardware hw;
        char cluster[32], text[6][COSTDB_TEXT_MAX];
        const char *hwname = "-";
        int64_t entries = 0;
        if (costdb_entries_count(db, s->id, &entries) < 0) {
            cli_fail("%s", costdb_errmsg(db));
            goto cleanup;
        }
        if (s->model_id <= 0 || costdb_model_get(db, s->model_id, &model) < 0)
            snprintf(model.name, sizeof model.name, "-");
        if (s->hardware_id > 0 && costdb_hardware_get(db, s->hardware_id, &hw) == 0)
            hwname = hw.spec_name[0] ? hw.spec_name : hw.gpu_model[0] ? hw.gpu_model : "-";
        snprintf(cluster, sizeof cluster, "%dx%d", s->cluster_hosts, s->cluster_gpus);
        if (csv) {
            /* every text field quoted as the CSV rules say (RFC 4180): a
             * comma, quote or newline in a name cannot shift a column */
            printf("%lld,", (long long)s->id);
            csv_field(s->name[0] ? s->name : "-");
            putchar(',');
            csv_field(model.name);
            putchar(',');
            csv_field(hwname);
            putchar(',');
            csv_field(s->dtype);
            putchar(',');
            csv_field(s->shard);
            printf(",%s,%lld,%d,%d,", cluster, (long long)s->global_batch, s->micro_batches,
                   s->num_layers);
            csv_field(s->backend);
            printf(",%s,%lld,", costdb_sweep_status_name(s->status), (long long)entries);
            csv_field(s->started_at);
            putchar('\n');
        } else {
            /* a table row: control characters in database text shown as '?' */
            costdb_text_mask(s->name[0] ? s->name : "-", text[0], sizeof text[0]);
            costdb_text_mask(model.name, text[1], sizeof text[1]);
            costdb_text_mask(hwname, text[2], sizeof text[2]);
            costdb_text_mask(s->dtype[0] ? s->dtype : "-", text[3], sizeof text[3]);
            costdb_text_mask(s->shard[0] ? s->shard : "-", text[4], sizeof text[4]);
            costdb_text_mask(s->backend, text[5], sizeof text[5]);
            char micro[48];
            /* the count and the size: "16 of 2" is 16 micro-batches of 2 samples */
            if (s->micro_batch_size > 0)
                snprintf(micro, sizeof micro, "%d of %lld", s->micro_batches,
                         (long long)s->micro_batch_size);
            else
                snprintf(micro, sizeof micro, "%d", s->micro_batches);
            printf("%-4lld %-24s %-16s %-16s %-5s %-5s %-7s %7lld %-16s %6d %-7s %-11s %7lld %s\n",
                   (long long)s->id, text[0], text[1], text[2], text[3], text[4], cluster,
                   (long long)s->global_batch, micro, s->num_layers, text[5],
                   costdb_sweep_status_name(s->status), (long long)entries, s->started_at);
        }
    }
    if (stdout_failed())
        goto cleanup;
    ret = APPROF_EXIT_OK;
cleanup:
    free(sweeps);
    costdb_close(&db);
    return ret;
}

/* ---- show --------------------------------------------------------------- */

static void show_usage(FILE *f)
{
    fputs("Usage: approf show --db FILE [--sweep ID]\n"
          "Print the entries of a sweep as Alpa logs them, grouped under\n"
          "'- Profiling for submesh K (n, m):' headers, largest submesh first; each\n"
          "line ends with '  # temp_activation_size=X GB' (the activation-sized part\n"
          "of temp_buffer_size, schema 17), '=NULL' when none or unknown.\n\n"
          "  --db FILE        the cost database (required)\n"
          "  --sweep ID       the sweep (default: the newest)\n"
          "  -h, --help       this text\n", f);
}

int approf_cmd_show(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"sweep", required_argument, NULL, OPT_SWEEP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int64_t want = 0, id = 0;
    Costdb *db = NULL;
    int c, ret = APPROF_EXIT_FAIL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: path = optarg; break;
        case OPT_SWEEP:
            if (parse_sweep_id("show", optarg, &want) != 0)
                return APPROF_EXIT_USAGE;
            break;
        case 'h': show_usage(stdout); return APPROF_EXIT_OK;
        default: return bad_option("show", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error("show", "unexpected argument '%s'", argv[optind]);
    if (!path)
        return cli_usage_error("show", "--db FILE is required");
    if (cli_open_db(path, COSTDB_OPEN_READONLY, &db) < 0)
        return APPROF_EXIT_FAIL;
    if (cli_pick_sweep(db, want, &id) < 0)
        goto cleanup;
    if (costdb_print_alpa(db, id, stdout) < 0) {
        if (!stdout_failed())
            cli_fail("%s", costdb_errmsg(db));
        goto cleanup;
    }
    if (stdout_failed())
        goto cleanup;
    ret = APPROF_EXIT_OK;
cleanup:
    costdb_close(&db);
    return ret;
}

/* ---- export ------------------------------------------------------------- */

static void export_usage(FILE *f)
{
    fputs("Usage: approf export --db FILE [--sweep ID] [--format csv] [--output FILE]\n"
          "Write the stage profiles of a sweep as CSV (schemas/csv-format.md).\n\n"
          "  --db FILE        the cost database (required)\n"
          "  --sweep ID       the sweep (default: the newest)\n"
          "  --format csv     the output format (only csv)\n"
          "  --output FILE    write to FILE instead of standard output\n"
          "  -h, --help       this text\n", f);
}

int approf_cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"sweep", required_argument, NULL, OPT_SWEEP},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *output = NULL;
    int64_t want = 0, id = 0;
    Costdb *db = NULL;
    FILE *out = NULL;
    ApsolveOutfile *of = NULL;
    char err[512];
    int c, rc, ret = APPROF_EXIT_FAIL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: path = optarg; break;
        case OPT_SWEEP:
            if (parse_sweep_id("export", optarg, &want) != 0)
                return APPROF_EXIT_USAGE;
            break;
        case OPT_FORMAT: {
            static const CliChoice formats[] = {{"csv", 0}, {NULL, 0}};
            int v;
            if (cli_choice_option("export", "format", optarg, formats, &v))
                return APPROF_EXIT_USAGE;
            break;
        }
        case 'o':
        case OPT_OUTPUT: output = optarg; break;
        case 'h': export_usage(stdout); return APPROF_EXIT_OK;
        default: return bad_option("export", c, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
    if (!path)
        return cli_usage_error("export", "--db FILE is required");
    if (cli_open_db(path, COSTDB_OPEN_READONLY, &db) < 0)
        return APPROF_EXIT_FAIL;
    if (cli_pick_sweep(db, want, &id) < 0)
        goto cleanup;
    /* --output: a temporary file renamed into place (a failure leaves no
     * truncated CSV; a symbolic link there is refused) */
    if (output && apsolve_outfile_open(output, &of, &out, err, sizeof err) < 0) {
        cli_fail("%s", err);
        goto cleanup;
    }
    if (!output)
        out = stdout;
    rc = costdb_csv_export(db, id, out);
    if (rc < 0) {
        if (output)
            apsolve_outfile_abort(&of);
        if (output || !stdout_failed())
            cli_fail("%s", rc == COSTDB_EIO && output ? "cannot write the output file"
                                                      : costdb_errmsg(db));
        goto cleanup;
    }
    if (output ? apsolve_outfile_commit(&of, err, sizeof err) < 0 : stdout_failed()) {
        if (output)
            cli_fail("%s", err);
        goto cleanup;
    }
    {
        /* the CSV holds the entries, not the sweep's batch and cluster: say
         * what brings them back, or an import plans another batch */
        CostdbSweep sw;
        if (costdb_sweep_get(db, id, &sw) == 0)
            fprintf(stderr, "approf: sweep %lld exported; 'approf import --cluster %dx%d --batch "
                    "%lld --micro-batches %d' restores its cluster and batch\n", (long long)id,
                    sw.cluster_hosts, sw.cluster_gpus, (long long)sw.global_batch,
                    sw.micro_batches);
    }
    ret = APPROF_EXIT_OK;
cleanup:
    costdb_close(&db);
    return ret;
}

/* ---- import ------------------------------------------------------------- */

static void import_usage(FILE *f)
{
    fputs("Usage: approf import --db FILE [options] FILE.csv\n"
          "Create a sweep from a CSV cost table (schemas/csv-format.md) and print its\n"
          "id. The whole file goes in one transaction: a bad line imports nothing and\n"
          "is reported as FILE:LINE:COLUMN.\n\n"
          "  --db FILE            the cost database (created if missing; required)\n"
          "  --cluster NxM        the cluster mesh (default: the largest submesh)\n"
          "  --micro-batches B    micro-batches per iteration (default 1)\n"
          "  --batch B            global batch size (default 1)\n"
          "  --name NAME          the sweep's name (default: the file's base name)\n"
          "  -q, --quiet          print only the sweep id\n"
          "  -h, --help           this text\n", f);
}

int approf_cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"micro-batches", required_argument, NULL, OPT_MICRO},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"name", required_argument, NULL, OPT_NAME},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    CostdbImportOptions opt = {0};
    const char *path = NULL;
    int64_t v = 0, id = 0, entries = 0;
    Costdb *db = NULL;
    int c, quiet = 0, ret = APPROF_EXIT_FAIL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: path = optarg; break;
        case OPT_CLUSTER:
            if (cli_parse_mesh(optarg, &opt.cluster_hosts, &opt.cluster_gpus) < 0)
                return cli_usage_error("import", "--cluster needs NxM, not '%s'", optarg);
            break;
        case OPT_MICRO:
            if (cli_parse_int(optarg, 1, 1 << 20, &v) < 0)
                return cli_usage_error("import", "--micro-batches needs a positive integer, not '%s'",
                                       optarg);
            opt.micro_batches = (int)v;
            break;
        case OPT_BATCH:
            if (cli_parse_int(optarg, 1, INT64_MAX, &v) < 0)
                return cli_usage_error("import", "--batch needs a positive integer, not '%s'", optarg);
            opt.global_batch = v;
            break;
        case OPT_NAME: opt.name = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': import_usage(stdout); return APPROF_EXIT_OK;
        default: return bad_option("import", c, argv);
        }
    }
    if (!path)
        return cli_usage_error("import", "--db FILE is required");
    if (optind >= argc)
        return cli_usage_error("import", "no CSV file given");
    if (optind + 1 < argc)
        return cli_usage_error("import", "one CSV file at a time, not '%s' too", argv[optind + 1]);
    if (cli_open_db(path, 0, &db) < 0)
        return APPROF_EXIT_FAIL;
    if (costdb_csv_import(db, argv[optind], &opt, &id) < 0) {
        cli_fail("%s", costdb_errmsg(db));
        goto cleanup;
    }
    printf("%lld\n", (long long)id);
    if (stdout_failed())
        goto cleanup;
    if (!quiet && costdb_entries_count(db, id, &entries) == 0)
        fprintf(stderr, "approf: imported %lld %s from %s into sweep %lld of %s\n",
                (long long)entries, costdb_plural(entries, "entry", "entries"), argv[optind],
                (long long)id, path);
    ret = APPROF_EXIT_OK;
cleanup:
    costdb_close(&db);
    return ret;
}
