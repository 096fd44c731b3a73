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

#include "graph.h"
#include "stage.h"

struct CostdbHardware;

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

/* Ring collective time (DESIGN.md): kind over group_size devices, bytes per
 * device, on the intra- or inter-host link. */
double approf_collective_seconds(const ApprofHardwareSpec *hw, ApprofCollKind kind,
                                 double bytes, int group_size, int crosses_hosts);
/* Roofline time of one kernel with the spec's efficiency factors. */
double approf_kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k);
/* Memory a device can use: device_memory - memory_reserve. */
int64_t approf_hardware_available_memory(const ApprofHardwareSpec *hw);

#endif
