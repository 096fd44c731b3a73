/* SPDX-License-Identifier: Apache-2.0 */
/*
 * User hardware spec files (schemas/hardware-spec.md): `key = value` lines,
 * '#' comments, one field table giving each key's unit, range and default.
 * The same table writes a spec back out (approf hardware show), so what the
 * loader accepts and what the writer prints cannot drift apart. Also
 * resolves a --hardware argument: a built-in name, else a spec file.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"

#define GIB 1073741824.0

typedef enum { F_TEXT, F_NUM, F_INT, F_BYTES } FieldType;

typedef struct Field {
    const char *key;
    FieldType type;
    size_t offset;      /* into ApprofHardwareSpec */
    size_t size;        /* text buffer size */
    int required;
    double scale;       /* file unit -> stored unit */
    double lo, hi;      /* allowed range in file units */
    int lo_open;        /* 1: value must be > lo, 0: >= lo */
    double def;         /* default for optional numeric fields */
    const char *unit;   /* for messages and the writer */
} Field;

#define OFF(f) offsetof(ApprofHardwareSpec, f)
#define TXT(f) OFF(f), sizeof(((ApprofHardwareSpec *)0)->f)

/* Order = the order the writer prints. Ranges reject zero, negative and
 * absurd values (far beyond any GPU built or announced). */
