/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf hardware list | show NAME|FILE: the built-in hardware specs as a
 * table, and every field of one spec (a built-in or a user spec file). Text
 * output of `show` is itself a valid spec file (schemas/hardware-spec.md),
 * so `approf hardware show a100-40g > mine.spec` is a starting point for a
 * custom spec; --format json gives the same fields as JSON.
 * `show --db FILE --hardware-id ID` prints a stored hardware row instead
 * (approf probe's measured one, say): its figures and how many measured
 * points it holds, GEMM shape points per dtype among them.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hardware.h"
#include "json_write.h"
#include "text_mask.h"


static void usage(FILE *f)
{
    fputs("Usage: approf hardware list [--format text|json]\n"
          "       approf hardware show NAME|FILE [--format text|json]\n"
          "       approf hardware show --db FILE --hardware-id ID [--format text|json]\n"
          "       approf hardware curves import|show ...   (measured communication curves;\n"
          "                                                 approf hardware curves --help)\n"
          "List the built-in hardware specs, or print every field of one spec (a\n"
          "built-in name or a spec file, format in schemas/hardware-spec.md).\n"
          "The text output of 'show' is a valid spec file. With --hardware-id, show\n"
          "prints a hardware row of a database instead (approf probe's measured row,\n"
          "say): its figures and its measured points, GEMM shape points per dtype.\n\n"
          "Options:\n"
          "  -f, --format FMT     text (default) or json\n"
          "      --db FILE        database of --hardware-id (default " APPROF_DEFAULT_DB ")\n"
          "      --hardware-id ID the stored hardware row to show\n"
          "  -h, --help           show this help\n", f);
}

#define GIB 1073741824.0

static void json_spec(FILE *f, const ApprofHardwareSpec *hw, int full)
{
    char fp[256];
    fputs("{\"name\": ", f);
    costdb_json_string(f, hw->name);
    fputs(", \"gpu_model\": ", f);
    costdb_json_string(f, hw->gpu_model);
    fprintf(f, ", \"memory_gib\": %.15g, \"peak_tflops_f32\": %.15g, \"peak_tflops_f16\": %.15g, "
               "\"peak_tflops_bf16\": %.15g, \"memory_bandwidth_gbs\": %.15g, "
               "\"intra_host_bandwidth_gbs\": %.15g, \"inter_host_bandwidth_gbs\": %.15g, "
               "\"gpus_per_host\": %d",
            (double)hw->device_memory / GIB, hw->peak_flops[APPROF_F32] / 1e12,
            hw->peak_flops[APPROF_F16] / 1e12, hw->peak_flops[APPROF_BF16] / 1e12,
            hw->memory_bandwidth / 1e9, hw->intra_host_bandwidth / 1e9,
            hw->inter_host_bandwidth / 1e9, hw->gpus_per_host);
    if (full) {
        approf_hardware_fingerprint(hw, fp, sizeof fp);
        fputs(", \"interconnect\": ", f);
        costdb_json_string(f, hw->interconnect);
        fprintf(f, ", \"memory_reserve_gib\": %.15g, \"available_memory_gib\": %.15g, "
                   "\"intra_host_latency_us\": %.15g, \"inter_host_latency_us\": %.15g, "
                   "\"gemm_efficiency\": %.15g, \"conv_efficiency\": %.15g, "
                   "\"memory_efficiency\": %.15g, \"kernel_launch_overhead_us\": %.15g, "
                   "\"fingerprint\": ",
                (double)hw->memory_reserve / GIB,
                (double)approf_hardware_available_memory(hw) / GIB, hw->intra_host_latency * 1e6,
                hw->inter_host_latency * 1e6, hw->gemm_efficiency, hw->conv_efficiency,
                hw->memory_efficiency, hw->kernel_launch_overhead * 1e6);
        costdb_json_string(f, fp);
        /* Blackwell's rates and the NVLink domain, when the spec has them */
        if (hw->peak_flops_fp8 > 0)
            fprintf(f, ", \"peak_tflops_fp8\": %.15g", hw->peak_flops_fp8 / 1e12);
        if (hw->peak_flops_fp4 > 0)
            fprintf(f, ", \"peak_tflops_fp4\": %.15g", hw->peak_flops_fp4 / 1e12);
        if (hw->scaleup_gpus > 0)
            fprintf(f, ", \"scaleup_domain_gpus\": %d", hw->scaleup_gpus);
        if (hw->intra_host_full_mesh)
            fprintf(f, ", \"intra_host_full_mesh\": %d", hw->intra_host_full_mesh);
        if (hw->rocm)
            fprintf(f, ", \"rocm\": %d", hw->rocm);
        fputs(", \"source\": ", f);
        costdb_json_string(f, hw->source);
    }
    fputc('}', f);
}

static int do_list(int fmt)
{
    size_t n = 0;
    const ApprofHardwareSpec *tab = approf_hardware_builtins(&n);
    if (fmt == CLI_FORMAT_JSON) {
        fputs("[", stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ",\n " : "", stdout);
            json_spec(stdout, &tab[i], 0);
        }
        fputs("]\n", stdout);
    } else {
        printf("%-11s %-28s %7s %21s %9s %10s %10s %9s\n", "NAME", "GPU", "MEM GiB",
               "TFLOP/s f32/f16/bf16", "HBM GB/s", "INTRA GB/s", "INTER GB/s", "GPUS/HOST");
        for (size_t i = 0; i < n; i++) {
            const ApprofHardwareSpec *hw = &tab[i];
            char tf[64];
            snprintf(tf, sizeof tf, "%.4g/%.4g/%.4g", hw->peak_flops[APPROF_F32] / 1e12,
                     hw->peak_flops[APPROF_F16] / 1e12, hw->peak_flops[APPROF_BF16] / 1e12);
            printf("%-11s %-28.28s %7.1f %21s %9.0f %10.6g %10.6g %9d\n", hw->name, hw->gpu_model,
                   (double)hw->device_memory / GIB, tf, hw->memory_bandwidth / 1e9,
                   hw->intra_host_bandwidth / 1e9, hw->inter_host_bandwidth / 1e9,
                   hw->gpus_per_host);
        }
    }
    return fflush(stdout) == 0 && !ferror(stdout) ? APPROF_EXIT_OK : cli_fail("cannot write output");
}

