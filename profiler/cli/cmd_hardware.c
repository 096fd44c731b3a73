/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf hardware list | show NAME|FILE: the built-in hardware specs as a
 * table, and every field of one spec (a built-in or a user spec file). Text
 * output of `show` is itself a valid spec file (schemas/hardware-spec.md),
 * so `approf hardware show a100-40g > mine.spec` is a starting point for a
 * custom spec; --format json gives the same fields as JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hardware.h"


static void usage(FILE *f)
{
    fputs("Usage: approf hardware list [--format text|json]\n"
          "       approf hardware show NAME|FILE [--format text|json]\n"
          "       approf hardware curves import|show ...   (measured communication curves;\n"
          "                                                 approf hardware curves --help)\n"
          "List the built-in hardware specs, or print every field of one spec (a\n"
          "built-in name or a spec file, format in schemas/hardware-spec.md).\n"
          "The text output of 'show' is a valid spec file.\n\n"
          "Options:\n"
          "  -f, --format FMT  text (default) or json\n"
          "  -h, --help        show this help\n", f);
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

int approf_cmd_hardware(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int fmt = CLI_FORMAT_TEXT;
    const char *sub = NULL;
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
                return CLI_EXIT_USAGE;
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
    if (!strcmp(sub, "list")) {
        if (optind < argc)
            return cli_usage_error("hardware", "unexpected argument '%s'", argv[optind]);
        return do_list(fmt);
    }
    if (!strcmp(sub, "show")) {
        if (optind >= argc)
            return cli_usage_error("hardware", "show needs a spec name or file");
        if (optind + 1 < argc)
            return cli_usage_error("hardware", "unexpected argument '%s'", argv[optind + 1]);
        return do_show(argv[optind], fmt);
    }
    return cli_usage_error("hardware", "unknown subcommand '%s' (list or show)", sub);
}
