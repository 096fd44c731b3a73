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

#include "fp8_recipe.h" /* costdb/: the FP8 recipes */
#include "graph.h"
#include "stage.h"

struct CostdbHardware;
struct CostdbCommPoint;
struct CostdbGemmPoint;

/* Measured communication curves (hw/comm_curves.c), opaque. */
typedef struct ApprofCommCurves ApprofCommCurves;
/* Measured GEMM rates per shape (hw/gemm_table.c), opaque. */
typedef struct ApprofGemmTable ApprofGemmTable;

/* What a kernel's arithmetic runs on: CUDA cores in FP32, TF32 tensor
 * cores (f32 with allow_tf32 on a card that has them), FP16/BF16 tensor
 * cores, FP8 tensor cores. */
typedef enum {
    APPROF_MATH_FP32 = 0,
    APPROF_MATH_TF32,
    APPROF_MATH_F16,
    APPROF_MATH_FP8,
    APPROF_MATH_COUNT
} ApprofMathClass;

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
    /* Per math class (approf_math_class) and kernel class (hw/cost.c,
     * schemas/hardware-spec.md "Efficiencies by math class"). Every field
     * below reads 0 as "not given": the spec then prices as before them
     * (gemm_efficiency / conv_efficiency for every class, no TF32, no host
     * overhead, per-GPU inter-host bandwidth, nominal links, no overlap),
     * but for gemm_store_overlap, whose 0 is the exposed GEMM epilogue
     * every spec pays. */
    double peak_flops_tf32;        /* FLOP/s dense on TF32 tensor cores; 0: the card has none */
    double peak_flops_fp8;         /* FLOP/s dense FP8; 0: none (approf sweep --fp8 refuses
                                    * the spec) */
    int allow_tf32;                /* f32 GEMMs and convolutions use TF32 where the card has it
                                    * (PyTorch convolutions, XLA, the CUDA backend by default) */
    double gemm_eff[4];            /* by ApprofMathClass; 0: gemm_efficiency */
    double conv_eff[4];            /* forward convolution by ApprofMathClass; 0: conv_efficiency */
    double conv_bwd_data_factor;   /* backward-data efficiency / forward; 0: 1 */
    double conv_bwd_filter_factor; /* backward-filter efficiency / forward; 0: 1 */
    double host_overhead;          /* seconds the framework needs on the host per kernel:
                                    * a kernel takes at least this (the host runs ahead) */
    int nics_per_host;             /* network adapters per host; 0: inter_host_bandwidth as given */
    double nic_bandwidth;          /* bytes/s one direction per adapter */
    double bus_efficiency;         /* achievable / nominal bus bandwidth of collectives; 0: 1 */
    double grad_overlap;           /* share of one micro-batch's backward (forward for the
                                    * ZeRO all-gather) that hides the apply-grad collectives */
    double grad_bucket_bytes;      /* gradient bucket: the last one is never hidden; 0: none */
    double tp_comm_overlap;        /* share of a micro-batch's collectives hidden under the
                                    * same phase's GEMMs (Megatron-Core --tp-comm-overlap);
                                    * 0: serial */
    double tp_async_grad;          /* share of a linear layer's backward collectives (its
                                    * input gradient's reduction, the input's re-gather) run
                                    * asynchronously under its backward GEMMs (Megatron-LM
                                    * 2022's async tensor-parallel all-reduce; hw/cost.c,
                                    * sharding/program.c); 0: serial */
    double gemm_store_overlap;     /* share of a GEMM's epilogue store (C) hidden under the
                                    * math of other tiles; 0: exposed, after the main loop
                                    * (hw/cost.c, "GEMM epilogue") */
    double attention_efficiency;   /* a fused attention's GEMMs (flash / cuDNN attention):
                                    * share of the math class's peak; 0: the class's GEMM
                                    * efficiency (schemas/hardware-spec.md "Fused attention") */
    double gemm_unaligned_factor;  /* a tensor-core GEMM with a dimension that is not a
                                    * multiple of 16 bytes runs at this share of its
                                    * efficiency; 0: no penalty (hw/cost.c) */
    int loss_f32;                  /* 1: the framework computes a cross-entropy over 16-bit
                                    * logits on an f32 copy (Megatron-LM); 0: as one
                                    * kernel in the model's dtype (hw/cost.c) */
    int loss_metric_passes;        /* no-grad cross-entropies over the logits after each
                                    * micro-batch's backward (Composer's train metrics:
                                    * 2 for llm-foundry's MPT); 0: none (hw/loss_metric.c) */
    int metric_sync_states;        /* scalar metric states synchronized across the stage's
                                    * devices once a step (torchmetrics' compute under
                                    * Composer: 4 for llm-foundry's MPT); 0: none
                                    * (hw/metric_sync.c) */
    int grad_presync_passes;       /* passes over the local gradient buffer, at its reduce
                                    * width, on the compute stream before the
                                    * data-parallel reduction (Megatron-Core r0.8's NaN
                                    * norm and 1/dp scaling: 3); 0: none
                                    * (hw/grad_presync.c) */
    double param_step_kernels;     /* kernels the optimizer step and zero_grad launch a
                                    * parameter tensor, on average, outside fused kernels
                                    * (torch.optim.SGD's loop, then zero_grad: 707 / 161 for
                                    * DeepLearningExamples' ResNet-50); 0: fused
                                    * (hw/param_loop.c) */
    int ddp_grad_copies;           /* copies PyTorch DDP makes a parameter tensor between
                                    * its gradient and its bucket on a data-parallel stage
                                    * (2 without gradient_as_bucket_view); 0: none
                                    * (hw/param_loop.c) */
    int grad_accum_fusion;         /* 1: each micro-batch's weight gradients are added into
                                    * the accumulation buffer inside the weight-gradient
                                    * GEMM (Megatron's gradient_accumulation_fusion); 0: by
                                    * an add kernel per parameter (PyTorch's autograd,
                                    * DDP; sharding/program.c) */
    double grad_reduce_bytes;      /* bytes per gradient element the apply-grad all-reduce /
                                    * reduce-scatter moves (4: reduced in f32, as Megatron
                                    * does for bf16); 0: the model dtype's */
    double optimizer_main_param_bytes; /* Adam's state widths, bytes a parameter (0: f32,
                                        * 4): the main copy (equal to the model's width:
                                        * the weight is its own main copy, no separate
                                        * one), */
    double optimizer_exp_avg_bytes;    /* the first moment, */
    double optimizer_exp_avg_sq_bytes; /* the second (costdb_adam_state_bytes;
                                        * docs/megatron-memory.md) */
    double optimizer_step_bytes;       /* bytes an element the optimizer step moves
                                        * when it is not fused Adam (Composer's
                                        * per-parameter DecoupledAdamW: 80); 0: fused
                                        * Adam's count (costdb_adam_bytes) */
    int fp8_param_gather;          /* 1: under --fp8, the FP8 linear layers' weights are
                                    * kept in FP8 (Megatron --fp8-param-gather, NeMo
                                    * fp8_params): no 16-bit copy, and ZeRO-1/2's parameter
                                    * all-gather moves them in one byte (program_fp8.c) */
    double reduction_efficiency;   /* reduction kernels (norms, softmax, pooling, losses,
                                    * bias gradients): share of the memory bandwidth;
                                    * 0: memory_efficiency */
    double peak_flops_fp4;         /* FLOP/s dense FP4 (Blackwell's NVFP4/MXFP4); 0: none.
                                    * Carried and shown, no training mode prices with it */
    int scaleup_gpus;              /* GPUs of one NVLink scale-up domain when it spans
                                    * several hosts (GB200 NVL72: 72, hosts of 4); a
                                    * multiple of gpus_per_host. Inside it collectives
                                    * run on the intra-host link figures (NVLink), across
                                    * domains on the network (costdb/collective.c,
                                    * docs/hardware.md); 0: the host is the domain */
    /* Measured collective curves to use instead of the alpha-beta model
     * where they cover a collective (borrowed, NULL: none). Not part of the
     * spec's fingerprint: the sweep records them in its options. */
    const ApprofCommCurves *curves;
    /* Measured GEMM rates per shape (`approf probe`'s grid, table
     * gemm_profile) to price GEMMs with instead of the roofline, in the
     * dtypes it holds (borrowed, NULL: none; hw/cost.c, "Measured GEMM
     * rates"). Not part of the fingerprint: the sweep records its hash in
     * its options. */
    const ApprofGemmTable *gemm_table;
    /* The training's precision, not the card's: 0 for 16 bits, else the
     * CostdbFp8RecipeId the linear layers' GEMMs run in FP8 with, as
     * Transformer Engine runs it (approf sweep --fp8 --fp8-recipe;
     * costdb/fp8_recipe.c, sharding/program_fp8.c, docs/fp8.md). Not part of
     * the fingerprint: the sweep records it in its options. */
    int fp8;
    /* How the training framework schedules ZeRO-3's parameter all-gathers
     * and gradient reduce-scatters against compute (approf sweep
     * --zero3-schedule; an ApprofZero3Schedule; hw/zero3_overlap.c,
     * docs/variants.md "ZeRO-3 overlap"). Not part of the fingerprint: the
     * sweep records it in its options. */
    int zero3_schedule;
    /* 1: ZeRO-3's all-gathers and reduce-scatters go through the list form
     * of torch.distributed (one tensor per rank), as DeepSpeed's stage 3
     * called them up to v0.5.0 (partition_parameters.py _allgather_param,
     * _reduce_scatter_gradient): PyTorch's NCCL process group then copies
     * each rank's chunk out of (reduce-scatter: into) one flat buffer with
     * a copy of its own on the NCCL stream, group_size copies per
     * collective (hw/cost.c, docs/nccl-tuning.md "What grows with the
     * rank count"). A gather also fills its buffer once first
     * (_allgather_param's torch.zeros, hw/cost.c). Priced on the
     * collectives an overlapping zero3_schedule marks; 0: one flat buffer
     * (FSDP, DeepSpeed since all_gather_into_tensor). */
    int zero3_rank_copies;
    /* 1: every ZeRO-3 fetch drains the device, as DeepSpeed's stage-3
     * coordinator did from v0.3.13 to v0.5.10: fetch_sub_module waits for
     * the module's gathers with _synchronize_communication, which ends in
     * torch.cuda.synchronize() (deepspeed/runtime/zero/stage3.py at
     * v0.3.13, lines 402-406 and 483-491), so a module that gathers
     * parameters starts only when every collective issued before it (the
     * reduce-scatters of the backward included) and the compute before it
     * are done (hw/zero3_overlap.c). Priced under an overlapping
     * zero3_schedule; 0: the collectives queue freely (FSDP; DeepSpeed's
     * stage3.py at v0.6.0 no longer synchronizes in fetch_sub_module, but
     * its _allgather_param still does: later versions not read). */
    int zero3_fetch_sync;
    /* 1: Megatron-Core's MoE token dispatcher drops and pads every expert's
     * input to its capacity (--moe-expert-capacity-factor with
     * --moe-pad-expert-input-to-capacity; NeMo's MegatronTokenDropCallback):
     * fixed counts, no token counts gathered, none synced, no FP8 padding
     * (apsolve's ep stage, solver/expert_parallel.c). 0: dropless where the
     * graph's capacity is the balanced one */
    int moe_drop_pad;
    /* 1: ZeRO-3's gradients are all-reduced, bucket by bucket, instead of
     * reduce-scattered, as DeepSpeed's stage 3 did with contiguous_gradients
     * off, its stage-3 default from v0.3.13 to v0.4.2
     * (deepspeed/runtime/zero/constants.py at v0.3.13, line 59,
     * ZERO3_OPTIMIZATION_CONTIGUOUS_GRADIENTS_DEFAULT = False; True from
     * microsoft/DeepSpeed#1199, c9fee82, July 2021, first in v0.4.3):
     * reduce_ipg_grads then takes buffered_reduce_fallback, which flattens
     * the bucket of reduce_bucket_size elements and all-reduces it
     * (allreduce_bucket -> dist.all_reduce, stage3.py at v0.3.13 lines
     * 1700-1710 and 1794-1812); each rank keeps its own slice afterwards
     * (partition_previous_reduced_grads). Every rank thus receives the
     * whole reduced bucket, not its 1/n; the bucket is flattened,
     * divided by the world size and copied back around the all-reduce
     * (three passes, hw/cost.c). Priced on ZeRO-3's gradient
     * collectives (sharding/program_zero.c); 0: reduce-scattered
     * (DeepSpeed with contiguous_gradients, FSDP). */
    int zero3_grad_all_reduce;
    /* The framework's own copies around ZeRO-3's collectives, on the
     * compute stream (hw/zero3_overlap.c; priced under an overlapping
     * zero3_schedule; docs/variants.md "ZeRO-3 overlap"). 1: each
     * all-gather's output is copied once, read and written, before its
     * unit computes, as FSDP2's wait_for_unshard copies it out into each
     * parameter (foreach_all_gather_copy_out, pytorch
     * torch/distributed/_composable/fsdp/_fsdp_collectives.py, 2024); 0: the
     * unit computes on the gathered buffer (FSDP1's views of its flat
     * parameter, DeepSpeed). */
    int zero3_gather_copy;
    /* How a unit's gradient reaches its reduce-scatter. 1: copied once on
     * the compute stream into the reduce-scatter's input, written in the
     * reduce dtype (FSDP2's foreach_reduce_scatter_copy_in, a chunk_cat
     * into a reduce_dtype buffer); 2: copied once on the compute stream in
     * the parameters' dtype (FSDP1: the backward of the flat parameter's
     * split views writes one flat gradient: torch 2.1 fsdp/flat_param.py
     * _use_unsharded_flat_param), then cast to the reduce dtype on the
     * reduce-scatter's stream before it when the two differ (FSDP1's
     * _post_backward_hook, fsdp/_runtime_utils.py); 0: no copy (DeepSpeed's buckets, or as
     * before). The bytes read are the unit's gathered bytes in the phase
     * (its reduce-scatter's when it gathers none). */
    int zero3_grad_copy;
    /* 1: a context-parallel stage's ring is PyTorch's
     * (torch.distributed.tensor.experimental._attention, as torchtitan runs
     * it, with its model's K and V repeated to the query heads before the
     * SDPA): the ring moves K and V at the query heads' width, its gradient
     * ring in f32, and each step's output and gradients are merged in f32
     * (solver/cp_torch_ring.c, docs/context-parallel.md "PyTorch's ring");
     * 0: Transformer Engine's. Read by apsolve's cp pricing only. */
    int cp_ring_torch;
    /* Share of a GEMM's rate lost while an NCCL collective runs beside it on
     * another stream of the same GPU (1 - rate beside / rate alone, as
     * `approf probe` measures it on >= 2 GPUs: profiler/cuda/probe_overlap.c,
     * docs/hardware.md "overlap_gemm_slowdown"). approf_overlap_hidden prices
     * every overlapped window with it: a collective of c seconds hides at
     * most (1 - s) c of compute. 0: not measured; then the SM share of
     * nccl_channels prices it (approf_overlap_slowdown). Only a measured
     * figure goes here. */
    double overlap_gemm_slowdown;
    /* 1: the host's GPUs are a switchless full mesh, one link from each GPU
     * to each other (AMD MI300X: 7 Infinity Fabric links), and
     * intra_host_bandwidth is the sum of a GPU's gpus_per_host - 1 links: a
     * group of g GPUs of one host reaches the others over g - 1 of them, a
     * pair over one (costdb_intra_bandwidth, docs/hardware.md). 0: a switch
     * (NVSwitch) gives every group the whole intra_host_bandwidth. */
    int intra_host_full_mesh;
    /* Streaming multiprocessors of the device (cudaDeviceProp
     * multiProcessorCount); 0: not given. Read only where a userbuffers
     * margin is priced (tp_comm_overlap_sms). */
    int sm_count;
    /* Transformer Engine's userbuffers overlap (Megatron-Core
     * --tp-comm-overlap; hw/cost.c, docs/hardware.md "Transformer Engine's
     * userbuffers"): the SMs a pipelined or bulk collective holds beside
     * its GEMM (initialize_ub's num_sm, 16 by default), which runs at
     * (sm_count - these) / sm_count of its rate while they overlap; 0: not
     * priced (a measured overlap_gemm_slowdown prices them). Fewer than
     * sm_count. */
    int tp_comm_overlap_sms;
    /* The pipelined reduce-scatter's chunks (initialize_ub's num_splits, 4
     * by default): its last chunk is reduced after the last GEMM chunk,
     * never hidden; 0: not priced (the whole reduce-scatter may hide). */
    int tp_comm_overlap_splits;
    /* CTAs of one NCCL collective kernel: NCCL launches one block per
     * channel (enqueue.cc, grid = channelCount), and the ring search gives
     * a communicator of the card's NVLink domain this many channels
     * (docs/hardware.md "NCCL's channels: the SMs a collective takes").
     * A Hopper/Ampere GEMM CTA cannot share an SM with one, so a GEMM beside
     * a collective runs on sm_count - these SMs: where no measured
     * overlap_gemm_slowdown is given, s = nccl_channels / sm_count
     * (approf_overlap_slowdown). 0: not given (no slowdown). Fewer than
     * sm_count. */
    int nccl_channels;
    /* Bytes/s one direction between one GPU and host memory: its PCIe
     * link, or NVLink-C2C on Grace Hopper/Blackwell (docs/hardware.md,
     * "Host link"). Prices activation offload's copies (apsolve's
     * offload=N, solver/activation_offload.c); 0: not given. */
    double host_link_bandwidth;
    /* 1: the card runs AMD's ROCm stack, so Transformer Engine's ROCm build
     * decides which FP8 recipes run (approf_fp8_recipe_refusal,
     * hw/fp8_card.c; docs/fp8.md); prices nothing. 0: NVIDIA's CUDA. */
    int rocm;
    /* A fused attention's efficiency by its key length (hw/attention_rate.c,
     * schemas/hardware-spec.md "Fused attention by key length"): entry i at
     * APPROF_ATTN_SEQ_MIN << i keys (2048, 4096, 8192, 16384, 32768), forward
     * and backward together, interpolated in log2 of the key length between
     * the entries given and clamped at the ends; all 0: attention_efficiency
     * for every length. */
    double attention_eff_seq[5];
} ApprofHardwareSpec;

