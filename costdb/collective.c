/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one price of a collective and of Adam's step (collective.h): NCCL's
 * tuning model (nccl_model.c) or the ring formulas, the link a group
 * crosses (a host's, or a scale-up domain's of several hosts: GB200
 * NVL72, docs/hardware.md), and the fabric of a stored hardware row. The profiler
 * (hw/cost.c) and the solver (full_estimate.c) both call these; the
 * evaluation order is fixed, so equal inputs give bit-identical results in
 * both.
 */
#include <math.h>
#include <string.h>

#include "collective.h"
#include "json_read.h"

/* Hosts in one scale-up domain of f; 0 when the host is the domain. */
static int hosts_per_domain(const CostdbFabric *f)
{
    if (!f || f->gpus_per_host <= 0 || f->scaleup_gpus <= f->gpus_per_host ||
        f->scaleup_gpus % f->gpus_per_host)
        return 0;
    return f->scaleup_gpus / f->gpus_per_host;
}

int costdb_fabric_node_gpus(const CostdbFabric *f)
{
    if (!f)
        return 0;
    return hosts_per_domain(f) ? f->scaleup_gpus : f->gpus_per_host;
}

/* f at the granularity of NCCL's nodes: a multi-node NVLink clique is one
 * node (NCCL v2.21.5-1 src/graph/topo.cc ncclTopoGetSystem fuses the
 * clique's topologies; src/init.cc counts nodes by the ring graph), so the
 * domain is one "host" of scaleup_gpus GPUs holding all its hosts'
 * network adapters. */
static void domain_fabric(const CostdbFabric *f, CostdbFabric *d)
{
    int hpd = hosts_per_domain(f);
    *d = *f;
    if (!hpd)
        return;
    d->gpus_per_host = f->scaleup_gpus;
    d->nics_per_host = f->nics_per_host * hpd;
    d->scaleup_gpus = 0;
    d->intra_full_mesh = 0; /* a mesh is one host's (spec files refuse both) */
}

int costdb_collective_domains(const CostdbFabric *f, int group_size, int hosts, int span_hosts,
                              int crosses_hosts)
{
    int hpd = hosts_per_domain(f), h;
    if (!crosses_hosts || hpd <= 0)
        return crosses_hosts ? (hosts >= 2 ? hosts : group_size) : 1;
    h = span_hosts >= 2 ? span_hosts : hosts >= 2 ? hosts : group_size;
    return h <= hpd ? 1 : (h - 1) / hpd + 1;
}

double costdb_intra_bandwidth(const CostdbFabric *f, int g)
{
    int m;
    if (!f)
        return 0.0;
    m = f->gpus_per_host;
    if (!f->intra_full_mesh || m <= 2)
        return f->intra_bandwidth;
    /* A full mesh has one link from a GPU to each other GPU of the host
     * and no switch (ROCm docs, MI300 node-level architecture: seven
     * Infinity Fabric links a GPU form a fully connected 8-GPU system).
     * A ring over g of them runs its channels over the g - 1 links
     * between them (the others lead out of the group), so a pair gets one
     * link where an NVSwitch host gives it the GPU's whole bandwidth. */
    g = g < 2 ? 2 : g > m ? m : g;
    return f->intra_bandwidth * (double)(g - 1) / (double)(m - 1);
}

/* costdb_fabric_bandwidth where the host is the domain. */
static double host_bandwidth(const CostdbFabric *f, int group_size, int hosts, int crosses_hosts)
{
    double bw;

    if (!f)
        return 0.0;
    if (!crosses_hosts) {
        bw = costdb_intra_bandwidth(f, group_size);
    } else if (f->nics_per_host > 0 && f->nic_bandwidth > 0 && f->gpus_per_host > 0) {
        /* The groups of one collective run side by side: a group with g of
         * the host's M GPUs gets g/M of the host's adapters (NCCL drives
         * one channel per adapter), and its ring also crosses the
         * intra-host link. */
        int g = hosts > 0 && group_size % hosts == 0 ? group_size / hosts : 1;
        double share = (double)(g < f->gpus_per_host ? g : f->gpus_per_host) /
                       (double)f->gpus_per_host;
        double intra = costdb_intra_bandwidth(f, g);
        bw = (double)f->nics_per_host * f->nic_bandwidth * share;
        if (intra > 0 && g > 1 && bw > intra)
            bw = intra;
    } else {
        bw = f->inter_bandwidth;
    }
    if (f->bus_efficiency > 0)
        bw *= f->bus_efficiency;
    return bw;
}