static int do_show(const char *what, int fmt)
{
    ApprofHardwareSpec hw;
    char err[1024];
    char fp[256];
    int rc = approf_hardware_resolve(what, &hw, err, sizeof err);
    if (rc < 0)
        return cli_fail("%s", err[0] ? err : "cannot resolve hardware spec");
    if (fmt == CLI_FORMAT_JSON) {
        json_spec(stdout, &hw, 1);
        fputc('\n', stdout);
    } else {
        approf_hardware_fingerprint(&hw, fp, sizeof fp);
        if (approf_hardware_write_spec(&hw, stdout) < 0)
            return cli_fail("cannot write output");
        printf("# available memory: %.3f GiB (memory_gib - memory_reserve_gib)\n"
               "# fingerprint: %s\n",
               (double)approf_hardware_available_memory(&hw) / GIB, fp);
    }
    return fflush(stdout) == 0 && !ferror(stdout) ? APPROF_EXIT_OK : cli_fail("cannot write output");
}

/* GEMM shape points of one dtype: how many, and whether they fill the grid
 * of their distinct sizes (only then does a sweep price GEMMs from them). */
typedef struct {
    char dtype[8];
    size_t n;
    int complete, sizes[3];
} GemmCount;

/* Per dtype of pts (ordered by dtype, as costdb_gemm_list returns them):
 * *out malloc'd, *n_out entries. 0 or -1. */
