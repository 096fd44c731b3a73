/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one price of a collective and of a step of the optimizer: NCCL's
 * tuning model (ring and tree, three protocols) on the link a group crosses (the host's network adapters
 * shared among the groups that cross hosts, the bus efficiency of NCCL's
 * rings), Adam's bytes, and the fabric these read, built from a hardware
 * spec (the profiler) or from the stored hardware row and its capabilities
 * (the solver's full estimate). Formulas in docs/alpa-semantics.md; pure
 * functions of their arguments, so that the profiler's entries and the
 * solver's estimate price the same message the same.
 */
#ifndef COSTDB_COLLECTIVE_H
#define COSTDB_COLLECTIVE_H

#include "costdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same order as the profiler's ApprofCollKind. */
typedef enum {
    COSTDB_COLL_ALL_REDUCE = 0,
    COSTDB_COLL_ALL_GATHER,
    COSTDB_COLL_REDUCE_SCATTER,
    COSTDB_COLL_ALL_TO_ALL,
    COSTDB_COLL_SEND_RECV
} CostdbCollKind;

/* The widths Adam keeps its state in (a spec's optimizer_* fields,
 * schemas/hardware-spec.md; docs/megatron-memory.md, "Optimizer state"):
 * bytes a parameter of the main (master) copy, of the first moment
 * (exp_avg) and of the second (exp_avg_sq); 0: f32 (4), the default of
 * Megatron-Core (--main-params-dtype, --exp-avg-dtype, --exp-avg-sq-dtype
 * fp32, core_v0.19.0) and PyTorch's Adam. A main width equal to the
 * model's is the weight itself (Apex distributed_fused_adam's
 * store_params off, as NeMo sets it when the optimizer's dtype is the
 * model's): no separate copy. step_bytes: the bytes an element the
 * optimizer step moves when that is not fused Adam's count (a spec's
 * optimizer_step_bytes: Composer's per-parameter DecoupledAdamW, eight
 * element-wise kernels, 80); 0: fused Adam's (costdb_adam_bytes). */
typedef struct CostdbAdamWidths {
    double main_param, exp_avg, exp_avg_sq;
    double step_bytes;
} CostdbAdamWidths;

/* What prices communication and a memory-bound step on one kind of host. */
typedef struct CostdbFabric {
    double intra_bandwidth, intra_latency;  /* bytes/s one direction, s */
    double inter_bandwidth, inter_latency;
    int gpus_per_host;
    int nics_per_host;                      /* 0: inter_bandwidth as given */
    double nic_bandwidth;                   /* bytes/s per adapter */
    double bus_efficiency;                  /* 0: 1 */
    double memory_bandwidth;                /* bytes/s */
    double memory_efficiency;               /* 0: 1 */
    double grad_overlap;                    /* share of the backward that hides the gradient
                                             * reduction (a hardware row's capability; the
                                             * profiler's own pricing reads its spec) */
    double grad_reduce_bytes;               /* the spec's width of the gradient buffers and
                                             * their reduction; 0: the model's
                                             * (costdb_grad_buffer_ratio) */
    int grad_presync_passes;                /* the spec's passes over the gradient buffer
                                             * before the data-parallel reduction
                                             * (hw/grad_presync.c); 0: none */
    CostdbAdamWidths adam;                  /* the spec's optimizer-state widths
                                             * (costdb_adam_state_bytes) */
    int scaleup_gpus;                       /* GPUs of one NVLink scale-up domain (GB200
                                             * NVL72: 72) when it spans several hosts, a
                                             * multiple of gpus_per_host; 0 or
                                             * gpus_per_host: the host is the domain
                                             * (docs/hardware.md) */
    int intra_full_mesh;                    /* 1: the host's GPUs are a switchless full
                                             * mesh (AMD MI300X: 7 Infinity Fabric links a
                                             * GPU, one to each other GPU), intra_bandwidth
                                             * the sum of a GPU's gpus_per_host - 1 links;
                                             * 0: a switch (NVSwitch) gives every group
                                             * the whole intra_bandwidth
                                             * (costdb_intra_bandwidth) */
    double host_bandwidth;                  /* bytes/s one direction between a GPU and host
                                             * memory (the spec's host_link_bandwidth_gbs);
                                             * 0: unknown */
    /* The fused attention's rate, which a cp stage's ring prices its
     * shorter kernels by (solver/cp_attention.c): the row's 16-bit peak
     * (peak_flops_bf16, else peak_flops_f16), FLOP/s; its
     * attention_efficiency and attention_efficiency_2k .. _32k (the
     * profiler's attention_eff_seq, profiler/hw/attention_rate.c); 0: not
     * given */
    double peak_flops16;
    double attention_efficiency;
    double attention_eff_seq[5];            /* at 2048 << i keys */
    int cp_ring_torch;                      /* 1: a cp stage's ring is PyTorch's (the
                                             * spec's cp_ring_torch;
                                             * solver/cp_torch_ring.c); 0: TE's */
} CostdbFabric;

/* The intra-host bandwidth (bytes/s one direction, before bus_efficiency)
 * a group with g GPUs on one host reaches its other members with: on a
 * switch intra_bandwidth whatever g; on a full mesh (intra_full_mesh) the
 * g - 1 direct links to them, intra_bandwidth x (g - 1) / (gpus_per_host
 * - 1): a pair gets one link. g is clamped to 2 .. gpus_per_host. */
double costdb_intra_bandwidth(const CostdbFabric *f, int g);

/* GPUs of one NCCL "node" of f: its scale-up domain when that spans
 * several hosts (NCCL fuses a multi-node NVLink clique into one node,
 * docs/hardware.md), else gpus_per_host. */
int costdb_fabric_node_gpus(const CostdbFabric *f);

/* Bandwidth one ring of group_size devices over hosts hosts gets: the
 * intra-host link inside a host (and inside one scale-up domain, see
 * costdb_collective_seconds); across hosts, with nics_per_host, the
 * host's adapters times the share g/M of its GPUs the group holds (g =
 * group_size / hosts, one when hosts is 0 or does not divide), at most the
 * intra-host link when g > 1; else inter_bandwidth; times bus_efficiency. */
double costdb_fabric_bandwidth(const CostdbFabric *f, int group_size, int hosts,
                               int crosses_hosts);

/* Ring time of kind over group_size devices at bw and per-step latency lat:
 * all-reduce 2(n-1)/n bytes/bw + 2(n-1) lat; all-gather, reduce-scatter
 * (n-1)/n bytes/bw + (n-1) lat; all-to-all (n-1)/n^2 bytes/bw + (n-1) lat;
 * send-recv bytes/bw + lat. 0 for n <= 1 or bytes <= 0; +inf when bw <= 0. */
double costdb_ring_seconds(CostdbCollKind kind, double bytes, int group_size, double bw,
                           double lat);

/* NCCL's algorithms and protocols, in its own order (NCCL_ALGO_TREE,
 * NCCL_ALGO_RING; NCCL_PROTO_LL, _LL128, _SIMPLE). */
enum { COSTDB_NCCL_TREE = 0, COSTDB_NCCL_RING = 1 };
enum { COSTDB_NCCL_LL = 0, COSTDB_NCCL_LL128 = 1, COSTDB_NCCL_SIMPLE = 2 };

/* NCCL v2.21.5-1's tuning model (costdb/nccl_model.c, docs/nccl-tuning.md):
 * seconds of an all-reduce, all-gather or reduce-scatter of bytes (the
 * whole buffer, as NCCL's nBytes) over n ranks on nodes hosts by algo
 * (COSTDB_NCCL_TREE, _RING) and proto (COSTDB_NCCL_LL, _LL128, _SIMPLE),
 * bus_bw being the Simple ring's bus bandwidth in bytes/s; the ring/Simple
 * per-step latencies are f's intra_latency and inter_latency, the rest
 * NCCL's constants. -1 where NCCL does not run that pair (the tree for
 * anything but an all-reduce, LL128 off NVLink), for another kind, n <= 1,
 * bytes <= 0 or bus_bw <= 0. */
double costdb_nccl_time(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                        int nodes, double bus_bw, int algo, int proto);

/* The fastest pair of costdb_nccl_time, as NCCL's tuner picks it; its
 * algorithm and protocol in *algo and *proto when not NULL (-1 and -1
 * with -1 returned when no pair runs). */
double costdb_nccl_seconds(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                           int nodes, double bus_bw, int *algo, int *proto);

/* A collective over group_size ranks on the link costdb_fabric_bandwidth
 * gives: an all-reduce, all-gather or reduce-scatter as NCCL's tuner
 * prices it (costdb_nccl_seconds; hosts ranks' hosts when crosses_hosts,
 * one GPU a host when hosts < 2, one host when not crossing); all-to-all
 * and send-recv, which NCCL's tuner does not model, by costdb_ring_seconds
 * with the link's latency. With a scale-up domain of several hosts
 * (f->scaleup_gpus) the hosts are counted in domains, each of
 * scaleup_gpus / gpus_per_host consecutive hosts, a group placed from a
 * domain's first host (as costdb_group_hosts places it from a host's):
 * costdb_domain_collective_seconds over that many domains. */
double costdb_collective_seconds(const CostdbFabric *f, CostdbCollKind kind, double bytes,
                                 int group_size, int hosts, int crosses_hosts);

/* NCCL nodes a group of group_size ranks on `hosts` hosts spans: 1 when it
 * does not cross hosts; with a scale-up domain of several hosts, the
 * domains its span_hosts (hosts from its first rank's to its last's; 0:
 * hosts, consecutive) cover from a domain's first host; else the hosts
 * (one GPU a host when hosts < 2). */
int costdb_collective_domains(const CostdbFabric *f, int group_size, int hosts, int span_hosts,
                              int crosses_hosts);

/* A collective over group_size ranks spread over `domains` NCCL nodes
 * (costdb_fabric_node_gpus GPUs each): inside one (domains <= 1) on the
 * intra-host (scale-up) link; across several, on the network, the domain
 * taken as one host of node GPUs with the adapters of all its hosts. For
 * callers that know where a group lies (the solver's stage-to-stage
 * transfers); equal to costdb_collective_seconds with hosts = domains
 * when the host is the domain. */
double costdb_domain_collective_seconds(const CostdbFabric *f, CostdbCollKind kind,
                                        double bytes, int group_size, int domains);

/* Hosts a group of n ranks spans when its ranks are stride consecutive
 * devices apart (a framework's rank order: Megatron-Core puts tp fastest,
 * then cp or, for experts, etp then ep): stride x n devices from a host
 * boundary, over gpus_per_host GPUs a host; 1 when they fit in one. */
int costdb_group_hosts(int stride, int n, int gpus_per_host);

/* costdb_collective_seconds of a group of n ranks stride consecutive
 * devices apart on hosts of gpus_per_host GPUs (costdb_group_hosts): the
 * one pricing of the solver's transformed stages (context and expert
 * parallelism, HSDP). */
double costdb_strided_collective_seconds(const CostdbFabric *f, CostdbCollKind kind,
                                         double bytes, int n, int stride, int gpus_per_host);

/* Bytes a parameter param_bytes wide keeps resident for Adam beyond the
 * weight itself, with its state in the widths w (NULL or 0 fields: f32):
 * the two moments, plus the main copy when it is not the weight (a
 * 16-bit model's f32 master: 12 bytes by default; an f32 model's 8). The
 * one rule of the stage program's initial state (profiler/sharding),
 * the sharding ILP's node memory, the sweep's fit check and apsolve's
 * HSDP and expert-parallel transformations. */
double costdb_adam_state_bytes(const CostdbAdamWidths *w, double param_bytes);

/* Bytes Adam moves per step for elements parameters param_bytes wide
 * whose gradient is grad_bytes wide, state in the widths w (NULL: f32):
 * it reads the main copy (the weight when it is its own main copy), the
 * gradient and the two moments and writes the main copy and the moments:
 * elements x (2 (main + exp_avg + exp_avg_sq) + grad_bytes), 24 +
 * grad_bytes with f32 state; elements x w->step_bytes where that is
 * given (an unfused step's own count). */
double costdb_adam_bytes(const CostdbAdamWidths *w, double elements, double param_bytes,
                         double grad_bytes);

/* Bytes of a gradient accumulation buffer per byte of a parameter
 * param_bytes wide: the width the gradients are accumulated and reduced in
 * (a spec's grad_reduce_bytes: 4 for Megatron's f32 main_grad of a 16-bit
 * model, docs/megatron-memory.md) over param_bytes; 1 when grad_reduce_bytes
 * is not set (<= 0) or param_bytes is unknown. The one rule of the
 * profiler's stage program (shard_grad_buffer_ratio) and of the solver's
 * HSDP and expert-parallel memory (solver/hsdp.c, expert_parallel.c). */
double costdb_grad_buffer_ratio(double grad_reduce_bytes, double param_bytes);

/* Seconds to stream bytes through device memory at memory_bandwidth x
 * memory_efficiency; 0 when the rate is unknown. */
double costdb_memory_seconds(const CostdbFabric *f, double bytes);

/* The fabric of a stored hardware row: its link figures, and the
 * refinements the profiler wrote into capabilities (nics_per_host,
 * nic_bandwidth, bus_efficiency, memory_efficiency, grad_overlap,
 * grad_reduce_bytes, host_link_bandwidth) when present. */
void costdb_fabric_from_hardware(const CostdbHardware *hw, CostdbFabric *out);

#ifdef __cplusplus
}
#endif

#endif