#define APPROF_ATTN_SEQ_POINTS 5
#define APPROF_ATTN_SEQ_MIN 2048

/* ZeRO-3 schedules (ApprofHardwareSpec.zero3_schedule). SERIAL: every
 * gather and reduce-scatter adds to the phase (the model before
 * 2026-11-28); FSDP2: PyTorch's fully_shard, one all-gather and one
 * reduce-scatter per checkpoint block, the next block's all-gather under
 * the current block's compute both ways, each block's reduce-scatter under
 * the next one's backward; DEEPSPEED: DeepSpeed stage 3 (v0.16.4 defaults:
 * overlap_comm, stage3_prefetch_bucket_size 5e7 elements, reduce_bucket_size
 * 5e8 elements), module by module. */
typedef enum {
    APPROF_ZERO3_SERIAL = 0,
    APPROF_ZERO3_FSDP2 = 1,
    APPROF_ZERO3_DEEPSPEED = 2
} ApprofZero3Schedule;
/* "serial", "fsdp2", "deepspeed"; NULL for another value. */
const char *approf_zero3_schedule_name(int schedule);
/* The schedule named s; -1 when unknown. */
int approf_zero3_schedule_parse(const char *s);

/* NULL when hw can run recipe, else why not (for messages). */
const char *approf_fp8_recipe_refusal(const ApprofHardwareSpec *hw, int recipe);
/* The quantized copies hw keeps of a tensor the recipe quantizes for both
 * its row-wise and column-wise use: 2, or 1 for a per-tensor recipe on a
 * card with non-TN FP8 GEMMs (Blackwell; hw/fp8_card.c). */
