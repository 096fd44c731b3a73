/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's pieces (sweep_int.h): model -> layers -> enumeration, the
 * database rows, composition and the hardware curves. One tuple's sharding,
 * costing, entries and placements are sweep_tuple.c; the driver that runs
 * them (one process or many) is sweep_run.c.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "backend.h"
#include "compose.h"
#include "costdb_error.h"
#include "cuda/probe_store.h"
#include "hardware.h"
#include "model/modelfile.h"
#include "model/onnx.h"
#include "model/zoo.h"
#include "plural.h"
#include "sharding/sharding.h"
#include "sweep.h"
#include "sweep_db.h"
#include "sweep_int.h"
#include "fnv.h"


static uint64_t fnv1a(const char *s)
{
    return costdb_fnv1a_str(COSTDB_FNV_BASIS_V1, s);
}

void approf_sweep_notice(const ApprofSweepCallbacks *cb, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (!cb || !cb->notice)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cb->notice(cb->ctx, msg);
}

/* Builds the model graph for one micro-batch. */
/* The zoo options of cfg (manual_boundaries left to the caller). */
static void zoo_options(const ApprofSweepConfig *cfg, ApprofZooOptions *zo)
{
    memset(zo, 0, sizeof *zo);
    zo->preset = cfg->preset;
    zo->attention = cfg->attention;
    zo->activation_fusion = cfg->activation_fusion;
    zo->eager_elementwise = cfg->eager_elementwise;
    zo->attention_unpad = cfg->attention_unpad;
    zo->dataset = cfg->dataset;
    zo->dtype = approf_dtype_name(cfg->dtype);
    zo->num_layers = cfg->zoo_num_layers;
    zo->hidden = cfg->zoo_hidden;
    zo->heads = cfg->zoo_heads;
    zo->seq_len = cfg->zoo_seq_len;
    zo->vocab = cfg->zoo_vocab;
    zo->mlm_positions = cfg->zoo_mlm_positions;
    zo->dropout = cfg->zoo_dropout;
    zo->depth = cfg->zoo_depth;
    zo->width_factor = cfg->zoo_width;
}

static int build_graph(const ApprofSweepConfig *cfg, int64_t *global_batch, ApprofGraph **out,
                       char *err, size_t errlen)
{
    int rc;
    *out = NULL;
    if (cfg->model_file) {
        /* an ONNX graph with a symbolic batch is built for the micro-batch */
        int64_t mb = *global_batch > 0 && *global_batch % cfg->micro_batches == 0
                         ? *global_batch / cfg->micro_batches : 0;
        rc = approf_model_load_batch(cfg->model_file, mb, out, err, errlen);
        if (rc < 0)
            return rc;
        if (*global_batch == 0)
            *global_batch = (*out)->batch_size * cfg->micro_batches;
        if (*global_batch % cfg->micro_batches ||
            *global_batch / cfg->micro_batches != (*out)->batch_size) {
            snprintf(err, errlen,
                     "%s: the model file is built for a micro-batch of %lld %s, but "
                     "--batch %lld over %d %s needs %lld (export the model with "
                     "--batch %lld)", cfg->model_file, (long long)(*out)->batch_size,
                     costdb_plural((*out)->batch_size, "sample", "samples"),
                     (long long)*global_batch, cfg->micro_batches,
                     costdb_plural(cfg->micro_batches, "micro-batch", "micro-batches"),
                     (long long)(*global_batch / cfg->micro_batches),
                     (long long)(*global_batch / cfg->micro_batches));
            approf_graph_free(out);
            return APPROF_EINVAL;
        }
        return 0;
    }
    {
        ApprofZooOptions zo;
        ApprofGraph *probe = NULL;
        zoo_options(cfg, &zo);
        zo.manual_boundaries = cfg->manual_boundary || cfg->layers == 0;
        if (*global_batch == 0) {
            /* the model's default batch is the global batch */
            rc = approf_zoo_build(cfg->model_name, &zo, &probe, err, errlen);
            if (rc < 0)
                return rc;
            *global_batch = probe->batch_size;
            approf_graph_free(&probe);
        }
        if (*global_batch % cfg->micro_batches) {
            snprintf(err, errlen, "--batch %lld is not divisible by --micro-batches %d",
                     (long long)*global_batch, cfg->micro_batches);
            return APPROF_EINVAL;
        }
        zo.batch = *global_batch / cfg->micro_batches;
        return approf_zoo_build(cfg->model_name, &zo, out, err, errlen);
    }
}