double costdb_fabric_bandwidth(const CostdbFabric *f, int group_size, int hosts,
                               int crosses_hosts)
{
    CostdbFabric d;
    int dom;
    if (!f)
        return 0.0;
    if (!hosts_per_domain(f))
        return host_bandwidth(f, group_size, hosts, crosses_hosts);
    dom = costdb_collective_domains(f, group_size, hosts, 0, crosses_hosts);
    domain_fabric(f, &d);
    return host_bandwidth(&d, group_size, dom, dom > 1);
}

double costdb_ring_seconds(CostdbCollKind kind, double bytes, int group_size, double bw,
                           double lat)
{
    double n = (double)group_size, traffic, steps;

    if (group_size <= 1 || !(bytes > 0))
        return 0.0;
    if (!(bw > 0))
        return INFINITY;
    switch (kind) {
    case COSTDB_COLL_ALL_REDUCE:
        /* reduce-scatter then all-gather: 2(n-1) ring steps */
        traffic = 2.0 * (n - 1.0) / n * bytes;
        steps = 2.0 * (n - 1.0);
        break;
    case COSTDB_COLL_ALL_GATHER:
    case COSTDB_COLL_REDUCE_SCATTER:
        traffic = (n - 1.0) / n * bytes;
        steps = n - 1.0;
        break;
    case COSTDB_COLL_ALL_TO_ALL:
        /* docs/alpa-semantics.md's (Alpa's) model; n-1 pairwise exchange rounds */
        traffic = (n - 1.0) / (n * n) * bytes;
        steps = n - 1.0;
        break;
    case COSTDB_COLL_SEND_RECV:
        traffic = bytes;
        steps = 1.0;
        break;
    default:
        return 0.0;
    }
    return traffic / bw + steps * lat;
}

/* costdb_collective_seconds where the host is the domain. */
static double host_collective(const CostdbFabric *f, CostdbCollKind kind, double bytes,
                              int group_size, int hosts, int crosses_hosts)
{
    double bw, t;
    int nodes;

    bw = host_bandwidth(f, group_size, hosts, crosses_hosts);
    if (kind != COSTDB_COLL_ALL_REDUCE && kind != COSTDB_COLL_ALL_GATHER &&
        kind != COSTDB_COLL_REDUCE_SCATTER)
        return costdb_ring_seconds(kind, bytes, group_size, bw,
                                   crosses_hosts ? f->inter_latency : f->intra_latency);
    if (!(bw > 0))
        return INFINITY;
    /* the hosts the ring spans; unknown across hosts: one GPU a host, as
     * costdb_fabric_bandwidth's share assumes */
    nodes = !crosses_hosts ? 1 : hosts >= 2 ? hosts : group_size;
    t = costdb_nccl_seconds(f, kind, bytes, group_size, nodes, bw, NULL, NULL);
    return t >= 0 ? t : INFINITY;
}

double costdb_domain_collective_seconds(const CostdbFabric *f, CostdbCollKind kind,
                                        double bytes, int group_size, int domains)
{
    CostdbFabric d;
    if (!f || group_size <= 1 || !(bytes > 0))
        return 0.0;
    domain_fabric(f, &d);
    return domains > 1 ? host_collective(&d, kind, bytes, group_size, domains, 1)
                       : host_collective(&d, kind, bytes, group_size, 1, 0);
}