int approf_fp8_copies(const ApprofHardwareSpec *hw, int recipe);
/* An operand of an FP8 GEMM: an input or output gradient (1D block
 * scales), a weight Transformer Engine quantizes into its cached
 * workspace, an FP8 primary weight (the spec's fp8_param_gather). */
typedef enum {
    APPROF_FP8_OPERAND_ACT = 0,
    APPROF_FP8_OPERAND_WEIGHT = 1,
    APPROF_FP8_OPERAND_PRIMARY_WEIGHT = 2
} ApprofFp8Operand;
/* Bytes an element of the operand (an ApprofFp8Operand) that the kernel
 * TE runs on its scales before each FP8 GEMM under recipe on hw reads and
 * writes: blockwise on Blackwell converts its FP32 block scales to MXFP8's
 * swizzled E8M0 ones, MXFP8 swizzles an FP8 primary weight's scales; 0
 * when there is no such kernel (hw/fp8_card.c). */
double approf_fp8_gemm_scale_bytes(const ApprofHardwareSpec *hw, int recipe, int operand);

/* Built-in spec by name; APPROF_EINVAL when unknown. */
int approf_hardware_builtin(const char *name, ApprofHardwareSpec *out);
/* The built-in table. */
const ApprofHardwareSpec *approf_hardware_builtins(size_t *n);
/* Loads a user spec file (schemas/hardware-spec.md); errors name file:line
 * and the field in err. */
