/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for command-line option values: the real option parsing of
 * the approf commands (sweep, list, show, export, import, model, models,
 * hardware) and of apsolve, called in-process on a small real database.
 * Input: the first byte picks the program (even: approf, odd: apsolve), the
 * rest is the argument list, one argument per line. Inputs naming a path
 * with '/' are skipped, so every file a command touches stays in the
 * scratch directory (the current directory during the run). `approf sweep`
 * gets a stray operand appended: all its options are parsed and checked,
 * then it stops with a usage error instead of sweeping. Properties: no
 * crash, and the exit status is one of the documented ones (0, 1, 2, 3).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_base.h"

/* The CLIs' main()s, renamed when compiled for this harness. */
int approf_cli_main(int argc, char **argv);
int apsolve_cli_main(int argc, char **argv);

#define MAX_ARGS 40

static uint8_t *base;
static size_t base_len;

static void free_base(void)
{
    free(base);
    base = NULL;
}

static void setup(void)
{
    FILE *f;
    if (base)
        return;
    if (chdir(fuzz_tmpdir()) != 0)
        fuzz_fail("chdir", __FILE__, __LINE__);
    base = fuzz_base_db("base.db", &base_len);
    atexit(free_base);
    /* inputs for import, model show --model-file and hardware show */
    f = fopen("t.csv", "w");
    FUZZ_CHECK(f != NULL);
    fputs("start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory,"
          "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"
          "initial_size,status\n"
          "0,0,1x1,1x1,,fwd,0.5,10,1,1,1,100,1,1,ok\n"
          "0,0,1x1,1x1,,bwd,1,10,1,1,1,100,1,1,ok\n", f);
    FUZZ_CHECK(fclose(f) == 0);
    f = fopen("t.spec", "w");
    FUZZ_CHECK(f != NULL);
    fputs("name = t\npeak_tflops_f32 = 1\npeak_tflops_f16 = 2\npeak_tflops_bf16 = 2\n"
          "memory_gib = 16\nmemory_bandwidth_gbs = 900\ngpus_per_host = 4\n"
          "intra_host_bandwidth_gbs = 100\ninter_host_bandwidth_gbs = 10\n", f);
    FUZZ_CHECK(fclose(f) == 0);
    /* stdout carries data nobody reads here */
    if (!freopen("/dev/null", "w", stdout))
        fuzz_fail("freopen", __FILE__, __LINE__);
}

static void reset_db(void)
{
    FILE *f;
    unlink("results.db-wal");
    unlink("results.db-shm");
    f = fopen("results.db", "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(base, 1, base_len, f) == base_len);
    FUZZ_CHECK(fclose(f) == 0);
}

/* glibc keeps a pointer into the previous argv between getopt calls; a
 * fresh start (optind = 0) clears it, as a new process would. */
static void reset_getopt(void)
{
    static char prog[] = "x";
    static char *argv0[] = {prog, NULL};
    optind = 0;
    opterr = 0;
    (void)getopt_long(1, argv0, "", NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, *p, *argv[MAX_ARGS + 4];
    int argc = 0, rc, is_apsolve;

    if (size < 1 || size > 4096 || memchr(data, '/', size) || memchr(data, '\0', size))
        return 0;
    setup();
    is_apsolve = data[0] & 1;
    text = fuzz_strndup(data + 1, size - 1);
    argv[argc++] = is_apsolve ? "apsolve" : "approf";
    if (is_apsolve) {
        argv[argc++] = "--db";
        argv[argc++] = "results.db";
    }
    for (p = text; *p && argc < MAX_ARGS;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        argv[argc++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    if (!is_apsolve && argc >= 2 && !strcmp(argv[1], "probe"))
        goto cleanup; /* measures the GPUs: not an option parser */
    if (!is_apsolve && argc >= 2 && !strcmp(argv[1], "sweep"))
        argv[argc++] = "stray-operand";
    argv[argc] = NULL;
    reset_db();
    reset_getopt();
    rc = is_apsolve ? apsolve_cli_main(argc, argv) : approf_cli_main(argc, argv);
    fflush(stdout);
    if (rc < 0 || rc > 3)
        fprintf(stderr, "fuzz_cli: exit status %d\n", rc);
    FUZZ_CHECK(rc >= 0 && rc <= 3);
cleanup:
    free(text);
    return 0;
}
