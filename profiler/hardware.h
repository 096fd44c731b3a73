/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hardware specs: the built-in named GPUs (with sources for every figure, see
 * hw/specs.c and schemas/hardware-spec.md), user spec files, and the
 * alpha-beta collective model on the link a mesh axis crosses.
 */
#ifndef APPROF_HARDWARE_H
#define APPROF_HARDWARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "graph.h"
#include "stage.h"

struct CostdbHardware;
struct CostdbCommPoint;

typedef struct ApprofHardwareSpec {
    char name[64];                 /* "a100-40g" */
    char gpu_model[128];           /* "NVIDIA A100-SXM4-40GB" */
    char interconnect[128];        /* "NVLink3 600 GB/s; 4x200 Gb/s InfiniBand" */
    double peak_flops[3];          /* FLOP/s dense, indexed by ApprofDtype */
    double memory_bandwidth;       /* HBM bytes/s */
    int64_t device_memory;         /* bytes */
    int64_t memory_reserve;        /* bytes kept back (context, workspace) */
    int gpus_per_host;
    double intra_host_bandwidth;   /* bytes/s per GPU, one direction */
    double intra_host_latency;     /* seconds */
    double inter_host_bandwidth;   /* bytes/s per GPU */
    double inter_host_latency;
    /* Efficiency factors of the roofline (fraction of peak reached). */
    double gemm_efficiency, conv_efficiency, memory_efficiency;
    double kernel_launch_overhead; /* seconds added per kernel */
    char source[512];              /* where the figures come from */
} ApprofHardwareSpec;

/* Built-in spec by name; APPROF_EINVAL when unknown. */
int approf_hardware_builtin(const char *name, ApprofHardwareSpec *out);
/* The built-in table. */
const ApprofHardwareSpec *approf_hardware_builtins(size_t *n);
/* Loads a user spec file (schemas/hardware-spec.md); errors name file:line
 * and the field in err. */
int approf_hardware_load(const char *path, ApprofHardwareSpec *out, char *err, size_t errlen);
/* A name of a built-in, or a path to a spec file. */
int approf_hardware_resolve(const char *name_or_path, ApprofHardwareSpec *out, char *err,
                            size_t errlen);
/* Fills a costdb hardware row (kind 'analytic', fingerprint from the spec). */
void approf_hardware_to_costdb(const ApprofHardwareSpec *hw, struct CostdbHardware *out);

/* Writes hw in the user spec file format (key = value lines in the units of
 * schemas/hardware-spec.md, every field); loading the output gives a spec
 * with the same fingerprint. 0 or APPROF_EIO. */
int approf_hardware_write_spec(const ApprofHardwareSpec *hw, FILE *f);
/* "analytic:<name>:<12 hex digits>": the hash covers every numeric field (as
 * written by approf_hardware_write_spec), so a changed spec changes it. */
void approf_hardware_fingerprint(const ApprofHardwareSpec *hw, char *out, size_t len);

/* Ring collective time (DESIGN.md) of kind over group_size devices on the
 * intra-host link, or the inter-host one when crosses_hosts. bytes is the
 * size of the full buffer on one device: the buffer being all-reduced, the
 * gathered result of an all-gather, the input of a reduce-scatter, the
 * whole send buffer of an all-to-all, the message of a send-recv. With n =
 * group_size, bw and lat the link's bandwidth and per-step latency:
 *   all-reduce     2(n-1)/n * bytes/bw + 2(n-1) * lat
 *   all-gather     (n-1)/n  * bytes/bw +  (n-1) * lat
 *   reduce-scatter (n-1)/n  * bytes/bw +  (n-1) * lat
 *   all-to-all     (n-1)/n^2 * bytes/bw + (n-1) * lat
 *   send-recv      bytes/bw + lat
 * n <= 1 or bytes <= 0 costs 0. */
double approf_collective_seconds(const ApprofHardwareSpec *hw, ApprofCollKind kind,
                                 double bytes, int group_size, int crosses_hosts);
/* Roofline time of one kernel with the spec's efficiency factors:
 * GEMM max(flops/(peak[dtype]*gemm_eff), bytes/(mem_bw*mem_eff)),
 * convolutions the same with conv_eff, memory-bound kinds (elementwise,
 * reduction, gather, copy) bytes/(mem_bw*mem_eff) only; plus the spec's
 * kernel_launch_overhead for every kernel. */
double approf_kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k);
/* Memory a device can use: device_memory - memory_reserve. */
int64_t approf_hardware_available_memory(const ApprofHardwareSpec *hw);

/* Time of one collective of the given size from a measured curve (points of
 * one collective/group/dtype sorted by bytes, as costdb_comm_get returns):
 * linear in bytes between neighbouring points, the first point's time below
 * the smallest size (latency floor), the slope of the last two points above
 * the largest (never less than the last point's time; a single point scales
 * proportionally). Returns 0 for n == 0 or bytes <= 0: the caller then falls
 * back to approf_collective_seconds. */
double approf_collective_seconds_curve(const struct CostdbCommPoint *pts, size_t n, double bytes);

#endif