int approf_hardware_load(const char *path, ApprofHardwareSpec *out, char *err, size_t errlen);
/* The built-in spec for a GPU as CUDA names it ("NVIDIA H100 80GB HBM3"),
 * device_memory in bytes telling 40/80 GB and 16/32 GB parts apart when the
 * name does not; NULL when none fits. */
const char *approf_hardware_match_gpu(const char *gpu_name, int64_t device_memory);
/* A name of a built-in, or a path to a spec file. */
int approf_hardware_resolve(const char *name_or_path, ApprofHardwareSpec *out, char *err,
                            size_t errlen);
/* Fills a costdb hardware row (kind 'analytic', fingerprint from the spec). */
void approf_hardware_to_costdb(const ApprofHardwareSpec *hw, struct CostdbHardware *out);

/* The optimizer-state widths of hw (NULL: all f32) as costdb's rule
 * (costdb_adam_state_bytes, costdb_adam_bytes) takes them. */
struct CostdbAdamWidths;
void approf_hardware_adam_widths(const ApprofHardwareSpec *hw, struct CostdbAdamWidths *out);

/* Writes hw in the user spec file format (key = value lines in the units of
 * schemas/hardware-spec.md, every field); loading the output gives a spec
 * with the same fingerprint. 0 or APPROF_EIO. */