int approf_sweep_global_batch(const ApprofSweepConfig *cfg, int64_t *out, char *err,
                              size_t errlen)
{
    ApprofZooOptions zo;
    ApprofGraph *probe = NULL;
    int rc;
    if (cfg->global_batch > 0 || cfg->model_file) {
        *out = cfg->global_batch;
        if (!*out)
            snprintf(err, errlen, "a model file is built for one micro-batch: give --batch");
        return *out ? 0 : APPROF_EINVAL;
    }
    zoo_options(cfg, &zo);
    rc = approf_zoo_build(cfg->model_name, &zo, &probe, err, errlen);
    if (rc < 0)
        return rc;
    *out = probe->batch_size;
    approf_graph_free(&probe);
    return 0;
}

static void shape_text(const ApprofTensor *t, char *buf, size_t len)
{
    costdb_shape_format(t->dims, t->ndim, buf, len);
}

/* 1 when the NVIDIA driver's control device exists (a GPU machine, even
 * where this process cannot use it). */
static int gpu_device_node(void)
{
    return access("/dev/nvidiactl", F_OK) == 0;
}

int approf_sweep_open_backend(Sweep *sw, const ApprofSweepConfig *cfg,
                              const ApprofSweepCallbacks *cb, char *err, size_t errlen)
{
    char why[512] = "";
    int rc;
    if (!strcmp(cfg->backend, "model"))
        return approf_backend_analytic(&sw->backend);
    if (sw->n_devices > 0) {
        int dev = sw->devices[sw->device_slot % sw->n_devices];
        rc = approf_backend_cuda_on(dev, &sw->backend, why, sizeof why);
        if (rc == 0)
            return 0;
    } else {
        rc = APPROF_ENODEV;
        snprintf(why, sizeof why, "%s", sw->no_gpu_why[0] ? sw->no_gpu_why : "no CUDA device");
    }
    if (!strcmp(cfg->backend, "cuda")) {
        snprintf(err, errlen, "--backend cuda: %s", why[0] ? why : approf_strerror(rc));
        return rc;
    }
    if (!gpu_device_node() && !cfg->backend_given)
        /* The default backend on a machine without a GPU (no NVIDIA
         * device node): the analytic model is what the user gets on
         * every run, so no notice each time; the summary's "backend
         * model" says which backend priced the sweep. A notice stays for
         * an explicit --backend auto and for a GPU the CUDA module
         * cannot use (docs/reliability.md, "Backend fallback"). */
        ;
    else if (!gpu_device_node() && strstr(why, "cudaGetDeviceCount"))
        /* No NVIDIA device node: the machine has no GPU, and the CUDA
         * runtime's reason ("driver version is insufficient", "no
         * CUDA-capable device") says nothing the user needs. */
        approf_sweep_notice(cb, "no GPU on this machine; using the analytic model of '%s'",
                            sw->hw.name);
    else
        approf_sweep_notice(cb, "%s; using the analytic model of '%s'",
                            why[0] ? why : "no CUDA device", sw->hw.name);
    sw->n_devices = 0;
    sw->have_gpu_info = 0;
    return approf_backend_analytic(&sw->backend);
}

/* Unless --backend model: the CUDA devices of this machine and which of
 * them this process measures on (all of them; under mpirun with several
 * ranks on a host, every local_size-th from local_rank, or one shared). */
static void detect_devices(Sweep *sw, const ApprofSweepConfig *cfg)
{
    int count;
    sw->n_devices = 0;
    sw->have_gpu_info = 0;
    if (!strcmp(cfg->backend, "model"))
        return;
    /* one look at the machine: the device count and what approf probe
     * fingerprints */
    if (approf_cuda_device_info(&sw->gpu_info, sw->no_gpu_why, sizeof sw->no_gpu_why) < 0)
        return;
    sw->have_gpu_info = 1;
    count = sw->gpu_info.device_count;
    if (count <= 0)
        return;
    if (count > APPROF_SWEEP_MAX_DEVICES)
        count = APPROF_SWEEP_MAX_DEVICES;
    if (sw->local_size <= 1) {
        for (int d = 0; d < count; d++)
            sw->devices[sw->n_devices++] = d;
    } else if (count >= sw->local_size) {
        for (int d = sw->local_rank; d < count; d += sw->local_size)
            sw->devices[sw->n_devices++] = d;
    } else {
        sw->devices[sw->n_devices++] = sw->local_rank % count;
    }
}