static const Field fields[] = {
    {"name", F_TEXT, TXT(name), 1, 0, 0, 0, 0, 0, ""},
    {"gpu_model", F_TEXT, TXT(gpu_model), 0, 0, 0, 0, 0, 0, ""},
    {"interconnect", F_TEXT, TXT(interconnect), 0, 0, 0, 0, 0, 0, ""},
    {"peak_tflops_f32", F_NUM, OFF(peak_flops[APPROF_F32]), 0, 1, 1e12, 0, 1e5, 1, 0, "TFLOP/s"},
    {"peak_tflops_f16", F_NUM, OFF(peak_flops[APPROF_F16]), 0, 1, 1e12, 0, 1e5, 1, 0, "TFLOP/s"},
    {"peak_tflops_bf16", F_NUM, OFF(peak_flops[APPROF_BF16]), 0, 1, 1e12, 0, 1e5, 1, 0, "TFLOP/s"},
    {"memory_gib", F_BYTES, OFF(device_memory), 0, 1, GIB, 0, 65536, 1, 0, "GiB"},
    {"memory_reserve_gib", F_BYTES, OFF(memory_reserve), 0, 0, GIB, 0, 65536, 0, 1, "GiB"},
    {"memory_bandwidth_gbs", F_NUM, OFF(memory_bandwidth), 0, 1, 1e9, 0, 1e6, 1, 0, "GB/s"},
    {"gpus_per_host", F_INT, OFF(gpus_per_host), 0, 1, 1, 1, 1024, 0, 0, ""},
    {"intra_host_bandwidth_gbs", F_NUM, OFF(intra_host_bandwidth), 0, 1, 1e9, 0, 1e5, 1, 0, "GB/s"},
    {"intra_host_latency_us", F_NUM, OFF(intra_host_latency), 0, 0, 1e-6, 0, 1e6, 0, 5, "us"},
    {"inter_host_bandwidth_gbs", F_NUM, OFF(inter_host_bandwidth), 0, 1, 1e9, 0, 1e5, 1, 0, "GB/s"},
    {"inter_host_latency_us", F_NUM, OFF(inter_host_latency), 0, 0, 1e-6, 0, 1e6, 0, 10, "us"},
    {"gemm_efficiency", F_NUM, OFF(gemm_efficiency), 0, 0, 1, 0, 1, 1, 0.7, ""},
    {"conv_efficiency", F_NUM, OFF(conv_efficiency), 0, 0, 1, 0, 1, 1, 0.6, ""},
    {"memory_efficiency", F_NUM, OFF(memory_efficiency), 0, 0, 1, 0, 1, 1, 0.8, ""},
    {"kernel_launch_overhead_us", F_NUM, OFF(kernel_launch_overhead), 0, 0, 1e-6, 0, 1e4, 0, 4,
     "us"},
    /* Optional refinements (schemas/hardware-spec.md); 0 = not given. */
    {"peak_tflops_tf32", F_NUM, OFF(peak_flops_tf32), 0, 0, 1e12, 0, 1e5, 0, 0, "TFLOP/s"},
    {"peak_tflops_fp8", F_NUM, OFF(peak_flops_fp8), 0, 0, 1e12, 0, 1e5, 0, 0, "TFLOP/s"},
    {"allow_tf32", F_INT, OFF(allow_tf32), 0, 0, 1, 0, 1, 0, 1, ""},
    {"gemm_efficiency_fp32", F_NUM, OFF(gemm_eff[APPROF_MATH_FP32]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"gemm_efficiency_tf32", F_NUM, OFF(gemm_eff[APPROF_MATH_TF32]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"gemm_efficiency_f16", F_NUM, OFF(gemm_eff[APPROF_MATH_F16]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"gemm_efficiency_fp8", F_NUM, OFF(gemm_eff[APPROF_MATH_FP8]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"conv_efficiency_fp32", F_NUM, OFF(conv_eff[APPROF_MATH_FP32]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"conv_efficiency_tf32", F_NUM, OFF(conv_eff[APPROF_MATH_TF32]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"conv_efficiency_f16", F_NUM, OFF(conv_eff[APPROF_MATH_F16]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"conv_bwd_data_factor", F_NUM, OFF(conv_bwd_data_factor), 0, 0, 1, 0, 4, 0, 0, ""},
    {"conv_bwd_filter_factor", F_NUM, OFF(conv_bwd_filter_factor), 0, 0, 1, 0, 4, 0, 0, ""},
    {"host_overhead_us", F_NUM, OFF(host_overhead), 0, 0, 1e-6, 0, 1e4, 0, 0, "us"},
    {"nics_per_host", F_INT, OFF(nics_per_host), 0, 0, 1, 0, 1024, 0, 0, ""},
    {"nic_bandwidth_gbs", F_NUM, OFF(nic_bandwidth), 0, 0, 1e9, 0, 1e5, 0, 0, "GB/s"},
    {"bus_efficiency", F_NUM, OFF(bus_efficiency), 0, 0, 1, 0, 1, 0, 0, ""},
    {"grad_overlap", F_NUM, OFF(grad_overlap), 0, 0, 1, 0, 1, 0, 0, ""},
    {"grad_bucket_mib", F_NUM, OFF(grad_bucket_bytes), 0, 0, 1048576.0, 0, 1e6, 0, 0, "MiB"},
    {"gemm_store_overlap", F_NUM, OFF(gemm_store_overlap), 0, 0, 1, 0, 1, 0, 0, ""},
    {"tp_comm_overlap", F_NUM, OFF(tp_comm_overlap), 0, 0, 1, 0, 1, 0, 0, ""},
    {"tp_async_grad", F_NUM, OFF(tp_async_grad), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency", F_NUM, OFF(attention_efficiency), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency_2k", F_NUM, OFF(attention_eff_seq[0]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency_4k", F_NUM, OFF(attention_eff_seq[1]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency_8k", F_NUM, OFF(attention_eff_seq[2]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency_16k", F_NUM, OFF(attention_eff_seq[3]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"attention_efficiency_32k", F_NUM, OFF(attention_eff_seq[4]), 0, 0, 1, 0, 1, 0, 0, ""},
    {"reduction_efficiency", F_NUM, OFF(reduction_efficiency), 0, 0, 1, 0, 1, 0, 0, ""},
    {"gemm_unaligned_factor", F_NUM, OFF(gemm_unaligned_factor), 0, 0, 1, 0, 1, 0, 0, ""},
    {"grad_reduce_bytes", F_NUM, OFF(grad_reduce_bytes), 0, 0, 1, 0, 8, 0, 0, ""},
    {"optimizer_main_param_bytes", F_NUM, OFF(optimizer_main_param_bytes), 0, 0, 1, 0, 8, 0, 0,
     ""},
    {"optimizer_exp_avg_bytes", F_NUM, OFF(optimizer_exp_avg_bytes), 0, 0, 1, 0, 8, 0, 0, ""},
    {"optimizer_exp_avg_sq_bytes", F_NUM, OFF(optimizer_exp_avg_sq_bytes), 0, 0, 1, 0, 8, 0, 0,
     ""},
    {"optimizer_step_bytes", F_NUM, OFF(optimizer_step_bytes), 0, 0, 1, 0, 1024, 0, 0, ""},
    {"fp8_param_gather", F_INT, OFF(fp8_param_gather), 0, 0, 1, 0, 1, 0, 0, ""},
    {"loss_f32", F_INT, OFF(loss_f32), 0, 0, 1, 0, 1, 0, 0, ""},
    {"loss_metric_passes", F_INT, OFF(loss_metric_passes), 0, 0, 1, 0, 8, 0, 0, ""},
    {"metric_sync_states", F_INT, OFF(metric_sync_states), 0, 0, 1, 0, 64, 0, 0, ""},
    {"grad_presync_passes", F_INT, OFF(grad_presync_passes), 0, 0, 1, 0, 8, 0, 0, ""},
    {"param_step_kernels", F_NUM, OFF(param_step_kernels), 0, 0, 1, 0, 64, 0, 0, ""},
    {"ddp_grad_copies", F_INT, OFF(ddp_grad_copies), 0, 0, 1, 0, 2, 0, 0, ""},
    {"grad_accum_fusion", F_INT, OFF(grad_accum_fusion), 0, 0, 1, 0, 1, 0, 0, ""},
    {"zero3_rank_copies", F_INT, OFF(zero3_rank_copies), 0, 0, 1, 0, 1, 0, 0, ""},
    {"zero3_fetch_sync", F_INT, OFF(zero3_fetch_sync), 0, 0, 1, 0, 1, 0, 0, ""},
    {"moe_drop_pad", F_INT, OFF(moe_drop_pad), 0, 0, 1, 0, 1, 0, 0, ""},
    {"zero3_grad_all_reduce", F_INT, OFF(zero3_grad_all_reduce), 0, 0, 1, 0, 1, 0, 0, ""},
    /* FSDP's copies beside ZeRO-3's collectives (hw/zero3_overlap.c) */
    {"zero3_gather_copy", F_INT, OFF(zero3_gather_copy), 0, 0, 1, 0, 1, 0, 0, ""},
    {"zero3_grad_copy", F_INT, OFF(zero3_grad_copy), 0, 0, 1, 0, 2, 0, 0, ""},
    /* PyTorch's cp ring (solver/cp_torch_ring.c) */
    {"cp_ring_torch", F_INT, OFF(cp_ring_torch), 0, 0, 1, 0, 1, 0, 0, ""},
    {"peak_tflops_fp4", F_NUM, OFF(peak_flops_fp4), 0, 0, 1e12, 0, 1e5, 0, 0, "TFLOP/s"},
    /* COSTDB_MAX_DEVICES (1 << 20) bounds a cluster; a domain is no larger */
    {"scaleup_domain_gpus", F_INT, OFF(scaleup_gpus), 0, 0, 1, 0, 1048576, 0, 0, ""},
    /* measured by approf probe on >= 2 GPUs; 0: no slowdown */
    {"overlap_gemm_slowdown", F_NUM, OFF(overlap_gemm_slowdown), 0, 0, 1, 0, 1, 0, 0, ""},
    /* a switchless full mesh inside the host (AMD MI300X); 0: a switch */
    {"intra_host_full_mesh", F_INT, OFF(intra_host_full_mesh), 0, 0, 1, 0, 1, 0, 0, ""},
    /* Transformer Engine's userbuffers overlap (hw/cost.c ub_account); the
     * SMs fewer than sm_count (checked below) */
    {"sm_count", F_INT, OFF(sm_count), 0, 0, 1, 0, 100000, 0, 0, ""},
    {"tp_comm_overlap_sms", F_INT, OFF(tp_comm_overlap_sms), 0, 0, 1, 0, 100000, 0, 0, ""},
    {"tp_comm_overlap_splits", F_INT, OFF(tp_comm_overlap_splits), 0, 0, 1, 0, 1024, 0, 0, ""},
    /* NCCL's CTAs per collective (hw/cost.c approf_overlap_slowdown); fewer
     * than sm_count (checked below) */
    {"nccl_channels", F_INT, OFF(nccl_channels), 0, 0, 1, 0, 100000, 0, 0, ""},
    /* the GPU's link to host memory, one direction (docs/hardware.md) */
    {"host_link_bandwidth_gbs", F_NUM, OFF(host_link_bandwidth), 0, 0, 1e9, 0, 1e5, 0, 0, "GB/s"},
    /* AMD's ROCm stack: which FP8 recipes Transformer Engine runs (hw/fp8_card.c) */
    {"rocm", F_INT, OFF(rocm), 0, 0, 1, 0, 1, 0, 0, ""},
    {"source", F_TEXT, TXT(source), 0, 0, 0, 0, 0, 0, ""},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static size_t field_index(const char *key)
{
    size_t i;
    for (i = 0; i < N_FIELDS; i++)
        if (!strcmp(fields[i].key, key))
            break;
    return i;
}

/* A share of the device's SMs a spec field gives (tp_comm_overlap_sms,
 * nccl_channels): 1, with the message naming the file, line and field, when
 * it is not fewer than sm_count; 0 when it is, or is not given. */
static int sm_share_invalid(const char *path, const int *seen, const char *key, int value,
                            const char *unit, int sm_count, char *err, size_t errlen)
{
    if (value <= 0 || value < sm_count)
        return 0;
    if (err)
        snprintf(err, errlen, "%s:%d: field '%s': %d %s must be fewer than the device's "
                 "sm_count (%d%s)", path, seen[field_index(key)], key, value, unit, sm_count,
                 sm_count > 0 ? "" : ": not given");
    return 1;
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = '\0';
    return s;
}

/* Cuts an inline comment: a '#' at the start or after whitespace, outside
 * double quotes (so "https://x#y" or "GPU #2" in quotes survive). */
static void cut_comment(char *s)
{
    int quoted = 0;
    for (char *p = s; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == '#' && !quoted && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
    }
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

/* Parses and stores one value; on error writes "what is wrong" to why. */

/* The smallest non-zero value of a rate, a memory size or an efficiency:
 * a millionth of its largest (1e-300 TFLOP/s passed "> 0" and then failed
 * every entry); 0 for the other fields. */
static double tiny(const Field *f)
{
    if (f->type == F_NUM || f->type == F_BYTES)
        if (f->lo_open || !strcmp(f->unit, "TFLOP/s") || !strcmp(f->unit, "GB/s") ||
            strstr(f->key, "efficiency"))
            return f->hi * 1e-6;
    return 0;
}
static int set_field(const Field *f, char *val, ApprofHardwareSpec *hw, char *why, size_t wlen)
{
    char *base = (char *)hw + f->offset;
    char *end = NULL;
    double v;
    size_t n = strlen(val);

    if (n == 0) {
        snprintf(why, wlen, "empty value");
        return -1;
    }
    if (f->type == F_TEXT) {
        if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
            val[n - 1] = '\0';
            val++;
            n -= 2;
        }
        if (n >= f->size) {
            snprintf(why, wlen, "longer than %zu characters", f->size - 1);
            return -1;
        }
        if (!strcmp(f->key, "name") && !valid_name(val)) {
            snprintf(why, wlen, "'%s' is not a valid name (letters, digits, '-', '_', '.')", val);
            return -1;
        }
        memcpy(base, val, n + 1);
        return 0;
    }
    errno = 0;
    v = strtod(val, &end);
    if (end == val || *end != '\0') {
        snprintf(why, wlen, "'%.64s' is not a number%s%s", val, f->unit[0] ? " of " : "", f->unit);
        return -1;
    }
    if (errno == ERANGE || !isfinite(v)) {
        snprintf(why, wlen, "'%.64s' is not a finite number", val);
        return -1;
    }
    if (f->lo_open ? !(v > f->lo) : !(v >= f->lo)) {
        snprintf(why, wlen, "must be %s %g (got %g)", f->lo_open ? ">" : ">=", f->lo, v);
        return -1;
    }
    if (v > f->hi) {
        snprintf(why, wlen, "%g is absurd (at most %g%s%s)", v, f->hi, f->unit[0] ? " " : "",
                 f->unit);
        return -1;
    }
    if (v != 0 && v < tiny(f)) {
        snprintf(why, wlen, "%g is absurd (at least %g%s%s)", v, tiny(f), f->unit[0] ? " " : "",
                 f->unit);
        return -1;
    }
    switch (f->type) {
    case F_INT:
        if (v != floor(v)) {
            snprintf(why, wlen, "'%s' is not a whole number", val);
            return -1;
        }
        *(int *)(void *)base = (int)v;
        break;
    case F_BYTES:
        *(int64_t *)(void *)base = (int64_t)llround(v * f->scale);
        break;
    default:
        *(double *)(void *)base = v * f->scale;
        break;
    }
    return 0;
}

static void set_default(const Field *f, ApprofHardwareSpec *hw)
{
    char *base = (char *)hw + f->offset;
    switch (f->type) {
    case F_NUM:
        *(double *)(void *)base = f->def * f->scale;
        break;
    case F_BYTES:
        *(int64_t *)(void *)base = (int64_t)llround(f->def * f->scale);
        break;
    case F_INT:
        *(int *)(void *)base = (int)f->def;
        break;
    default:
        break;
    }
}

int approf_hardware_load(const char *path, ApprofHardwareSpec *out, char *err, size_t errlen)
{
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int seen[N_FIELDS] = {0}; /* line number where each field was set */
    int lineno = 0, rc = APPROF_OK;
    ApprofHardwareSpec hw;
    char why[256];

    if (err && errlen)
        err[0] = '\0';
    if (!path || !out)
        return APPROF_EINVAL;
    memset(&hw, 0, sizeof hw);
    f = fopen(path, "r");
    if (!f) {
        if (err)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return APPROF_EIO;
    }
    while ((got = getline(&line, &cap, f)) >= 0) {
        char *s, *eq, *key, *val;
        size_t i;
        lineno++;
        if (memchr(line, '\0', (size_t)got)) {
            if (err)
                snprintf(err, errlen, "%s:%d: binary data (NUL byte) in a spec file", path, lineno);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        eq = strchr(s, '=');
        if (!eq) {
            if (err)
                snprintf(err, errlen, "%s:%d: expected 'key = value', got '%.64s'", path, lineno, s);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        *eq = '\0';
        key = trim(s);
        val = eq + 1;
        cut_comment(val);
        val = trim(val);
        i = field_index(key);
        if (i == N_FIELDS) {
            if (err)
                snprintf(err, errlen, "%s:%d: field '%.64s': unknown field (see schemas/hardware-spec.md)",
                         path, lineno, key);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        if (seen[i]) {
            if (err)
                snprintf(err, errlen, "%s:%d: field '%s': given twice (first on line %d)", path,
                         lineno, key, seen[i]);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        if (set_field(&fields[i], val, &hw, why, sizeof why) < 0) {
            if (err)
                snprintf(err, errlen, "%s:%d: field '%s': %s", path, lineno, key, why);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        seen[i] = lineno;
    }
    if (ferror(f)) {
        if (err)
            snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = APPROF_EIO;
        goto cleanup;
    }
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (seen[i])
            continue;
        if (fields[i].required) {
            if (err)
                snprintf(err, errlen, "%s:%d: field '%s': missing (required)", path,
                         lineno > 0 ? lineno : 1, fields[i].key);
            rc = APPROF_EPARSE;
            goto cleanup;
        }
        set_default(&fields[i], &hw);
    }
    if (!seen[field_index("gpu_model")])
        snprintf(hw.gpu_model, sizeof hw.gpu_model, "%s", hw.name);
    if (hw.source[0] == '\0')
        snprintf(hw.source, sizeof hw.source, "user spec file %s", path);
    if (hw.memory_reserve >= hw.device_memory) {
        int at = seen[field_index("memory_reserve_gib")];
        if (!at)
            at = seen[field_index("memory_gib")];
        if (err)
            snprintf(err, errlen, "%s:%d: field 'memory_reserve_gib': must be smaller than memory_gib",
                     path, at);
        rc = APPROF_EPARSE;
        goto cleanup;
    }
    /* a scale-up domain is whole hosts: NCCL's clique is made of whole
     * nodes, and collective.c counts a group's hosts in domains */
    if (hw.scaleup_gpus > 0 &&
        (hw.scaleup_gpus < hw.gpus_per_host || hw.scaleup_gpus % hw.gpus_per_host)) {
        int at = seen[field_index("scaleup_domain_gpus")];
        if (err)
            snprintf(err, errlen, "%s:%d: field 'scaleup_domain_gpus': %d is not a whole number "
                     "of hosts of gpus_per_host = %d GPUs (e.g. 72 for GB200 NVL72's 18 trays "
                     "of 4; 0 when the host is the domain)",
                     path, at, hw.scaleup_gpus, hw.gpus_per_host);
        rc = APPROF_EPARSE;
        goto cleanup;
    }
    /* a full mesh is one host's links (costdb_intra_bandwidth); a domain
     * larger than the host is a switch's */
    if (hw.intra_host_full_mesh && hw.scaleup_gpus > hw.gpus_per_host) {
        if (err)
            snprintf(err, errlen, "%s:%d: field 'intra_host_full_mesh': a full mesh of the "
                     "host's GPUs cannot span a scale-up domain of %d GPUs (set "
                     "scaleup_domain_gpus = 0)",
                     path, seen[field_index("intra_host_full_mesh")], hw.scaleup_gpus);
        rc = APPROF_EPARSE;
        goto cleanup;
    }
    /* the GEMM beside a userbuffers collective, or beside an NCCL
     * collective, keeps sm_count - these SMs */
    if (sm_share_invalid(path, seen, "tp_comm_overlap_sms", hw.tp_comm_overlap_sms, "SMs",
                         hw.sm_count, err, errlen) ||
        sm_share_invalid(path, seen, "nccl_channels", hw.nccl_channels, "channels", hw.sm_count,
                         err, errlen)) {
        rc = APPROF_EPARSE;
        goto cleanup;
    }
    *out = hw;
cleanup:
    free(line);
    fclose(f);
    return rc;
}

int approf_hardware_write_spec(const ApprofHardwareSpec *hw, FILE *f)
{
    if (!hw || !f)
        return APPROF_EINVAL;
    fprintf(f, "# approf hardware spec (format: schemas/hardware-spec.md)\n");
    for (size_t i = 0; i < N_FIELDS; i++) {
        const Field *fd = &fields[i];
        const char *base = (const char *)hw + fd->offset;
        switch (fd->type) {
        case F_TEXT:
            /* Quote text holding " #" so reading it back keeps it whole, an
             * empty text (the loader refuses an empty value) and text that
             * is itself in quotes (the loader would strip them). */
            if (strstr(base, "#") || !*base ||
                (base[0] == '"' && strlen(base) >= 2 && base[strlen(base) - 1] == '"'))
                fprintf(f, "%s = \"%s\"\n", fd->key, base);
            else
                fprintf(f, "%s = %s\n", fd->key, base);
            break;
        case F_INT:
            fprintf(f, "%s = %d\n", fd->key, *(const int *)(const void *)base);
            break;
        case F_BYTES:
            fprintf(f, "%s = %.15g\n", fd->key,
                    (double)*(const int64_t *)(const void *)base / fd->scale);
            break;
        default:
            fprintf(f, "%s = %.15g\n", fd->key, *(const double *)(const void *)base / fd->scale);
            break;
        }
    }
    return ferror(f) ? APPROF_EIO : APPROF_OK;
}

int approf_hardware_resolve(const char *name_or_path, ApprofHardwareSpec *out, char *err,
                            size_t errlen)
{
    FILE *probe;
    size_t n = 0, len = 0;
    const ApprofHardwareSpec *tab;

    if (err && errlen)
        err[0] = '\0';
    if (!name_or_path || !out)
        return APPROF_EINVAL;
    if (approf_hardware_builtin(name_or_path, out) == APPROF_OK)
        return APPROF_OK;
    probe = fopen(name_or_path, "r");
    if (probe) {
        fclose(probe);
        return approf_hardware_load(name_or_path, out, err, errlen);
    }
    if (!err || !errlen)
        return APPROF_EINVAL;
    tab = approf_hardware_builtins(&n);
    len = (size_t)snprintf(err, errlen, "unknown hardware '%s': not a built-in spec (", name_or_path);
    for (size_t i = 0; i < n && len < errlen; i++)
        len += (size_t)snprintf(err + len, errlen - len, "%s%s", i ? ", " : "", tab[i].name);
    if (len < errlen)
        snprintf(err + len, errlen - len, ") nor a readable spec file");
    return APPROF_EINVAL;
}