int approf_hardware_write_spec(const ApprofHardwareSpec *hw, FILE *f);
/* "analytic:<name>:<12 hex digits>": the hash covers every numeric field (as
 * written by approf_hardware_write_spec), so a changed spec changes it. */
void approf_hardware_fingerprint(const ApprofHardwareSpec *hw, char *out, size_t len);

/* Time of one collective as every backend and the sharding solver price
 * it: from hw->curves when they hold a curve for the kind and the group's
 * shape c->hosts x (c->group_size / c->hosts), else the ring (alpha-beta)
 * model below. */
double approf_collective_cost(const ApprofHardwareSpec *hw, const ApprofCollective *c);
/* Ring collective time (docs/alpa-semantics.md) of kind over group_size devices on the
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
/* Roofline time of one kernel with the spec's efficiency factors: GEMM
 * and convolutions max(flops/(peak*eff), bytes/(mem_bw*mem_eff)) with the
 * peak and efficiency of approf_kernel_rate (math class, kernel class)
 * (a GEMM's epilogue store of C after its main loop: hw/cost.c),
 * memory-bound kinds (elementwise, reduction, gather, copy)
 * bytes/(mem_bw*mem_eff) only; plus kernel_launch_overhead; at least the
 * spec's host_overhead. A GEMM (not a fused attention's) whose dtype
 * hw->gemm_table holds a complete grid for instead takes
 * max(flops / rate, bytes/(mem_bw*mem_eff) + kernel_launch_overhead) with
 * rate approf_gemm_table_rate of (batch * m, n, k) (times
 * gemm_unaligned_factor where that applies): the measured time already
 * holds the epilogue and the launch gap. */
double approf_kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k);
/* The seconds loss_metric_passes no-grad f32 cross-entropies over the
 * logits of k, the backward kernel of a cross-entropy (k->loss 2), take;
 * 0 for any other kernel or without the field. approf_kernel_seconds adds
 * it to that kernel. hw/loss_metric.c. */
double approf_loss_metric_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k);
/* The seconds, once a step, of synchronizing metric_sync_states scalar
 * metric states across p's devices as torchmetrics' gather_all_tensors
 * does (a barrier, a fill a rank, a list all-gather, a copy a rank, the
 * stack and the sum); 0 without the field or on one device.
 * approf_stage_apply_seconds_of adds it. hw/metric_sync.c. */
struct ApprofStageProgram;
double approf_metric_sync_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p);
/* The seconds, once a step, of grad_presync_passes streaming passes over
 * the gradients p reduces over its data-parallel group (at their reduce
 * width) on the compute stream; 0 without the field or without that
 * reduction. approf_stage_apply_seconds_of adds it. hw/grad_presync.c. */
double approf_grad_presync_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p);
/* The seconds, once a step, of the per-parameter kernels an eager
 * PyTorch step launches beyond the optimizer's bytes: param_step_kernels
 * launches a parameter tensor, and on a data-parallel stage
 * ddp_grad_copies copies of each gradient to and from its bucket; 0
 * without the fields. approf_stage_apply_seconds_of adds it.
 * hw/param_loop.c. */
double approf_param_loop_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p);

/* One streaming kernel of `bytes` at `rate` bytes/s (hw/cost.c): the
 * bytes over the rate plus the launch overhead, at least the host
 * overhead. The loss's f32 kernels and the metric passes are priced so. */
double approf_stream_kernel_seconds(const ApprofHardwareSpec *hw, double bytes, double rate);