/* --hardware, else the built-in matching the local GPU, else a100-40g. */
static int resolve_hardware(Sweep *sw, const ApprofSweepConfig *cfg,
                            const ApprofSweepCallbacks *cb, char *err, size_t errlen)
{
    const char *name = cfg->hardware;
    if (!name && sw->have_gpu_info) {
        name = approf_hardware_match_gpu(sw->gpu_info.gpu_model, sw->gpu_info.device_memory);
        if (name)
            approf_sweep_notice(cb, "hardware spec '%s' for the local %s (--hardware to change)", name,
                   sw->gpu_info.gpu_model);
        else
            approf_sweep_notice(cb, "no built-in spec matches the local %s; collectives not covered by "
                       "measured curves use the alpha-beta model of 'a100-40g' (--hardware "
                       "to change)", sw->gpu_info.gpu_model);
    }
    return approf_hardware_resolve(name ? name : "a100-40g", &sw->hw, err, errlen);
}

/* --cluster, else the local GPUs (hosts: the mpirun hosts), else 1x8. */
static void resolve_cluster(Sweep *sw, const ApprofSweepConfig *cfg,
                            const ApprofSweepCallbacks *cb)
{
    int g = 1;
    if (cfg->cluster_hosts > 0 && cfg->cluster_gpus > 0) {
        sw->cluster_hosts = cfg->cluster_hosts;
        sw->cluster_gpus = cfg->cluster_gpus;
    } else if (sw->n_devices > 0 && sw->have_gpu_info) {
        while (g * 2 <= sw->gpu_info.device_count)
            g *= 2;  /* submesh choices need a power of two per host */
        sw->cluster_gpus = g;
        sw->cluster_hosts = sw->mpi_size > 1 && sw->local_size > 0 &&
                                    sw->mpi_size % sw->local_size == 0
                                ? sw->mpi_size / sw->local_size
                                : 1;
        approf_sweep_notice(cb, "cluster %dx%d: this machine's GPUs%s (--cluster to change)",
               sw->cluster_hosts, sw->cluster_gpus,
               sw->cluster_hosts > 1 ? " on every mpirun host" : "");
    } else {
        sw->cluster_hosts = 1;
        sw->cluster_gpus = 8;
    }
    sw->cluster_devices = sw->cluster_hosts * sw->cluster_gpus;
}

static int graph_has_attention(const ApprofGraph *g)
{
    for (size_t o = 0; o < g->n_ops; o++)
        if (g->ops[o].kind == APPROF_OP_SOFTMAX)
            return 1;
    return 0;
}

