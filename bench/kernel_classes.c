/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel-level comparison of the measuring backend with the analytic one,
 * per operator class (docs/validation.md, "The operators' own kernels").
 *
 *   bench_kernel_classes ops MODEL PRESET LAYERS BATCH DTYPE HARDWARE [KEY=VALUE...]
 *     Every kernel of the whole model on one device (no sharding), forward
 *     and backward: identical kernels measured once and counted as often as
 *     they occur. HARDWARE is a built-in name or a spec file (a row's
 *     spec_fields applied: bench/framework_spec.py write_spec); KEY=VALUE
 *     set the sizes a sweep would (hidden, heads, seq, vocab), attention
 *     (flash | eager), unpad (1: --attention-unpad) and dropout. Prints per (operator kind, direction): kernels, measured
 *     ms, analytic ms and analytic / measured. Run it once as is and once
 *     with APPROF_CUDA_STANDIN=1 (the bandwidth kernel for every
 *     memory-bound operator) to see what the operators' kernels change.
 *     An expert GEMM of a MoE layer (ApprofKernel.experts) is a class of its
 *     own ("... expert gemm"); APPROF_CUDA_GROUPED_GEMM=0 runs it as the
 *     strided batch it was before backend ABI 11. A fused attention's
 *     GEMMs are measured together (its lead GEMM carries the time): the
 *     module runs them as cuDNN's fused flash attention in f16 and bf16,
 *     as the GEMMs with APPROF_CUDA_SDPA=0 (as before backend ABI 14).
 *   bench_kernel_classes adam DTYPE HARDWARE
 *     The optimizer step: the module's fused Adam over 1e6 .. 1e9
 *     parameters against Adam's bytes (costdb_adam_bytes) at the spec's
 *     memory rate, as approf_stage_apply_seconds prices it.
 *   bench_kernel_classes gemm DTYPE HARDWARE
 *     The per-shape GEMM table: square GEMMs 1024..4096 in steps of 128
 *     (tile and wave quantization) and the linear layers of Llama-3-8B and
 *     GPT-2 at 4096 and 8192 tokens; measured and analytic TFLOP/s.
 *
 * Each kernel is measured as COPIES (10) back-to-back copies of itself in a
 * one-phase program and divided by COPIES, so that the timing events'
 * overhead (a few microseconds) does not swamp a small kernel; its operands
 * then stay in L2 between copies when they fit (50 MB on an H100), as a
 * kernel reading its producer's output often does in a real phase. Without
 * a GPU (or the module) the measured columns say why and the analytic ones
 * are printed alone. Figures only: nothing here fails on time.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "collective.h"
#include "cuda/sdpa.h"
#include "hardware.h"
#include "model/zoo.h"

#define COPIES 10
#define MAX_CLASSES 128

typedef struct {
    char name[64];
    int phase;
    long kernels;
    double measured, analytic;   /* seconds, all kernels of the class */
    int failed;
} Class;

static ApprofBackend be;
static int have_be;
static char be_err[256];

/* Seconds one kernel takes on the device; NAN when not measured. */
/* Seconds of the n kernels k[0..n) run together (n > 1: a fused
 * attention's GEMMs, which the module runs as one cuDNN kernel). */
static double measure(const ApprofKernel *k, int n, ApprofDtype dt, const ApprofHardwareSpec *hw)
{
    ApprofKernel ks[COPIES * 8];
    ApprofStageProgram p;
    ApprofMeasurement m;
    if (!have_be || n < 1 || n > 8)
        return NAN;
    for (int i = 0; i < COPIES; i++)
        for (int j = 0; j < n; j++)
            ks[i * n + j] = k[j];
    memset(&p, 0, sizeof p);
    p.dtype = dt;
    p.kernels[0] = ks;
    p.n_kernels[0] = (size_t)(COPIES * n);
    if (be.measure(be.ctx, &p, 0, hw, &m) < 0 || m.status != 0) {
        fprintf(stderr, "  measure failed: %s\n", m.error);
        return NAN;
    }
    return m.compute_cost / COPIES;
}