/* The share of the math class's peak a fused attention kernel k's GEMMs
 * reach on hw: attention_eff_seq at k's key length (attn_skv) where the
 * spec gives it, else attention_efficiency; 0: neither given (the GEMM
 * efficiency applies). hw/attention_rate.c. */
double approf_attention_efficiency(const ApprofHardwareSpec *hw, const ApprofKernel *k);
/* The math class of dtype dt on hw: f32 -> TF32 when hw->allow_tf32 and
 * peak_flops_tf32 > 0, else FP32; f16/bf16 -> F16 when the card's rate for
 * the dtype exceeds its FP32 rate (tensor cores), else FP32 (the framework
 * computes them in f32: GTX 1080 Ti, bf16 on V100). */
ApprofMathClass approf_math_class(const ApprofHardwareSpec *hw, ApprofDtype dt);
/* The 16-bit type mixed-precision training uses on hw: bf16 where the card
 * runs it on tensor cores (A100, H100, ...), else f16 where it runs that on
 * tensor cores (V100: bf16 there is computed in f32), else f32 (GTX 1080 Ti:
 * no tensor cores; 16-bit compute would only be slower). */
ApprofDtype approf_mixed_precision_dtype(const ApprofHardwareSpec *hw);
/* Peak FLOP/s and efficiency (share of that peak) of a compute kernel
 * (GEMM or a convolution direction) in dtype dt; for other kinds 0 and 0. */
void approf_kernel_rate(const ApprofHardwareSpec *hw, ApprofKernelKind kind, ApprofDtype dt,
                        double *peak, double *eff);
/* Bandwidth (bytes/s, one direction per device, achievable) of the link a
 * ring over group_size devices, hosts of them on different hosts (0:
 * unknown, taken as one device per host), crosses: intra-host, or with
 * nics_per_host the host's aggregate network bandwidth times the share of
 * the host's GPUs in the group (capped by the intra-host link), else
 * inter_host_bandwidth; times bus_efficiency. */
double approf_link_bandwidth(const ApprofHardwareSpec *hw, int group_size, int hosts,
                             int crosses_hosts);
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

/* ---- measured GEMM rates per shape -------------------------------------- */

/* Builds a table from points (any order) of one hardware row, as
 * costdb_gemm_get/list return them: per dtype the grid of the distinct m,
 * n and k given. A dtype whose points do not fill that grid (a probe
 * stopped half way, a table written by hand) is kept but prices nothing.
 * *out is NULL for n == 0. 0, APPROF_EINVAL (a size < 1, a rate not finite
 * and > 0, a dtype not NUL-terminated) or APPROF_ENOMEM. */
int approf_gemm_table_new(const struct CostdbGemmPoint *pts, size_t n, ApprofGemmTable **out);
void approf_gemm_table_free(ApprofGemmTable **t);
/* Distinct shapes of dtype in t (0: none); *complete 1 when they fill the
 * grid of sizes[0] x sizes[1] x sizes[2] distinct m, n, k (either may be
 * NULL). */
size_t approf_gemm_table_count(const ApprofGemmTable *t, const char *dtype, int *complete,
                               int sizes[3]);
/* A 16-hex-digit hash of every grid (dtype, sizes, rates; bit-exact), for
 * the provenance of a sweep that used it. */
void approf_gemm_table_hash(const ApprofGemmTable *t, char *out, size_t len);
/* The table dtype that prices a GEMM of dt on hw: "bf16", "f16", and for
 * f32 "tf32" when approf_math_class says TF32, else "f32" (approf probe
 * stores its f32 grid under the one it ran on). */
const char *approf_gemm_table_dtype(const ApprofHardwareSpec *hw, ApprofDtype dt);
/* FLOP/s of an m x n x k GEMM in the grid of dtype: trilinear in log2(m),
 * log2(n), log2(k) between the grid's neighbours on each axis, each size
 * clamped to the grid's range (hw/gemm_table.c); exact at a grid point. 0
 * when t has no complete grid of dtype or a size is < 1. */
double approf_gemm_table_rate(const ApprofGemmTable *t, const char *dtype, double m, double n,
                              double k);

/* ---- measured communication curves ------------------------------------ */

/* Builds curves from points (any order) of one hardware row, as `approf
 * probe` or `approf hardware curves import` stored them: one curve per
 * (collective, group_desc "HxG"); of several dtypes for one curve, the one
 * named prefer_dtype (when given and present), else the lexically first.
 * Points whose collective or group_desc is not understood are ignored (a
 * replica-group description, for example); *out is NULL when none remain.
 * 0, APPROF_EINVAL or APPROF_ENOMEM. */
int approf_comm_curves_new(const struct CostdbCommPoint *pts, size_t n, const char *prefer_dtype,
                           ApprofCommCurves **out);
void approf_comm_curves_free(ApprofCommCurves **c);
/* Number of curves and of points they hold. */
size_t approf_comm_curves_count(const ApprofCommCurves *c, size_t *points);
/* A 16-hex-digit hash of every curve's key and points (bit-exact), for the
 * provenance of a sweep that used them. */
void approf_comm_curves_hash(const ApprofCommCurves *c, char *out, size_t len);
/* Seconds for one collective from the curve of (kind, hosts x gpus), or a
 * negative value when there is none. */
double approf_comm_curves_seconds(const ApprofCommCurves *c, ApprofCollKind kind, int hosts,
                                  int gpus, double bytes);