static int enumerate(Sweep *sw, const ApprofSweepConfig *cfg, char *err, size_t errlen)
{
    int counts[APPROF_MAX_SUBMESHES];
    double *flops = NULL;
    int64_t n;
    int rc;
    sw->n_submeshes = approf_submesh_choices(sw->cluster_hosts, sw->cluster_gpus,
                                             cfg->submesh_space, cfg->manual_submeshes,
                                             cfg->n_manual_submeshes, sw->submeshes,
                                             APPROF_MAX_SUBMESHES, err, errlen);
    if (sw->n_submeshes < 0)
        return APPROF_EINVAL;
    for (int s = 0; s < sw->n_submeshes; s++) {
        sw->n_configs[s] = approf_config_choices(sw->submeshes[s], cfg->logical_space,
                                                 sw->graph->batch_size, sw->hw.scaleup_gpus,
                                                 sw->configs[s], APPROF_MAX_CONFIGS);
        int nv = approf_config_variants(sw->configs[s], sw->n_configs[s], APPROF_MAX_CONFIGS,
                                        sw->submeshes[s].n * sw->submeshes[s].m,
                                        costdb_variant_space_resolve(cfg->variants),
                                        graph_has_attention(sw->graph));
        if (nv > APPROF_MAX_CONFIGS) {
            snprintf(err, errlen, "%d stage variants on submesh (%d, %d): at most %d "
                     "(fewer --memory-levels, --recompute or --zero)", nv,
                     sw->submeshes[s].n, sw->submeshes[s].m, APPROF_MAX_CONFIGS);
            return APPROF_EINVAL;
        }
        sw->n_configs[s] = nv;
        counts[s] = sw->n_configs[s];
    }
    approf_sweep_config_groups(sw);
    if (cfg->imbalance_tol >= 0) {
        flops = calloc((size_t)sw->layering.n_layers, sizeof *flops);
        if (!flops)
            return APPROF_ENOMEM;
        for (int i = 0; i < sw->layering.n_layers; i++) {
            ApprofLayerStats st;
            if (approf_layer_stats(sw->graph, &sw->layering, i, &st) == 0)
                flops[i] = st.fwd_flops + st.bwd_flops;
        }
    }
    if (sw->layering.n_layers > APPROF_TUPLE_MAX_LAYERS) {
        free(flops);
        snprintf(err, errlen, "%s: %d layers, more than a sweep's %d", sw->graph->name,
                 sw->layering.n_layers, APPROF_TUPLE_MAX_LAYERS);
        return APPROF_EINVAL;
    }
    /* counted before anything is listed: thousands of layers on a large
     * cluster are billions of tuples, which ran out of memory */
    n = approf_count_tuples(sw->layering.n_layers, sw->submeshes, sw->n_submeshes, counts,
                            sw->cluster_hosts, sw->cluster_gpus, cfg->individual,
                            cfg->imbalance_tol, flops);
    if (n < 0) {
        free(flops);
        snprintf(err, errlen, "enumeration failed");
        return APPROF_ENOMEM;
    }
    if (n > APPROF_SWEEP_MAX_TUPLES && !cfg->allow_large) {
        free(flops);
        snprintf(err, errlen, "%s: %lld tuples to profile (%d layers on %d submeshes of a %dx%d "
                 "cluster), above the limit of %d: fewer --layers, a smaller --cluster, "
                 "--submesh-space or --logical-space, or --allow-large to run it anyway",
                 sw->graph->name, (long long)n, sw->layering.n_layers, sw->n_submeshes,
                 sw->cluster_hosts, sw->cluster_gpus, APPROF_SWEEP_MAX_TUPLES);
        return APPROF_EINVAL;
    }
    rc = approf_enumerate_tuples(sw->layering.n_layers, sw->submeshes, sw->n_submeshes, counts,
                                 sw->cluster_hosts, sw->cluster_gpus, cfg->individual,
                                 cfg->imbalance_tol, flops, &sw->tuples, &sw->n_tuples);
    free(flops);
    if (rc < 0) {
        snprintf(err, errlen, "enumeration failed");
        return APPROF_ENOMEM;
    }
    return 0;
}

int approf_sweep_entry_kept(ApprofSweepSummary *sum, const CostdbEntry *e)
{
    if (e->status != COSTDB_STATUS_SKIPPED)
        return 1;
    sum->skipped++;
    return 0;
}

void approf_sweep_entry_counted(ApprofSweepSummary *sum, const CostdbEntry *e)
{
    sum->entries++;
    if (e->status == COSTDB_STATUS_OOM)
        sum->out_of_memory++;
    else if (e->status != COSTDB_STATUS_OK)
        sum->failures++;
}

/* Profile mode "individual": only single layers were profiled; every range
 * i..j gets an entry composed from them (compose.h). Ranges already present
 * (resume) are left alone. */
int approf_sweep_compose(Sweep *sw, int64_t sweep_id, ApprofSweepWriter *w,
                         ApprofSweepSummary *sum)
{
    CostdbEntry *all = NULL, *out = NULL;
    size_t n = 0, n_out = 0;
    int rc = approf_from_costdb(costdb_entries_get(sw->db, sweep_id, &all, &n));
    if (rc < 0)
        return rc;
    rc = approf_compose_individual(all, n, sw->layering.n_layers, sw->submeshes,
                                   sw->n_submeshes, sw->n_configs, sw->cluster_devices, &out,
                                   &n_out);
    /* a range with a skipped layer (a database written before they were
     * left out) is skipped too, by the sweep's rule */
    size_t kept = 0;
    for (size_t k = 0; rc == 0 && k < n_out; k++)
        if (approf_sweep_entry_kept(sum, &out[k]))
            out[kept++] = out[k];
    n_out = kept;
    if (rc == 0 && n_out)
        rc = approf_from_costdb(approf_sweep_writer_put(w, out, n_out, NULL, 0));
    for (size_t k = 0; rc == 0 && k < n_out; k++)
        approf_sweep_entry_counted(sum, &out[k]);
    free(out);
    free(all);
    return rc;
}