/* A count argument in [0, max] (0: the model's default); -1 otherwise. */
static int count_arg(const char *s, long max, int *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

/* One KEY=VALUE of the ops mode into the zoo's options; -1 when bad. */
static int zoo_arg(const char *a, ApprofZooOptions *o)
{
    static const struct {
        const char *key;
        size_t off;
    } ints[] = {{"hidden", offsetof(ApprofZooOptions, hidden)},
                {"heads", offsetof(ApprofZooOptions, heads)},
                {"seq", offsetof(ApprofZooOptions, seq_len)},
                {"vocab", offsetof(ApprofZooOptions, vocab)}};
    const char *eq = strchr(a, '=');
    size_t kl = eq ? (size_t)(eq - a) : 0;
    if (!eq)
        return -1;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strlen(ints[i].key) == kl && !strncmp(a, ints[i].key, kl))
            return count_arg(eq + 1, 1 << 24, (int *)((char *)o + ints[i].off));
    if (kl == 5 && !strncmp(a, "unpad", 5))
        return count_arg(eq + 1, 1, &o->attention_unpad);
    if (kl == 9 && !strncmp(a, "attention", 9)) {
        if (strcmp(eq + 1, "flash") && strcmp(eq + 1, "eager"))
            return -1;
        o->attention = eq + 1;
        return 0;
    }
    if (kl == 7 && !strncmp(a, "dropout", 7)) {
        char *end;
        errno = 0;
        o->dropout = strtod(eq + 1, &end);
        return errno || end == eq + 1 || *end || !(o->dropout >= 0 && o->dropout < 1) ? -1 : 0;
    }
    return -1;
}

static Class *class_of(Class *cl, int *n, const char *name, int phase)
{
    for (int i = 0; i < *n; i++)
        if (cl[i].phase == phase && !strcmp(cl[i].name, name))
            return &cl[i];
    if (*n == MAX_CLASSES)
        return NULL;
    memset(&cl[*n], 0, sizeof cl[*n]);
    snprintf(cl[*n].name, sizeof cl[*n].name, "%s", name);
    cl[*n].phase = phase;
    return &cl[(*n)++];
}

/* Kernels that differ only in their source operator measure the same. */
static int same(const ApprofKernel *a, const ApprofKernel *b)
{
    ApprofKernel x = *a, y = *b;
    x.op = y.op = 0;
    x.async_group = y.async_group = 0;
    x.async_wgrad = y.async_wgrad = 0;
    return !memcmp(&x, &y, sizeof x);
}