/* Reads one nccl-tests output (all_reduce_perf and friends, hw/nccl_tests.c)
 * into points of one curve per dtype: bytes = "size", seconds = the
 * out-of-place "time". collective / group (NULL or "" to take them from the
 * output's "Collective test starting" and "Rank ... on HOST" lines) override
 * what the output says. Errors name path:line and the field; a result line
 * with a non-zero #wrong is refused. *out malloc'd. 0, APPROF_EINVAL,
 * APPROF_EIO or APPROF_ENOMEM. */
int approf_nccl_tests_parse(FILE *f, const char *path, const char *collective,
                            const char *group, struct CostdbCommPoint **out, size_t *n,
                            char *err, size_t errlen);

/* Seconds a stage spends once per iteration after its last backward
 * (apply-grad): its apply collectives (approf_collective_cost) and the
 * optimizer step, p->optimizer_bytes at the memory bandwidth. */
struct ApprofStageProgram;
double approf_stage_apply_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p);
/* The same with the seconds of p's two phases given (phase[ph] =
 * approf_phase_seconds(hw, p, ph), computed already by a caller that
 * priced the phases; NULL: computed here), so that a sweep prices each
 * phase of a program once (docs/performance.md, "Each phase priced once"). */
double approf_stage_apply_seconds_of(const ApprofHardwareSpec *hw,
                                     const struct ApprofStageProgram *p, const double *phase);
/* Seconds of one micro-batch's phase ph (0 forward, 1 backward) of p: its
 * kernels (approf_kernel_seconds) and its collectives
 * (approf_collective_cost), summed in program order, less the part of the
 * collectives hidden under the phase's GEMMs: min(tp_comm_overlap x
 * collectives, GEMMs) (schemas/hardware-spec.md, "Communication overlap
 * inside a micro-batch"), the GEMMs slowed beside them by
 * approf_overlap_hidden_at's s: Transformer Engine's userbuffers SM share
 * where the spec gives tp_comm_overlap_sms (a pipelined reduce-scatter's
 * last chunk of tp_comm_overlap_splits not hidden), else NCCL's
 * (approf_overlap_slowdown). */
double approf_phase_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p, int ph);
/* Prices kept for one spec (hw/cost.c; docs/performance.md, "Shared kernel
 * arrays and prices kept"): approf_collective_cost is a pure function of the
 * spec and the collective's kind, bytes, group, hosts, spanned hosts and
 * ZeRO-3 mark, and a sweep's programs price the same few collectives again and
 * again; the ZeRO variants of a stage hold the same kernel arrays
 * (ApprofKernelShare), whose kernel sums are kept by the array's id. Emptied
 * when asked for another spec (or the same spec changed). */
typedef struct ApprofPriceMemo ApprofPriceMemo;
void approf_price_memo_free(ApprofPriceMemo *m);
/* approf_phase_seconds, bit for bit, its collectives' prices and its
 * shared kernel arrays' sums taken from and kept in *memo (allocated on
 * first use; without memory, or memo NULL, priced as approf_phase_seconds
 * does). */
double approf_phase_seconds_memo(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                                 int ph, ApprofPriceMemo **memo);
/* The weight-gradient seconds (the zero-bubble schedules' W pass) of a
 * backward that took bwd_seconds: bwd_seconds x the share of p's backward
 * kernels flagged wgrad (ApprofKernel.wgrad, approf_kernel_seconds) in
 * approf_phase_seconds(hw, p, 1), so that a measured backward splits as the
 * analytic one does and the analytic one gives exactly its wgrad kernels'
 * seconds. The collectives, recomputed forward and everything else stay
 * with the input gradient (B). -1 (unknown) when bwd_seconds is not a
 * finite number >= 0 or the analytic backward is 0 s. */
double approf_wgrad_seconds(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                            double bwd_seconds);
/* The same with approf_phase_seconds(hw, p, 1) given in *bwd_phase
 * (NULL: computed here). */
double approf_wgrad_seconds_of(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                               double bwd_seconds, const double *bwd_phase);
/* approf_wgrad_seconds_of, bit for bit, the wgrad kernels' sum of a shared
 * backward taken from *memo where approf_phase_seconds_memo summed that
 * array for the same spec (memo NULL or without it: summed here). */
double approf_wgrad_seconds_memo(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                                 double bwd_seconds, const double *bwd_phase,
                                 ApprofPriceMemo **memo);
/* What one pass over a phase's kernels gives besides its seconds, so that
 * a sweep prices a program's phases once and reads the apply-grad and
 * weight-gradient prices from them (docs/performance.md, "The variants'
 * pricing from one pass", issue 38): seconds, approf_phase_seconds;
 * wgrad_kernels, its kernels flagged wgrad summed in order (what
 * approf_wgrad_seconds splits by); embedding_elements, its input
 * embedding tables' gradient elements summed in order (what the apply
 * price's last bucket holds at least; read of the backward). */
/* 1 when k is an input embedding table's gradient, the scatter-add an
 * embedding's backward lowers to (model/opsem.c), with its table's local
 * rows x columns in extent x cols (model/kernel_op.c): what the apply-grad
 * price's last gradient bucket holds at least (hw/cost.c, exposed_tail).
 * The one rule for approf_stage_apply_seconds and approf_phase_price_memo. */