int approf_sweep_use_curves(Sweep *sw, ApprofSweepSummary *sum)
{
    int rc;
    sw->hw.curves = NULL;
    approf_comm_curves_free(&sw->curves);
    rc = approf_comm_curves_new(sw->comm_pts, sw->n_comm_pts,
                                approf_dtype_name(sw->graph->dtype), &sw->curves);
    if (rc < 0)
        return rc;
    sw->hw.curves = sw->curves;
    if (sw->curves) {
        size_t np, nc = approf_comm_curves_count(sw->curves, &np);
        snprintf(sum->collectives, sizeof sum->collectives,
                 "%zu measured curve%s (%zu points), elsewhere the alpha-beta model", nc,
                 nc == 1 ? "" : "s", np);
    } else {
        snprintf(sum->collectives, sizeof sum->collectives,
                 "the alpha-beta model (no measured curves for this hardware)");
    }
    return 0;
}

int approf_sweep_use_gemm(Sweep *sw, const ApprofSweepCallbacks *cb, int64_t hardware_id)
{
    const char *dt = approf_gemm_table_dtype(&sw->hw, sw->graph->dtype);
    int complete = 0, sz[3] = {0, 0, 0}, rc;
    size_t n;
    sw->hw.gemm_table = NULL;
    approf_gemm_table_free(&sw->gemm_table);
    rc = approf_gemm_table_new(sw->gemm_pts, sw->n_gemm_pts, &sw->gemm_table);
    if (rc < 0 || !sw->gemm_table)
        return rc;
    n = approf_gemm_table_count(sw->gemm_table, dt, &complete, sz);
    if (complete) {
        sw->hw.gemm_table = sw->gemm_table;
        if (cb)
            approf_sweep_notice(cb, "GEMMs in %s from %zu measured shapes of hardware %lld (%d x %d"
                                " x %d sizes of m, n, k; interpolated, clamped outside); fused"
                                " attention by the spec '%s'", dt, n, (long long)hardware_id,
                                sz[0], sz[1], sz[2], sw->hw.name);
    } else {
        approf_gemm_table_free(&sw->gemm_table);
        if (cb && n)
            approf_sweep_notice(cb, "the %zu %s GEMM shapes of hardware %lld do not fill their %d"
                                " x %d x %d grid: GEMMs use the roofline of '%s'", n, dt,
                                (long long)hardware_id, sz[0], sz[1], sz[2], sw->hw.name);
    }
    return 0;
}

void approf_sweep_free(Sweep *sw)
{
    sw->hw.curves = NULL;
    approf_comm_curves_free(&sw->curves);
    free(sw->comm_pts);
    sw->hw.gemm_table = NULL;
    approf_gemm_table_free(&sw->gemm_table);
    free(sw->gemm_pts);
    approf_shard_context_free(&sw->shard);
    approf_backend_destroy(&sw->backend);
    approf_layering_free(&sw->layering);
    approf_graph_free(&sw->graph);
    costdb_close(&sw->db);
    free(sw->tuples);
    free(sw->shape_end);
    approf_sweep_reuse_free(&sw->reuse);
    free(sw->shape_texts);
}

/* Model, layers, hardware, backend, enumeration and sharding context: what
 * every rank derives from the command line on its own. */
/* The dtype the sweep builds the graph in: the mixed-precision default of
 * hw for a zoo model that trains so when --dtype was not given, else cfg's. */
static ApprofDtype graph_dtype(const ApprofSweepConfig *cfg, const ApprofHardwareSpec *hw)
{
    if (cfg->dtype_default && !cfg->model_file && approf_zoo_trains_mixed(cfg->model_name))
        return approf_mixed_precision_dtype(hw);
    return cfg->dtype;
}