static int run_ops(int argc, char **argv)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec hw;
    ApprofDtype dt;
    char err[256];
    static Class cl[MAX_CLASSES];
    int ncl = 0;
    ApprofKernel *seen = NULL;
    double *seen_t = NULL;
    size_t nseen = 0, capseen = 0;
    int batch = 0;

    if (argc < 8) {
        fprintf(stderr, "usage: bench_kernel_classes ops MODEL PRESET LAYERS BATCH DTYPE HARDWARE "
                "[hidden=|heads=|seq=|vocab=|attention=|unpad=|dropout=...]\n");
        return 2;
    }
    memset(&o, 0, sizeof o);
    o.preset = strcmp(argv[3], "-") ? argv[3] : NULL;
    o.dtype = argv[6];
    if (count_arg(argv[4], 4096, &o.num_layers) < 0 || count_arg(argv[5], 1 << 24, &batch) < 0) {
        fprintf(stderr, "bench_kernel_classes: LAYERS and BATCH are integers >= 0 (got '%s', "
                "'%s')\n", argv[4], argv[5]);
        return 2;
    }
    o.batch = batch;
    for (int i = 8; i < argc; i++)
        if (zoo_arg(argv[i], &o) < 0) {
            fprintf(stderr, "bench_kernel_classes: bad option '%s' (hidden=, heads=, seq=, vocab= "
                    "take a whole number; attention=flash|eager; unpad=0|1; dropout=RATE)\n",
                    argv[i]);
            return 2;
        }
    err[0] = '\0';
    if (approf_dtype_parse(argv[6], &dt) < 0 ||
        approf_hardware_resolve(argv[7], &hw, err, sizeof err) < 0 ||
        approf_zoo_build(argv[2], &o, &g, err, sizeof err) < 0) {
        fprintf(stderr, "bench_kernel_classes: bad model, dtype or hardware (%s)\n", err);
        return 2;
    }
    for (size_t op = 0; op < g->n_ops; op++) {
        for (int ph = 0; ph < 2; ph++) {
            ApprofKernel ks[APPROF_MAX_KERNELS];
            int nk = approf_op_kernels(g, (int)op, NULL, ph, ks, APPROF_MAX_KERNELS);
            for (int i = 0; i < nk; i++) {
                char name[64];
                double t = NAN;
                size_t j;
                /* a fused attention's GEMMs are measured together on its
                 * lead (cuDNN's fused kernel stands for all of them), the
                 * others then count 0 */
                int group = (int)approf_sdpa_group(ks, (size_t)nk, (size_t)i);
                if (group == 0 && ks[i].attention) {
                    Class *c = class_of(cl, &ncl, "attention gemm", ph);
                    if (c) {
                        c->kernels++;
                        c->analytic += approf_kernel_seconds(&hw, &ks[i]);
                    }
                    continue;
                }
                snprintf(name, sizeof name, "%s%s", approf_op_kind_name(g->ops[op].kind),
                         ks[i].experts > 0 ? " expert gemm"
                         : ks[i].kind == APPROF_K_GEMM ? " gemm"
                         : ks[i].kop == APPROF_CUDA_OP_BIAS ? " bias" : "");
                for (j = 0; j < nseen; j++)
                    if (same(&seen[j], &ks[i]))
                        break;
                if (j < nseen) {
                    t = seen_t[j];
                } else {
                    t = measure(&ks[i], group ? group : 1, dt, &hw);
                    if (nseen == capseen) {
                        capseen = capseen ? 2 * capseen : 64;
                        seen = realloc(seen, capseen * sizeof *seen);
                        seen_t = realloc(seen_t, capseen * sizeof *seen_t);
                        if (!seen || !seen_t)
                            return 1;
                    }
                    seen[nseen] = ks[i];
                    seen_t[nseen++] = t;
                }
                Class *c = class_of(cl, &ncl, name, ph);
                if (!c)
                    continue;
                c->kernels++;
                c->analytic += approf_kernel_seconds(&hw, &ks[i]);
                if (isnan(t))
                    c->failed = 1;
                else
                    c->measured += t;
            }
        }
    }
    printf("# %s %s, %s layers, batch %s, %s, analytic %s; measured: %s%s\n", argv[2], argv[3],
           argv[4], argv[5], argv[6], argv[7],
           have_be ? "this GPU" : be_err,
           have_be && getenv("APPROF_CUDA_STANDIN") && !strcmp(getenv("APPROF_CUDA_STANDIN"), "1")
               ? " (APPROF_CUDA_STANDIN=1: bandwidth kernel for the memory-bound operators)" : "");
    printf("%-22s %-4s %8s %12s %12s %9s\n", "class", "dir", "kernels", "measured ms",
           "analytic ms", "an/meas");
    double tm = 0, ta = 0;
    for (int i = 0; i < ncl; i++) {
        Class *c = &cl[i];
        ta += c->analytic;
        if (!c->failed)
            tm += c->measured;
        if (c->failed || !have_be)
            printf("%-22s %-4s %8ld %12s %12.4f %9s\n", c->name, c->phase ? "bwd" : "fwd",
                   c->kernels, "n/a", c->analytic * 1e3, "n/a");
        else
            printf("%-22s %-4s %8ld %12.4f %12.4f %9.3f\n", c->name, c->phase ? "bwd" : "fwd",
                   c->kernels, c->measured * 1e3, c->analytic * 1e3,
                   c->measured > 0 ? c->analytic / c->measured : NAN);
    }
    printf("%-22s %-4s %8s %12.4f %12.4f %9.3f\n", "total", "", "", tm * 1e3, ta * 1e3,
           have_be && tm > 0 ? ta / tm : NAN);
    free(seen);
    free(seen_t);
    approf_graph_free(&g);
    return 0;
}