static int gemm_counts(const CostdbGemmPoint *pts, size_t n, GemmCount **out, size_t *n_out)
{
    ApprofGemmTable *t = NULL;
    GemmCount *c = NULL;
    size_t k = 0;
    *out = NULL;
    *n_out = 0;
    if (n == 0)
        return 0;
    if (approf_gemm_table_new(pts, n, &t) < 0 || !(c = calloc(n, sizeof *c))) {
        approf_gemm_table_free(&t);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (k && !strcmp(c[k - 1].dtype, pts[i].dtype))
            continue;
        snprintf(c[k].dtype, sizeof c[k].dtype, "%s", pts[i].dtype);
        c[k].n = approf_gemm_table_count(t, c[k].dtype, &c[k].complete, c[k].sizes);
        k++;
    }
    approf_gemm_table_free(&t);
    *out = c;
    *n_out = k;
    return 0;
}

static int show_row(const char *db_path, int64_t id, int fmt)
{
    Costdb *db = NULL;
    CostdbHardware hw;
    CostdbCommPoint *mp = NULL;
    CostdbGemmPoint *gp = NULL;
    GemmCount *gc = NULL;
    size_t n_mp = 0, n_gp = 0, n_gc = 0, n_cp = 0;
    static const char *const ops[] = {"gemm", "memcpy"};
    static const char *const dts[] = {"f32", "f16", "bf16", "f8e4m3", "u8"};
    int rc;

    if (cli_open_db(db_path, COSTDB_OPEN_READONLY, &db) < 0)
        return APPROF_EXIT_FAIL;
    rc = costdb_hardware_get(db, id, &hw);
    if (rc == COSTDB_ENOTFOUND) {
        cli_fail("%s: no hardware row %lld", db_path, (long long)id);
        costdb_close(&db);
        return APPROF_EXIT_FAIL;
    }
    if (rc == 0)
        rc = costdb_comm_list(db, id, &mp, &n_mp);
    if (rc == 0)
        rc = costdb_gemm_list(db, id, &gp, &n_gp);
    for (size_t o = 0; rc == 0 && o < 2; o++)
        for (size_t d = 0; rc == 0 && d < sizeof dts / sizeof dts[0]; d++) {
            CostdbComputePoint *cp = NULL;
            size_t n = 0;
            rc = costdb_compute_get(db, id, ops[o], dts[d], &cp, &n);
            n_cp += n;
            free(cp);
        }
    if (rc < 0) {
        cli_fail("%s", costdb_errmsg(db));
        goto out;
    }
    if (gemm_counts(gp, n_gp, &gc, &n_gc) < 0) {
        rc = cli_fail("out of memory");
        goto out;
    }
    if (fmt == CLI_FORMAT_JSON) {
        printf("{\"id\": %lld, \"fingerprint\": ", (long long)hw.id);
        costdb_json_string(stdout, hw.fingerprint);
        fputs(", \"kind\": ", stdout);
        costdb_json_string(stdout, hw.kind);
        fputs(", \"gpu_model\": ", stdout);
        costdb_json_string(stdout, hw.gpu_model);
        printf(", \"gpus_per_host\": %d, \"memory_gib\": %.15g, \"peak_tflops_f32\": %.15g,"
               " \"peak_tflops_f16\": %.15g, \"peak_tflops_bf16\": %.15g,"
               " \"memory_bandwidth_gbs\": %.15g, \"compute_points\": %zu,"
               " \"communication_points\": %zu, \"gemm_shapes\": {",
               hw.gpus_per_host, (double)hw.device_memory / GIB, hw.peak_flops_f32 / 1e12,
               hw.peak_flops_f16 / 1e12, hw.peak_flops_bf16 / 1e12, hw.memory_bandwidth / 1e9,
               n_cp, n_mp);
        for (size_t i = 0; i < n_gc; i++) {
            fputs(i ? ", " : "", stdout);
            costdb_json_string(stdout, gc[i].dtype);
            printf(": {\"points\": %zu, \"grid\": [%d, %d, %d], \"complete\": %s}", gc[i].n,
                   gc[i].sizes[0], gc[i].sizes[1], gc[i].sizes[2],
                   gc[i].complete ? "true" : "false");
        }
        fputs("}}\n", stdout);
    } else {
        char text[4][COSTDB_TEXT_MAX];
        costdb_text_mask(hw.fingerprint, text[0], sizeof text[0]);
        costdb_text_mask(hw.kind, text[1], sizeof text[1]);
        costdb_text_mask(hw.gpu_model, text[2], sizeof text[2]);
        printf("hardware %lld: %s\n", (long long)hw.id, text[0]);
        printf("  kind: %s; %s, %d per host, %.1f GiB\n", text[1], text[2], hw.gpus_per_host,
               (double)hw.device_memory / GIB);
        printf("  peak TFLOP/s: f32 %.1f, f16 %.1f, bf16 %.1f; memory bandwidth %.1f GB/s\n",
               hw.peak_flops_f32 / 1e12, hw.peak_flops_f16 / 1e12, hw.peak_flops_bf16 / 1e12,
               hw.memory_bandwidth / 1e9);
        printf("  compute points: %zu; communication points: %zu (approf hardware curves show)\n",
               n_cp, n_mp);
        if (!n_gc)
            printf("  GEMM shape points: none (sweeps price GEMMs with the spec's roofline)\n");
        for (size_t i = 0; i < n_gc; i++) {
            costdb_text_mask(gc[i].dtype, text[3], sizeof text[3]);
            printf("  GEMM shape points %s: %zu (%d x %d x %d sizes of m, n, k)%s\n", text[3],
                   gc[i].n, gc[i].sizes[0], gc[i].sizes[1], gc[i].sizes[2],
                   gc[i].complete ? "" : "; not a full grid: not used");
        }
    }
    rc = 0;
out:
    free(mp);
    free(gp);
    free(gc);
    costdb_close(&db);
    if (rc != 0)
        return APPROF_EXIT_FAIL;
    return fflush(stdout) == 0 && !ferror(stdout) ? APPROF_EXIT_OK : cli_fail("cannot write output");
}