static inline int approf_kernel_is_embedding_grad(const ApprofKernel *k)
{
    return k->kind == APPROF_K_GATHER && k->wgrad && k->kop == APPROF_CUDA_OP_EMBEDDING &&
           k->extent > 0 && k->cols > 0;
}
typedef struct ApprofPhasePrice {
    double seconds, wgrad_kernels, embedding_elements;
} ApprofPhasePrice;
/* approf_phase_seconds_memo, with *out filled (zeroed on bad input);
 * returns out->seconds. */
double approf_phase_price_memo(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                               int ph, ApprofPriceMemo **memo, ApprofPhasePrice *out);
/* approf_wgrad_seconds_of, bit for bit, from the backward's price
 * (approf_phase_price_memo of the same program and spec, phase 1). */
double approf_wgrad_seconds_priced(double bwd_seconds, const ApprofPhasePrice *bwd);
/* approf_stage_apply_seconds, bit for bit, from the phases' prices
 * (approf_phase_price_memo of the same program and spec; NULL: priced
 * here), its collectives priced through m (approf_price_memo_ready;
 * NULL: approf_collective_cost). */
double approf_stage_apply_seconds_priced(const ApprofHardwareSpec *hw,
                                         const struct ApprofStageProgram *p,
                                         const ApprofPhasePrice *phase, ApprofPriceMemo *m);
/* *memo ready for hw (allocated, emptied for another spec); NULL without
 * memory or when memo or hw is NULL. */
ApprofPriceMemo *approf_price_memo_ready(ApprofPriceMemo **memo, const ApprofHardwareSpec *hw);
/* approf_collective_cost(hw, c), kept in m (from approf_price_memo_ready
 * for hw; NULL: not kept): the same bits. */
double approf_price_memo_collective(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                                    const struct ApprofCollective *c);
/* How many collectives m priced (approf_collective_cost) to fill its
 * table: what a test of a price kept reads. */
uint64_t approf_price_memo_collectives_priced(const ApprofPriceMemo *m);
/* How many kernels m priced (approf_kernel_seconds) in the phases it
 * priced: the kept ones once (a GEMM by its whole key, a memory-bound
 * kernel by kind and bytes), a cross-entropy's every time. */
uint64_t approf_price_memo_kernels_priced(const ApprofPriceMemo *m);
/* ZeRO-3 under an overlapping schedule (hw->zero3_schedule, the
 * collectives' zero3_unit marks; hw/zero3_overlap.c): the seconds of phase
 * ph's marked collectives that compute does not hide, from a two-stream
 * replay of the phase (one compute stream running the units' kernels, one
 * communication stream running the marked collectives in the order the
 * framework issues them), plus the framework's copies on the compute
 * stream (zero3_gather_copy, zero3_grad_copy). *marked (may be NULL) gets
 * the seconds of the marked collectives themselves. 0 when nothing is
 * marked. */
double approf_zero3_exposed(const ApprofHardwareSpec *hw, const struct ApprofStageProgram *p,
                            int ph, double *marked);
/* Seconds of an asynchronous backward collective of `seconds` that the
 * spec's tp_async_grad hides under *window (what is left of its GEMMs'
 * seconds), taken from *window: min(tp_async_grad x seconds, *window).
 * The one rule for the stage program (approf_phase_seconds) and the
 * sharding ILP. */
double approf_async_hidden(const ApprofHardwareSpec *hw, double seconds, double *window);
/* Seconds of comm seconds of collectives run beside compute that the
 * compute hides, when window seconds of compute are there to hide them:
 * min((1 - s) comm, window), s = approf_overlap_slowdown(hw). The compute
 * that runs beside a collective is slowed by s (it advances 1 - s seconds
 * of work per second), so the window ends s comm later than it would alone:
 * phase = window + comm - hidden = max(window + s comm, comm). The one rule
 * every overlap (tp_async_grad, tp_comm_overlap, grad_overlap) is priced
 * by; 0 when comm or window is not positive (or NaN) or s is 1:
 * approf_overlap_hidden_at(approf_overlap_slowdown(hw), comm, window). */
double approf_overlap_hidden(const ApprofHardwareSpec *hw, double comm, double window);
/* The share s of a GEMM's rate lost beside an NCCL collective, the one owner
 * of that figure: the spec's measured overlap_gemm_slowdown where it is
 * given (> 0), else nccl_channels / sm_count (the SMs NCCL's CTAs hold,
 * which no GEMM CTA shares) where both are given and the channels are
 * fewer than the SMs, else 0. */
double approf_overlap_slowdown(const ApprofHardwareSpec *hw);
/* The rule with the slowdown s given: where the collectives beside the
 * compute are not NCCL's (Transformer Engine's userbuffers hold a known
 * share of the SMs; approf_phase_seconds). */
double approf_overlap_hidden_at(double s, double comm, double window);
/* The same model seen from the compute: the seconds that compute seconds of
 * work starting with comm seconds of collectives beside it (from its start)
 * take beyond compute: s min(comm, compute / (1 - s)) (comm when s is 1).
 * compute + stretch is when the compute ends; max(that, comm) - hidden =
 * compute + comm - approf_overlap_hidden. Used where a replay needs the
 * compute's own end (hw/zero3_overlap.c); 0 when s is 0. */
double approf_overlap_stretch(const ApprofHardwareSpec *hw, double compute, double comm);

#endif