static void gemm_row(int64_t m, int64_t n, int64_t k, ApprofDtype dt, const ApprofHardwareSpec *hw)
{
    ApprofKernel g;
    double es = (double)approf_dtype_size(dt);
    memset(&g, 0, sizeof g);
    g.kind = APPROF_K_GEMM;
    g.dtype = dt;
    g.batch = 1;
    g.m = m;
    g.n = n;
    g.k = k;
    g.flops = 2.0 * (double)m * (double)n * (double)k;
    g.bytes = es * ((double)m * k + (double)k * n + (double)m * n);
    g.store_bytes = es * (double)m * n;
    double t = measure(&g, 1, dt, hw), a = approf_kernel_seconds(hw, &g);
    printf("%6lld %6lld %6lld %12.1f %12.1f %9.3f\n", (long long)m, (long long)n, (long long)k,
           isnan(t) ? NAN : g.flops / t * 1e-12, g.flops / a * 1e-12, isnan(t) ? NAN : a / t);
}

static int run_gemm(int argc, char **argv)
{
    ApprofHardwareSpec hw;
    ApprofDtype dt;
    static const int64_t lin[][2] = {{4096, 4096}, {4096, 1024}, {4096, 14336}, {14336, 4096},
                                     {768, 2304}, {768, 3072}, {3072, 768}, {4096, 128256}};
    if (argc < 4 || approf_dtype_parse(argv[2], &dt) < 0 ||
        approf_hardware_builtin(argv[3], &hw) < 0) {
        fprintf(stderr, "usage: bench_kernel_classes gemm DTYPE HARDWARE\n");
        return 2;
    }
    printf("# GEMM %s, analytic %s; measured: %s\n", argv[2], argv[3], have_be ? "this GPU" : be_err);
    printf("%6s %6s %6s %12s %12s %9s\n", "m", "n", "k", "meas TF/s", "anal TF/s", "an/meas");
    for (int64_t s = 1024; s <= 4096; s += 128)
        gemm_row(s, s, s, dt, &hw);
    for (int t = 4096; t <= 8192; t *= 2)
        for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++)
            gemm_row(t, lin[i][1], lin[i][0], dt, &hw);
    return 0;
}

/* The optimizer step: the module's fused Adam (ApprofMeasurement.apply_seconds
 * of a backward phase) against Adam's bytes at the spec's memory rate. */
static int run_adam(int argc, char **argv)
{
    ApprofHardwareSpec hw;
    ApprofDtype dt;
    if (argc < 4 || approf_dtype_parse(argv[2], &dt) < 0 ||
        approf_hardware_builtin(argv[3], &hw) < 0) {
        fprintf(stderr, "usage: bench_kernel_classes adam DTYPE HARDWARE\n");
        return 2;
    }
    printf("# Adam step %s, analytic %s; measured: %s\n", argv[2], argv[3],
           have_be ? "this GPU" : be_err);
    printf("%12s %12s %12s %9s %12s\n", "parameters", "meas ms", "anal ms", "an/meas",
           "meas GB/s");
    for (double n = 1e6; n <= 1e9; n *= 10) {
        ApprofKernel k;
        ApprofStageProgram p;
        ApprofMeasurement m;
        double t = NAN, a, bytes = costdb_adam_bytes(NULL, n, (double)approf_dtype_size(dt), (double)approf_dtype_size(dt));
        memset(&k, 0, sizeof k);
        k.kind = APPROF_K_COPY;
        k.dtype = dt;
        k.elements = 1024;
        memset(&p, 0, sizeof p);
        p.dtype = dt;
        p.kernels[1] = &k;
        p.n_kernels[1] = 1;
        p.optimizer_elements = n;
        p.optimizer_bytes = bytes;
        a = approf_stage_apply_seconds(&hw, &p);
        if (have_be && be.measure(be.ctx, &p, 1, &hw, &m) == 0 && m.status == 0 &&
            m.apply_seconds > 0)
            t = m.apply_seconds;
        printf("%12.0f %12.4f %12.4f %9.3f %12.1f\n", n, t * 1e3, a * 1e3, a / t, bytes / t * 1e-9);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc < 2 || (strcmp(argv[1], "ops") && strcmp(argv[1], "gemm") &&
                     strcmp(argv[1], "adam"))) {
        fprintf(stderr, "usage: bench_kernel_classes ops|gemm|adam ...\n");
        return 2;
    }
    have_be = approf_backend_cuda(&be, be_err, sizeof be_err) == 0;
    rc = !strcmp(argv[1], "ops")    ? run_ops(argc, argv)
         : !strcmp(argv[1], "gemm") ? run_gemm(argc, argv)
                                    : run_adam(argc, argv);
    if (have_be)
        approf_backend_destroy(&be);
    return rc;
}