double costdb_collective_seconds(const CostdbFabric *f, CostdbCollKind kind, double bytes,
                                 int group_size, int hosts, int crosses_hosts)
{
    if (!f || group_size <= 1 || !(bytes > 0))
        return 0.0;
    if (!hosts_per_domain(f))
        return host_collective(f, kind, bytes, group_size, hosts, crosses_hosts);
    return costdb_domain_collective_seconds(
        f, kind, bytes, group_size, costdb_collective_domains(f, group_size, hosts, 0, crosses_hosts));
}

int costdb_group_hosts(int stride, int n, int gpus_per_host)
{
    int64_t span = (int64_t)(stride > 0 ? stride : 1) * (n > 0 ? n : 1);
    return gpus_per_host > 0 && span > gpus_per_host
               ? (int)((span + gpus_per_host - 1) / gpus_per_host)
               : 1;
}

double costdb_strided_collective_seconds(const CostdbFabric *f, CostdbCollKind kind,
                                         double bytes, int n, int stride, int gpus_per_host)
{
    int h = costdb_group_hosts(stride, n, gpus_per_host);
    return costdb_collective_seconds(f, kind, bytes, n, h, h > 1);
}

static double adam_width(double v)
{
    return v > 0 ? v : 4.0;
}

/* The main copy's bytes beyond the weight: none when the weight is its
 * own main copy (an f32 model, or a main width equal to the model's). */
static double adam_main_extra(const CostdbAdamWidths *w, double param_bytes)
{
    double m = adam_width(w ? w->main_param : 0.0);
    return param_bytes >= 4.0 || m == param_bytes ? 0.0 : m;
}

double costdb_adam_state_bytes(const CostdbAdamWidths *w, double param_bytes)
{
    return adam_main_extra(w, param_bytes) + adam_width(w ? w->exp_avg : 0.0) +
           adam_width(w ? w->exp_avg_sq : 0.0);
}

double costdb_adam_bytes(const CostdbAdamWidths *w, double elements, double param_bytes,
                         double grad_bytes)
{
    double main = adam_main_extra(w, param_bytes);
    if (w && w->step_bytes > 0)
        return elements * w->step_bytes;
    if (!(main > 0))
        main = param_bytes >= 4.0 || !(param_bytes > 0) ? 4.0 : param_bytes;
    return elements * (2.0 * (main + adam_width(w ? w->exp_avg : 0.0) +
                              adam_width(w ? w->exp_avg_sq : 0.0)) +
                       grad_bytes);
}

double costdb_grad_buffer_ratio(double grad_reduce_bytes, double param_bytes)
{
    return grad_reduce_bytes > 0 && param_bytes > 0 ? grad_reduce_bytes / param_bytes : 1.0;
}

double costdb_memory_seconds(const CostdbFabric *f, double bytes)
{
    double rate;
    if (!f || !(bytes > 0))
        return 0.0;
    rate = f->memory_bandwidth * (f->memory_efficiency > 0 ? f->memory_efficiency : 1.0);
    return rate > 0 ? bytes / rate : 0.0;
}