int approf_sweep_needs_whole_space(const ApprofSweepConfig *cfg, double *state, double *device,
                                   char *err, size_t errlen)
{
    Sweep sw;
    ApprofSweepConfig eff = *cfg;
    ApprofGraph *g = NULL;
    int64_t gb = 0;
    int rc;
    memset(&sw, 0, sizeof sw);
    *state = *device = 0.0;
    detect_devices(&sw, cfg);
    if ((rc = resolve_hardware(&sw, cfg, NULL, err, errlen)) < 0)
        return rc;
    eff.dtype = graph_dtype(cfg, &sw.hw);
    if (eff.micro_batches < 1)
        eff.micro_batches = 1;
    if ((rc = approf_sweep_global_batch(&eff, &gb, err, errlen)) < 0)
        return rc;
    if (gb % eff.micro_batches)
        eff.micro_batches = 1;
    if ((rc = build_graph(&eff, &gb, &g, err, errlen)) < 0)
        return rc;
    /* weights and gradients in the model's dtype, Adam's two moments
     * and, in 16-bit training, a master copy in the spec's optimizer
     * widths: the bytes per element the stage program keeps (program.c) */
    CostdbAdamWidths aw;
    approf_hardware_adam_widths(&sw.hw, &aw);
    double adam = costdb_adam_state_bytes(&aw, (double)approf_dtype_size(g->dtype));
    for (size_t t = 0; t < g->n_tensors; t++) {
        const ApprofTensor *ten = &g->tensors[t];
        double elems = 1.0;
        if (ten->role != APPROF_TENSOR_PARAM)
            continue;
        for (int d = 0; d < ten->ndim; d++)
            elems *= (double)ten->dims[d];
        *state += elems * (2.0 * (double)approf_dtype_size(ten->dtype) + adam);
    }
    approf_graph_free(&g);
    *device = (double)approf_hardware_available_memory(&sw.hw);
    return *state > *device ? 1 : 0;
}