enum { OPT_DB = 256, OPT_HARDWARE_ID };

int approf_cmd_hardware(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"db", required_argument, NULL, OPT_DB},
        {"hardware-id", required_argument, NULL, OPT_HARDWARE_ID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int fmt = CLI_FORMAT_TEXT;
    const char *sub = NULL, *db_path = NULL;
    int64_t id = 0;
    int c;

    if (argc >= 2 && !strcmp(argv[1], "curves"))
        return approf_cmd_curves(argc - 1, argv + 1);
    /* argv[0] is "hardware"; options may come before or after the
     * subcommand (getopt permutes the operands to the end). */
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (cli_choice_option("hardware", "format", optarg, cli_text_json, &fmt))
                return APPROF_EXIT_USAGE;
            break;
        case OPT_DB: db_path = optarg; break;
        case OPT_HARDWARE_ID:
            if (cli_parse_int(optarg, 1, INT64_MAX, &id) < 0)
                return cli_usage_error("hardware", "--hardware-id: '%s' is not a row id", optarg);
            break;
        case 'h':
            usage(stdout);
            return APPROF_EXIT_OK;
        case ':':
            return cli_usage_error("hardware", "option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt == 'f')
                return cli_usage_error("hardware", "option '--format' needs a value");
            return cli_usage_error("hardware", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("hardware", "missing subcommand (list or show)");
    sub = argv[optind++];
    if ((db_path || id) && strcmp(sub, "show"))
        return cli_usage_error("hardware", "--db and --hardware-id go with show");
    if (!strcmp(sub, "list")) {
        if (optind < argc)
            return cli_usage_error("hardware", "unexpected argument '%s'", argv[optind]);
        return do_list(fmt);
    }
    if (!strcmp(sub, "show")) {
        if (id) {
            if (optind < argc)
                return cli_usage_error("hardware", "give a spec NAME|FILE or --hardware-id, not"
                                       " both");
            return show_row(db_path ? db_path : APPROF_DEFAULT_DB, id, fmt);
        }
        if (db_path)
            return cli_usage_error("hardware", "--db needs --hardware-id");
        if (optind >= argc)
            return cli_usage_error("hardware", "show needs a spec name or file");
        if (optind + 1 < argc)
            return cli_usage_error("hardware", "unexpected argument '%s'", argv[optind + 1]);
        return do_show(argv[optind], fmt);
    }
    return cli_usage_error("hardware", "unknown subcommand '%s' (list or show)", sub);
}