/* The refinements of capabilities the fabric reads; others are skipped. */
static int capability_member(CjrParser *ps, const char *key, void *ctx, int depth)
{
    CostdbFabric *f = ctx;
    double v;
    if (strcmp(key, "nics_per_host") && strcmp(key, "nic_bandwidth") &&
        strcmp(key, "bus_efficiency") && strcmp(key, "memory_efficiency") &&
        strcmp(key, "grad_overlap") && strcmp(key, "scaleup_domain_gpus") &&
        strcmp(key, "grad_reduce_bytes") && strcmp(key, "optimizer_main_param_bytes") &&
        strcmp(key, "optimizer_exp_avg_bytes") && strcmp(key, "optimizer_exp_avg_sq_bytes") &&
        strcmp(key, "optimizer_step_bytes") &&
        strcmp(key, "intra_host_full_mesh") && strcmp(key, "host_link_bandwidth") &&
        strcmp(key, "attention_efficiency") && strncmp(key, "attention_efficiency_", 21) &&
        strcmp(key, "cp_ring_torch") && strcmp(key, "grad_presync_passes"))
        return cjr_skip_value(ps, depth + 1);
    if (cjr_number(ps, &v))
        return COSTDB_EPARSE;
    if (!(v >= 0) || v > 1e18)
        return cjr_fail(ps, "%s %g is out of range", key, v);
    if (!strcmp(key, "scaleup_domain_gpus"))
        /* a whole number of GPUs; anything else reads as "the host"
         * (hosts_per_domain also checks it against gpus_per_host) */
        f->scaleup_gpus = v <= COSTDB_MAX_DEVICES && v == floor(v) ? (int)v : 0;
    else if (!strcmp(key, "intra_host_full_mesh"))
        f->intra_full_mesh = v == 1 ? 1 : 0; /* anything else reads as a switch */
    else if (!strcmp(key, "nics_per_host"))
        f->nics_per_host = v <= 1024 ? (int)v : 0;
    else if (!strcmp(key, "nic_bandwidth"))
        f->nic_bandwidth = v;
    else if (!strcmp(key, "grad_overlap"))
        f->grad_overlap = v <= 1 ? v : 0;
    else if (!strcmp(key, "grad_reduce_bytes"))
        f->grad_reduce_bytes = v <= 8 ? v : 0; /* the spec file's bound (specfile.c) */
    else if (!strcmp(key, "optimizer_main_param_bytes"))
        f->adam.main_param = v <= 8 ? v : 0; /* the spec file's bounds */
    else if (!strcmp(key, "optimizer_exp_avg_bytes"))
        f->adam.exp_avg = v <= 8 ? v : 0;
    else if (!strcmp(key, "optimizer_exp_avg_sq_bytes"))
        f->adam.exp_avg_sq = v <= 8 ? v : 0;
    else if (!strcmp(key, "optimizer_step_bytes"))
        f->adam.step_bytes = v <= 1024 ? v : 0; /* the spec file's bound */
    else if (!strcmp(key, "host_link_bandwidth"))
        f->host_bandwidth = v;
    else if (!strcmp(key, "cp_ring_torch"))
        f->cp_ring_torch = v == 1 ? 1 : 0;
    else if (!strcmp(key, "grad_presync_passes"))
        f->grad_presync_passes = v <= 8 && v == floor(v) ? (int)v : 0; /* specfile.c's bound */
    else if (!strcmp(key, "attention_efficiency"))
        f->attention_efficiency = v <= 1 ? v : 0;
    else if (!strncmp(key, "attention_efficiency_", 21)) {
        /* _2k, _4k, _8k, _16k, _32k: 2048 << i keys (the spec file's keys) */
        static const char *const at[5] = {"2k", "4k", "8k", "16k", "32k"};
        for (int i = 0; i < 5; i++)
            if (!strcmp(key + 21, at[i]))
                f->attention_eff_seq[i] = v <= 1 ? v : 0;
    }
    else if (!strcmp(key, "bus_efficiency"))
        f->bus_efficiency = v <= 1 ? v : 0;
    else
        f->memory_efficiency = v <= 1 ? v : 0;
    return 0;
}

void costdb_fabric_from_hardware(const CostdbHardware *hw, CostdbFabric *out)
{
    CostdbFabric f;
    CjrParser ps;
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!hw)
        return;
    memset(&f, 0, sizeof f);
    f.intra_bandwidth = hw->intra_host_bandwidth;
    f.intra_latency = hw->intra_host_latency;
    f.inter_bandwidth = hw->inter_host_bandwidth;
    f.inter_latency = hw->inter_host_latency;
    f.gpus_per_host = hw->gpus_per_host;
    f.memory_bandwidth = hw->memory_bandwidth;
    f.peak_flops16 = hw->peak_flops_bf16 > 0 ? hw->peak_flops_bf16 : hw->peak_flops_f16;
    *out = f;
    /* the refinements, when the capabilities are the profiler's object; a
     * row that holds anything else keeps the plain link figures */
    ps = (CjrParser){hw->capabilities, hw->capabilities, "capabilities", NULL, 0, 0};
    cjr_skip_ws(&ps);
    if (*ps.p == '{' && cjr_object(&ps, capability_member, &f, 0) == 0)
        *out = f;
}