int approf_sweep_prepare(Sweep *sw, const ApprofSweepConfig *cfg,
                         const ApprofSweepCallbacks *cb, int64_t *global_batch,
                         ApprofSweepSummary *sum, double t_start, char *err, size_t errlen)
{
    double t0;
    ApprofSweepConfig eff = *cfg;
    int rc;
    /* the hardware first: it decides the default dtype of the graph */
    detect_devices(sw, cfg);
    rc = resolve_hardware(sw, cfg, cb, err, errlen);
    if (rc < 0)
        return rc;
    if (cfg->fp8 && approf_fp8_recipe_refusal(&sw->hw, cfg->fp8)) {
        snprintf(err, errlen, "--fp8 --fp8-recipe %s: hardware '%s' has %s",
                 costdb_fp8_recipe(cfg->fp8) ? costdb_fp8_recipe(cfg->fp8)->name : "?",
                 sw->hw.name, approf_fp8_recipe_refusal(&sw->hw, cfg->fp8));
        return APPROF_EINVAL;
    }
    sw->hw.fp8 = cfg->fp8;
    sum->fp8 = sw->hw.fp8;
    if (!approf_zero3_schedule_name(cfg->zero3_schedule)) {
        snprintf(err, errlen, "--zero3-schedule: unknown schedule %d", cfg->zero3_schedule);
        return APPROF_EINVAL;
    }
    sw->hw.zero3_schedule = cfg->zero3_schedule;
    sum->zero3_schedule = cfg->zero3_schedule;
    /* the framework's communication timing the spec assumes: a plan for
     * another framework needs a spec file that says so */
    snprintf(sum->comm_timing, sizeof sum->comm_timing,
             "gradient sync %s (grad_overlap %g), tensor-parallel collectives %s "
             "(tp_comm_overlap %g)%s, gradients reduced in %s and accumulated %s",
             sw->hw.grad_overlap > 0 ? "under the backward" : "after the backward",
             sw->hw.grad_overlap, sw->hw.tp_comm_overlap > 0 ? "under the GEMMs" : "after the kernels",
             sw->hw.tp_comm_overlap,
             sw->hw.tp_async_grad > 0 ? " except a linear layer's backward ones, issued "
                                        "asynchronously under its own GEMMs (tp_async_grad set)"
                                      : "",
             sw->hw.grad_reduce_bytes == 4   ? "f32 (grad_reduce_bytes 4)"
             : sw->hw.grad_reduce_bytes == 2 ? "16 bits (grad_reduce_bytes 2)"
             : sw->hw.grad_reduce_bytes > 0  ? "another width (grad_reduce_bytes set)"
                                             : "the model's dtype",
             sw->hw.grad_accum_fusion ? "inside the weight-gradient GEMMs (grad_accum_fusion 1)"
                                      : "by add kernels (grad_accum_fusion 0)");
    if ((cfg->variants.zero_mask & 8u) && cfg->zero3_schedule &&
        strlen(sum->comm_timing) < sizeof sum->comm_timing) {
        /* ZeRO-3 overlapped as a framework schedules it (docs/variants.md) */
        size_t used = strlen(sum->comm_timing);
        snprintf(sum->comm_timing + used, sizeof sum->comm_timing - used,
                 "; ZeRO-3's gathers and reduce-scatters overlap compute as %s schedules them "
                 "(--zero3-schedule %s)",
                 cfg->zero3_schedule == APPROF_ZERO3_FSDP2
                     ? "PyTorch FSDP2 (fully_shard per checkpoint block, one block ahead)"
                     : "DeepSpeed stage 3 (overlap_comm, prefetch and reduce buckets)",
                 approf_zero3_schedule_name(cfg->zero3_schedule));
        used = strlen(sum->comm_timing);
        if (sw->hw.zero3_rank_copies && used < sizeof sum->comm_timing)
            snprintf(sum->comm_timing + used, sizeof sum->comm_timing - used,
                     ", each with a copy per rank (zero3_rank_copies 1: torch.distributed's "
                     "list form)");
    } else if ((cfg->variants.zero_mask & 8u) && strlen(sum->comm_timing) < sizeof sum->comm_timing) {
        /* ZeRO-3's gathers follow DeepSpeed's stage 3 (docs/variants.md) */
        size_t used = strlen(sum->comm_timing);
        snprintf(sum->comm_timing + used, sizeof sum->comm_timing - used,
                 "; ZeRO-3 gathers module by module, again for the backward under full "
                 "recomputation where the block's later modules hold %lld elements or more "
                 "(DeepSpeed's stage3_max_reuse_distance)",
                 (long long)COSTDB_ZERO3_MAX_REUSE_DISTANCE);
    }
    if (sw->hw.zero3_rank_copies && (cfg->variants.zero_mask & 8u) && !cfg->zero3_schedule)
        approf_sweep_notice(cb, "warning: the spec's zero3_rank_copies prices the ZeRO-3 "
                                "collectives an overlapping --zero3-schedule marks; the "
                                "serial schedule prices them without the copies");
    eff.dtype = graph_dtype(cfg, &sw->hw);
    sum->dtype_mixed_default = eff.dtype != cfg->dtype && eff.dtype != APPROF_F32;
    rc = build_graph(&eff, global_batch, &sw->graph, err, errlen);
    if (rc < 0)
        return rc;
    /* an ONNX model's external data files (only shapes are read): said as
     * the model is read, before any tuple runs */
    if (cfg->model_file && approf_onnx_notice()[0])
        approf_sweep_notice(cb, "warning: %s", approf_onnx_notice());
    snprintf(sum->dtype, sizeof sum->dtype, "%s", approf_dtype_name(sw->graph->dtype));
    if (cfg->fp8 && sw->graph->dtype == APPROF_F32) {
        snprintf(err, errlen, "--fp8: the model computes in f32; FP8 training is a 16-bit "
                 "(mixed-precision) model's linear layers in FP8 (--dtype bf16)");
        return APPROF_EINVAL;
    }
    if (cfg->layers > 0)
        rc = approf_layers_auto(sw->graph, cfg->layers, cfg->eps, &sw->layering);
    else
        rc = approf_layers_manual(sw->graph, &sw->layering);
    if (rc < 0 && cfg->layers > 1 && cfg->layers_default) {
        /* the default count is more than this model splits into: the most
         * layers that satisfy the construction, said */
        int L = (size_t)cfg->layers - 1 < sw->graph->n_ops ? cfg->layers - 1
                                                           : (int)sw->graph->n_ops;
        for (; L >= 1; L--) {
            approf_layering_free(&sw->layering);
            if ((rc = approf_layers_auto(sw->graph, L, cfg->eps, &sw->layering)) == 0)
                break;
            if (rc == APPROF_ENOMEM)
                break;
        }
        if (rc == 0)
            approf_sweep_notice(cb, "%s: its %zu operators do not split into the default %d layers "
                                "(Alpa's layer construction, eps %g): %d layers, the most that do "
                                "(--layers L to choose)", sw->graph->name, sw->graph->n_ops,
                                cfg->layers, cfg->eps, L);
    }
    if (rc < 0) {
        if (cfg->layers > 0)
            snprintf(err, errlen,
                     "%s: no split of its %zu operators into %d layers satisfies Alpa's layer "
                     "construction with eps %g (%s); try fewer --layers or a larger --eps",
                     sw->graph->name, sw->graph->n_ops, cfg->layers, cfg->eps,
                     approf_strerror(rc));
        else
            snprintf(err, errlen, "%s: manual layers from boundary markers failed: %s",
                     sw->graph->name, approf_strerror(rc));
        return rc;
    }
    sw->shape_texts = malloc((sw->graph->n_tensors ? sw->graph->n_tensors : 1) *
                             sizeof *sw->shape_texts);
    if (!sw->shape_texts)
        return APPROF_ENOMEM;
    for (size_t t = 0; t < sw->graph->n_tensors; t++)
        shape_text(&sw->graph->tensors[t], sw->shape_texts[t], sizeof sw->shape_texts[t]);
    sum->t_build = costdb_monotonic_seconds() - t_start;
    rc = approf_sweep_open_backend(sw, cfg, cb, err, errlen);
    if (rc < 0)
        return rc;
    if (cfg->zero3_schedule && strcmp(sw->backend.name, "model")) {
        snprintf(err, errlen, "--zero3-schedule: priced by the analytic model only (--backend "
                 "model); the %s backend adds every collective to its kernels", sw->backend.name);
        return APPROF_EINVAL;
    }
    if (cfg->fp8 && strcmp(sw->backend.name, "model")) {
        snprintf(err, errlen, "--fp8: priced by the analytic model only (--backend model); "
                 "the %s backend times no FP8 programs yet", sw->backend.name);
        return APPROF_EINVAL;
    }
    resolve_cluster(sw, cfg, cb);
    snprintf(sum->backend, sizeof sum->backend, "%s", sw->backend.name);
    snprintf(sum->hardware, sizeof sum->hardware, "%s", sw->hw.name);
    if (sw->n_devices > 0 && sw->have_gpu_info) {
        size_t off = (size_t)snprintf(sum->devices, sizeof sum->devices, "%.80s, device%s",
                                      sw->gpu_info.gpu_model, sw->n_devices == 1 ? "" : "s");
        for (int i = 0; i < sw->n_devices && off < sizeof sum->devices; i++)
            off += (size_t)snprintf(sum->devices + off, sizeof sum->devices - off, "%s%d",
                                    i ? "," : " ", sw->devices[i]);
    }
    t0 = costdb_monotonic_seconds();
    rc = enumerate(sw, cfg, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = approf_sweep_skip_unfit(sw, cfg, &sum->unfit)) < 0 ||
        (rc = approf_sweep_shape_ends(sw)) < 0) {
        snprintf(err, errlen, "enumeration: %s", approf_strerror(rc));
        return rc;
    }
    if (sw->n_tuples > APPROF_SWEEP_WARN_TUPLES)
        approf_sweep_notice(cb, "a large sweep: %zu tuples (%d layers on %d submeshes), more than "
                            "%d; --shard K/N spreads them over processes (approf merge), fewer "
                            "--layers or a smaller --cluster shrinks them%s", sw->n_tuples,
                            sw->layering.n_layers, sw->n_submeshes, APPROF_SWEEP_WARN_TUPLES,
                            sw->n_tuples > APPROF_SWEEP_MAX_TUPLES ? " (--allow-large given)" : "");
    sum->t_enumerate = costdb_monotonic_seconds() - t0;
    rc = approf_shard_context_new(sw->graph, &sw->layering, &sw->hw, cfg->micro_batches,
                                  &sw->shard);
    if (rc < 0)
        snprintf(err, errlen, "sharding context: %s", approf_strerror(rc));
    return rc;
}

/* A hash of the work this rank derived, compared across ranks. */
uint64_t approf_sweep_work_hash(const Sweep *sw, const ApprofSweepConfig *cfg)
{
    char text[256];
    uint64_t h;
    const unsigned char *p = (const unsigned char *)sw->tuples;
    approf_graph_hash(sw->graph, text, sizeof text);
    h = fnv1a(text);
    snprintf(text, sizeof text, "|%d|%zu|%s|%s|%d/%d|%d|%d|%.17g", sw->layering.n_layers,
             sw->n_tuples, sw->backend.name, sw->hw.name, cfg->shard_k, cfg->shard_n,
             cfg->sharding_method == APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cfg->individual,
             cfg->imbalance_tol);
    h ^= fnv1a(text);
    return costdb_fnv1a(h, p, sw->n_tuples * sizeof *sw->tuples);
}

