/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in hardware specs and what is derived from a spec: available
 * memory, the fingerprint and the costdb hardware row. Every figure of the
 * table comes from the vendor's datasheet or whitepaper named in the entry's
 * source field; the modelling choices (per-GPU share of the host's network,
 * reserve, efficiency factors, launch overhead, link latencies) are explained
 * there and, at length, in schemas/hardware-spec.md.
 *
 * Conventions shared by all entries: GB/s = 1e9 bytes/s; bandwidths are one
 * direction per GPU (NVLink totals are quoted bidirectional, so halved); the
 * inter-host bandwidth is the host's InfiniBand/Ethernet capacity divided by
 * the GPUs sharing it; latencies are per ring step, taken from NCCL's own
 * tuning model (src/graph/tuning.cc, Ring/Simple: NVLink 3.4 us, PCIe
 * 5.7 us, network 9.6 us as in NCCL 2.8-2.11, 2.14-2.17; the rest of that model,
 * NCCL v2.21.5-1's, in costdb/nccl_model.c); the memory reserve is 1 GiB (CUDA context,
 * cuBLAS/cuDNN workspaces, NCCL buffers); the launch overhead is 4 us per
 * kernel (host-side cudaLaunchKernel cost of back-to-back kernels).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "hardware.h"
#include "fnv.h"
#include "json_write.h"

#define TFLOPS 1e12
#define GBS 1e9
#define GIB ((int64_t)1 << 30)
#define MIB ((int64_t)1 << 20)
#define US 1e-6

/* Reserve and launch overhead common to the table (see the file comment). */
#define RESERVE GIB
#define LAUNCH (4 * US)
/* NCCL tuning model, ring / Simple protocol, per step. */
#define LAT_NVLINK (3.4 * US)
#define LAT_PCIE (5.7 * US)
#define LAT_IB (9.6 * US)
/* One GPU's link to host memory, one direction (host_link_bandwidth;
 * docs/hardware.md "Host link"): the link's signalling rate, no efficiency
 * (none measured on these systems). PCI Express 3.0 and later encode
 * 128b/130b, so an x16 link moves 16 lanes x rate x 128/130 / 8 bytes each
 * way: 8 GT/s (Gen3) 15.75 GB/s, 16 GT/s (Gen4) 31.5, 32 GT/s (Gen5) 63
 * (PCI-SIG's specifications; the vendors' "32 / 64 / 128 GB/s" are both
 * directions before encoding). GB200: NVLink-C2C 900 GB/s bidirectional
 * per superchip, between its Grace CPU and both of its GPUs, so 450 each
 * way shared by 2 GPUs that offload at the same time: 225 each. */
#define PCIE3_X16 (15.75 * GBS)
#define PCIE4_X16 (31.5 * GBS)
#define PCIE5_X16 (63 * GBS)
#define C2C_GB200_PER_GPU (900 * GBS / 2 / 2)

/* Refinements shared by the table (issue 12; schemas/hardware-spec.md
 * "Efficiencies by math class", sources there and in docs/validation.md):
 * - FP32 SIMT GEMM: cuBLAS SGEMM reaches 18.9 of 19.5 TFLOP/s (97 %) on an
 *   A100 at 5120x4096x4096 (Yinghan-Li/YHs_Sample issue 4); 0.9 leaves room
 *   for the smaller GEMMs of a model.
 * - Convolutions in FP32 on CUDA cores 0.8 and in FP16 on tensor cores 0.45
 *   of peak: calibrated on the single-GPU ResNet-50 rows of
 *   DeepLearningExamples on V100 16 GB and 32 GB (docs/validation.md,
 *   calibration set; two rows each), used for every card with that math.
 * - Convolutions in TF32 0.22 of the TF32 peak: calibrated on the one
 *   single-GPU ResNet-50 TF32 row (A100); PyTorch runs them NCHW, through
 *   layout transposes.
 * - No host overhead beyond the launch: approf models Alpa, whose stages
 *   are compiled XLA executables (no per-operator Python dispatch); a spec
 *   file for PyTorch eager sets host_overhead_us (about 10).
 * - Achievable bus bandwidth 0.8 of the link's: NCCL's protocol overhead is
 *   about 20 % (NCCL maintainer, NVIDIA/nccl-tests issue 212: 370 of 450 GB/s
 *   on NVLink4).
 * - GEMM epilogue exposed on Volta and Ampere (gemm_store_overlap 0): the
 *   store of C follows the main loop (hw/cost.c, gemm_seconds).
 * - Hopper (H100 measured, H200 the same GH100 chip; docs/validation.md
 *   "Kernel-level figures on an H100"): the GEMMs and fused attention of
 *   one GPT layer's per-device program, timed kernel by kernel on an H100
 *   SXM at 9 Megatron-Core shapes (bench/gpu_kernels.py, bench/h100/):
 *   bf16 GEMMs inside the layer reach 0.82-0.88 of the dense peak with their
 *   store hidden in a short burst and 0.77 once the clocks have settled at
 *   the 700 W power limit (the largest layer after 8 s; training runs in
 *   that state), so 0.77 and gemm_store_overlap 1 (CUTLASS's ping-pong
 *   kernels overlap the epilogue); cuDNN's fused attention (the kernel
 *   Transformer Engine runs on Hopper) 0.36-0.45 forward + backward (0.38
 *   settled), so attention_efficiency 0.4; the reduction kernels (LayerNorm,
 *   RMSNorm, softmax, batch norm, pooling, bias gradients; bf16 and f32)
 *   0.47 of the HBM bandwidth in the median of 73 timings over 64 MiB or
 *   more, where copies and elementwise kernels reach 0.82-0.89, so
 *   reduction_efficiency 0.47; GEMMs with a dimension that is not a
 *   multiple of 16 bytes (vocabulary 30522 or 50257) ran at 0.13-0.41 of
 *   the rate of aligned ones, median 0.33 over 21 timings, so
 *   gemm_unaligned_factor 0.33. TF32 and FP8 keep 0.7 (not measured in a
 *   layer; the published FP8 GEMM figures for this chip, bursts of other
 *   kernel libraries at 0.30-0.78 of the FP8 peak, bracket it and set
 *   nothing: docs/validation.md, "FP8 GEMM efficiency on Hopper"; Transformer
 *   Engine's own H200 NVL table, FP8/BF16 1.90, would map to 0.73 but times
 *   fast accumulation only, where TE runs dgrad and wgrad with split
 *   accumulation: "H100 FP8 GEMM rate from a same-card FP8/BF16 kernel
 *   table"). Other
 *   cards have no kernel-level attention or reduction figure: they price
 *   fused attention at the GEMM efficiency,
 *   reductions at memory_efficiency and misaligned GEMMs like the others.
 * - Gradient synchronisation overlapped with the backward, 25 MiB buckets:
 *   PyTorch DDP (bucket_cap_mb = 25 by default) and Megatron
 *   (--overlap-grad-reduce) reduce buckets as the backward produces them.
 */
#define EFF_GEMM_FP32 0.9
#define EFF_CONV_FP32 0.8
#define EFF_CONV_F16 0.45
#define EFF_CONV_TF32 0.22
#define BUS_EFF 0.8
#define GRAD_OVERLAP 1.0
#define GRAD_BUCKET (25.0 * (double)MIB)
#define EFF_GEMM_HOPPER_F16 0.77
#define EFF_ATTENTION_HOPPER 0.4
/* Hopper's fused attention by key length (docs/validation.md, "cuDNN's
 * fused attention on Hopper by key length"): NVIDIA/cudnn-frontend
 * df73764a, benchmark/sdpa_benchmark_training/results/h200_919_only_cudnn/
 * llama3.1_20260227_034703.csv (cuDNN 9.19 on an H200: batch 1, 64 query
 * and 8 key/value heads of 128, causal BF16), forward and backward
 * together 396.7, 502.4, 566.9, 603.1, 608.0 TFLOP/s at 2k .. 32k keys;
 * its growth taken from the 0.4 measured here at 4096 keys (above). */
#define ATTN_SEQ_HOPPER {0.316, 0.4, 0.451, 0.480, 0.484}
#define EFF_REDUCTION_HOPPER 0.47
#define UNALIGNED_HOPPER 0.33
/* AMD Instinct MI300X (docs/hardware.md "MI300X efficiencies"): published
 * figures of one GPU or one host, no training run.
 * - GEMM: AMD's Max-Achievable FLOPs (ROCm blog "Measuring Max-Achievable
 *   FLOPs - Part 2", 28 Feb 2025, Table 1: hipBLASLt commit db8e93b4fd6,
 *   ROCm 6.3.0, MI300X 750 W, trig_float data, cold caches, thermally
 *   settled): BF16 708 TFLOP/s at 4096x4864x32896 = 0.54 of 1307.4 (FP16
 *   654 = 0.50; one figure serves both), FP8 1273 at 4096x3648x32896 =
 *   0.49 of 2614.9. These are the best shape; a layer's GEMMs reach less
 *   (Azure's FP8 sweep below: 0.42-0.47 at square 4096-8192).
 * - Memory: Azure/AI-benchmarking-guide Azure_Results/
 *   ND_MI300X_v5_results.md (HBM Bandwidth, the five kernels 4.0-4.28
 *   TB/s, median 4.13) = 0.78 of 5.3 TB/s.
 * - Collectives: the same file's RCCL all-reduce over the 8 GPUs of one
 *   host, 316.82 GB/s bus bandwidth at 8 GB (RCCL 2.22.3) = 0.71 of the 448
 *   GB/s of 7 links; the one bus_efficiency also scales the network. */
#define EFF_GEMM_MI300X_F16 0.54
#define EFF_GEMM_MI300X_FP8 0.49
#define EFF_MEMORY_MI300X 0.78
#define BUS_EFF_MI300X 0.71
/* gemm_tf32 also serves FP8 (approf sweep --fp8, docs/fp8.md) */
/* NCCL's channels (CTAs) for a collective over one NVLink domain, which
 * with sm_count price the GEMM beside it (hw/cost.c approf_overlap_slowdown;
 * docs/hardware.md "NCCL's channels: the SMs a collective takes"): the ring
 * graph search (NVIDIA/nccl src/graph/search.cc ncclTopoCompute at
 * v2.21.5-1, and v2.30.7-1) keeps the fastest speed of its table whose
 * channels fill the GPU's NVLink bandwidth (links x 20 GB/s on
 * Volta/Ampere, 20.6 on Hopper, 40.1 on Blackwell: src/graph/topo.h),
 * ncclTopoDupChannels doubles them at >= 25 GB/s per channel, and
 * ncclTopoPostset (src/graph/connect.cc) doubles them again. DGX-1 V100
 * (6 NVLink2, hybrid cube mesh): 6 rings of 20 GB/s, not duplicated, x 2 =
 * 12. An NVSwitch host: A100 (12 NVLink3 = 240 GB/s) 6 x 40 -> 12 -> 24;
 * H100 (18 NVLink4 = 371 GB/s) 6 x 60 -> 12 -> 24 (24 blocks is what an
 * nsys trace shows an all-gather launch on an H100: NVIDIA developer forum
 * thread 337991, 2025); B200 and GB200 (18 NVLink5 = 722 GB/s) 8 x 90 ->
 * 16 -> 32. */
#define NCCL_CHANNELS_DGX1 12
#define NCCL_CHANNELS_NVSWITCH 24
#define NCCL_CHANNELS_NVLINK5 32

#define REFINED(tf32, gemm_tf32, gemm_f16) REFINED_FP8(tf32, gemm_tf32, gemm_f16, gemm_tf32)
#define REFINED_FP8(tf32, gemm_tf32, gemm_f16, gemm_fp8)                                    \
    .allow_tf32 = 1, .peak_flops_tf32 = (tf32),                                              \
    .gemm_eff = {EFF_GEMM_FP32, (gemm_tf32), (gemm_f16), (gemm_fp8)},                        \
    .conv_eff = {EFF_CONV_FP32, EFF_CONV_TF32, EFF_CONV_F16, 0},                             \
    .bus_efficiency = BUS_EFF, .grad_overlap = GRAD_OVERLAP,                                 \
    .grad_bucket_bytes = GRAD_BUCKET

static const ApprofHardwareSpec builtins[] = {
    {
        .name = "gtx-1080ti",
        .gpu_model = "NVIDIA GeForce GTX 1080 Ti",
        .interconnect = "PCIe 3.0 x16 15.75 GB/s; 10 Gb/s Ethernet per host of 2 GPUs",
        .peak_flops = {11.34 * TFLOPS, 11.34 * TFLOPS, 11.34 * TFLOPS},
        .memory_bandwidth = 484 * GBS,
        .device_memory = 11 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 2,
        .intra_host_bandwidth = PCIE3_X16,
        .intra_host_latency = LAT_PCIE,
        .inter_host_bandwidth = 0.625 * GBS,
        .inter_host_latency = 25 * US,
        .gemm_efficiency = 0.8, .conv_efficiency = 0.6, .memory_efficiency = 0.8,
        .kernel_launch_overhead = LAUNCH,
        .bus_efficiency = BUS_EFF, .grad_overlap = GRAD_OVERLAP,
        .grad_bucket_bytes = GRAD_BUCKET, .nics_per_host = 1, .nic_bandwidth = 1.25 * GBS,
        .source = "NVIDIA GeForce GTX 1080 Ti spec page: 3584 CUDA cores at 1582 MHz boost "
                  "= 11.34 TFLOP/s FP32, 11 GB GDDR5X at 484 GB/s (nvidia-smi: 11264 MiB). "
                  "GP102 has no tensor cores and runs FP16 at 1/64 rate: f16/bf16 use the "
                  "FP32 rate (cuBLAS/XLA compute them in f32). Host of 2 GPUs as in the Alpa "
                  "seed (num_devices_per_node=2); PCIe 3.0 x16; 10 GbE per host (assumed: "
                  "the seed's NCCL used sockets on eno2), 0.625 GB/s per GPU, 25 us/step.",
    },
    {
        .name = "v100-16g",
        .gpu_model = "NVIDIA Tesla V100-SXM2-16GB",
        .interconnect = "NVLink2 300 GB/s (DGX-1); 4x100 Gb/s EDR InfiniBand per 8 GPUs",
        .peak_flops = {15.7 * TFLOPS, 125 * TFLOPS, 15.7 * TFLOPS},
        .memory_bandwidth = 900 * GBS,
        .device_memory = 16 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 150 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 6.25 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.75, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(0, 0.75, 0.75), .nics_per_host = 4, .nic_bandwidth = 12.5 * GBS,
        .sm_count = 80, /* NVIDIA Tesla V100 GPU architecture whitepaper: 80 SMs */
        .nccl_channels = NCCL_CHANNELS_DGX1, /* NCCL's rings on DGX-1's NVLink mesh */
        .host_link_bandwidth = PCIE3_X16, /* V100 SXM2 datasheet: PCIe Gen3, 32 GB/s */
        .source = "NVIDIA Tesla V100 datasheet (SXM2): 15.7 TFLOP/s FP32, 125 TFLOP/s tensor "
                  "(FP16), 16 GB HBM2 at 900 GB/s, NVLink 300 GB/s (150 each way). Volta has "
                  "no bf16: bf16 uses the FP32 rate. DGX-1 host: 8 GPUs, 4x100 Gb/s EDR "
                  "InfiniBand = 6.25 GB/s per GPU.",
    },
    {
        .name = "v100-32g",
        .gpu_model = "NVIDIA Tesla V100-SXM2-32GB",
        .interconnect = "NVLink2 300 GB/s (DGX-1); 4x100 Gb/s EDR InfiniBand per 8 GPUs",
        .peak_flops = {15.7 * TFLOPS, 125 * TFLOPS, 15.7 * TFLOPS},
        .memory_bandwidth = 900 * GBS,
        .device_memory = 32 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 150 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 6.25 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.75, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(0, 0.75, 0.75), .nics_per_host = 4, .nic_bandwidth = 12.5 * GBS,
        .sm_count = 80, /* NVIDIA Tesla V100 GPU architecture whitepaper: 80 SMs */
        .nccl_channels = NCCL_CHANNELS_DGX1, /* NCCL's rings on DGX-1's NVLink mesh */
        .host_link_bandwidth = PCIE3_X16, /* V100 SXM2 datasheet: PCIe Gen3, 32 GB/s */
        .source = "NVIDIA Tesla V100 datasheet (SXM2): 15.7 TFLOP/s FP32, 125 TFLOP/s tensor "
                  "(FP16), 32 GB HBM2 at 900 GB/s, NVLink 300 GB/s (150 each way). Volta has "
                  "no bf16: bf16 uses the FP32 rate. DGX-1 host: 8 GPUs, 4x100 Gb/s EDR "
                  "InfiniBand = 6.25 GB/s per GPU.",
    },
    {
        .name = "a100-40g",
        .gpu_model = "NVIDIA A100-SXM4-40GB",
        .interconnect = "NVLink3 600 GB/s (DGX A100); 8x200 Gb/s HDR InfiniBand",
        .peak_flops = {19.5 * TFLOPS, 312 * TFLOPS, 312 * TFLOPS},
        .memory_bandwidth = 1555 * GBS,
        .device_memory = 40 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 300 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 25 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.75, .conv_efficiency = 0.55, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(156 * TFLOPS, 0.75, 0.75), .nics_per_host = 8, .nic_bandwidth = 25 * GBS,
        .sm_count = 108, /* NVIDIA A100 Tensor Core GPU architecture whitepaper: 108 SMs */
        .nccl_channels = NCCL_CHANNELS_NVSWITCH, /* NCCL's rings over DGX A100's NVSwitch */
        .host_link_bandwidth = PCIE4_X16, /* A100 datasheet: PCIe Gen4, 64 GB/s */
        .source = "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB): 19.5 TFLOP/s FP32, "
                  "156 TF32 tensor dense, 312 TFLOP/s FP16 and BF16 tensor dense, 40 GB HBM2 "
                  "at 1555 GB/s, NVLink 600 GB/s (300 each way). DGX A100 host: 8 GPUs, one "
                  "200 Gb/s HDR InfiniBand HCA per GPU = 25 GB/s.",
    },
    {
        .name = "a100-80g",
        .gpu_model = "NVIDIA A100-SXM4-80GB",
        .interconnect = "NVLink3 600 GB/s (DGX A100); 8x200 Gb/s HDR InfiniBand",
        .peak_flops = {19.5 * TFLOPS, 312 * TFLOPS, 312 * TFLOPS},
        .memory_bandwidth = 2039 * GBS,
        .device_memory = 80 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 300 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 25 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.75, .conv_efficiency = 0.55, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(156 * TFLOPS, 0.75, 0.75), .nics_per_host = 8, .nic_bandwidth = 25 * GBS,
        .sm_count = 108, /* NVIDIA A100 Tensor Core GPU architecture whitepaper: 108 SMs */
        .nccl_channels = NCCL_CHANNELS_NVSWITCH, /* NCCL's rings over DGX A100's NVSwitch */
        .host_link_bandwidth = PCIE4_X16, /* A100 datasheet: PCIe Gen4, 64 GB/s */
        .source = "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): 19.5 TFLOP/s FP32, "
                  "156 TF32 tensor dense, 312 TFLOP/s FP16 and BF16 tensor dense, 80 GB HBM2e "
                  "at 2039 GB/s, NVLink 600 GB/s (300 each way). DGX A100 host: 8 GPUs, one "
                  "200 Gb/s HDR InfiniBand HCA per GPU = 25 GB/s.",
    },
    {
        .name = "h100-sxm",
        .gpu_model = "NVIDIA H100 80GB HBM3 (SXM5)",
        .interconnect = "NVLink4 900 GB/s (DGX H100); 8x400 Gb/s NDR InfiniBand",
        .peak_flops = {67 * TFLOPS, 989.4 * TFLOPS, 989.4 * TFLOPS},
        .memory_bandwidth = 3350 * GBS,
        .device_memory = 80 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 450 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 50 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.7, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(494.7 * TFLOPS, 0.7, EFF_GEMM_HOPPER_F16), .gemm_store_overlap = 1.0,
        .attention_efficiency = EFF_ATTENTION_HOPPER, .reduction_efficiency = EFF_REDUCTION_HOPPER,
        .attention_eff_seq = ATTN_SEQ_HOPPER,
        .gemm_unaligned_factor = UNALIGNED_HOPPER, .peak_flops_fp8 = 1978.9 * TFLOPS, .nics_per_host = 8,
        .nic_bandwidth = 50 * GBS,
        .sm_count = 132, /* NVIDIA H100 Tensor Core GPU architecture whitepaper: SXM5, 132 SMs */
        .nccl_channels = NCCL_CHANNELS_NVSWITCH, /* NCCL's rings over DGX H100's NVSwitch */
        .host_link_bandwidth = PCIE5_X16, /* H100 datasheet (SXM): PCIe Gen5, 128 GB/s */
        .source = "NVIDIA H100 datasheet and Hopper whitepaper (SXM5): 67 TFLOP/s FP32, 494.7 TF32 "
                  "and 1978.9 FP8 tensor dense, 989.4 TFLOP/s FP16 and BF16 tensor dense (1979 is with sparsity), 80 GB "
                  "HBM3 at 3.35 TB/s, NVLink 900 GB/s (450 each way). DGX H100 host: 8 GPUs, "
                  "one 400 Gb/s NDR ConnectX-7 per GPU = 50 GB/s.",
    },
    {
        .name = "h200",
        .gpu_model = "NVIDIA H200 (SXM)",
        .interconnect = "NVLink4 900 GB/s (DGX H200); 8x400 Gb/s NDR InfiniBand",
        .peak_flops = {67 * TFLOPS, 989.4 * TFLOPS, 989.4 * TFLOPS},
        .memory_bandwidth = 4800 * GBS,
        .device_memory = 143771 * MIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 450 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 50 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.7, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED(494.7 * TFLOPS, 0.7, EFF_GEMM_HOPPER_F16), .gemm_store_overlap = 1.0,
        .attention_efficiency = EFF_ATTENTION_HOPPER, .reduction_efficiency = EFF_REDUCTION_HOPPER,
        .attention_eff_seq = ATTN_SEQ_HOPPER,
        .gemm_unaligned_factor = UNALIGNED_HOPPER, .peak_flops_fp8 = 1978.9 * TFLOPS, .nics_per_host = 8,
        .nic_bandwidth = 50 * GBS,
        .host_link_bandwidth = PCIE5_X16, /* H200 datasheet (SXM): PCIe Gen5, 128 GB/s */
        .source = "NVIDIA H200 datasheet (SXM): 67 TFLOP/s FP32, 494.7 TF32, 1978.9 FP8, 989.4 TFLOP/s FP16 and BF16 "
                  "tensor dense (1979 with sparsity), 141 GB HBM3e (the driver reports "
                  "143771 MiB, used here) at 4.8 TB/s, NVLink 900 GB/s (450 each way). "
                  "DGX H200 host: 8 GPUs, one 400 Gb/s NDR ConnectX-7 per GPU = 50 GB/s.",
    },
    /* B200's SMs: 74 enabled on each of its two dies, 148 in all (Chips and
     * Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling", 2025,
     * from the device's reported SM count; NVIDIA's datasheets and
     * technical brief give none), taken for GB200's Blackwell GPU as well,
     * an assumption (the validation rows' spec_fields set the same). */
#define SM_BLACKWELL 148
    /* Fused attention on Blackwell by key length (hw/attention_rate.c;
     * docs/validation.md "Fused attention on Blackwell by key length"):
     * NVIDIA's cuDNN timings of Llama 3.1's causal BF16 attention, batch 1,
     * 128 query and 8 key/value heads of 128 (NVIDIA/cudnn-frontend
     * benchmark/sdpa_benchmark_training/artifacts/
     * sdpa_bf16_benchmark_results_NVIDIA_B200.csv, cuDNN 9.13 through
     * PyTorch's SDPA, and ..._GB200.csv, cuDNN 9.17 through the frontend),
     * forward and backward FLOPs (1 : 2.5, as approf counts them) over both
     * times, of the card's dense BF16 peak, at 2048 .. 32768 keys. */
#define ATTN_SEQ_B200 {0.176, 0.329, 0.444, 0.506, 0.526}
#define ATTN_SEQ_GB200 {0.294, 0.452, 0.519, 0.556, 0.571}
    /* Blackwell's GEMMs (docs/validation.md, "Blackwell GEMM rates from
     * published B200 kernel figures"): vLLM pull request 19566 (merged
     * June 2025), benchmarks/kernels/bench_fp8_gemm.py on a B200 at
     * M = 16384, N = 6144, K = 4096 (Llama 3.1 8B's QKV GEMM at 16384
     * tokens): per-tensor-scaled FP8 E4M3 (CUTLASS, the quantization
     * kernel left out) 2544.7 TFLOP/s = 0.57 of 4500, torch's BF16 matmul
     * (cuBLAS) 1512.8 = 0.67 of 2250. Every FP8 and BF16 GEMM takes them
     * (one figure per class, as the other entries); GB200 takes the same
     * fractions of its own peaks, an assumption (the same GPU, no GB200
     * table found). TF32 keeps the unmeasured 0.7. */
#define EFF_GEMM_BLACKWELL_F16 0.67
#define EFF_GEMM_BLACKWELL_FP8 0.57
    /* Blackwell (docs/hardware.md): the figures from NVIDIA's datasheets and
     * the Blackwell technical brief; the efficiencies are the h100-sxm
     * entry's figures that were not measured on Hopper kernels (GEMM 0.7,
     * TF32 GEMMs 0.7, convolutions 0.5, memory 0.85) and the table's
     * shared constants. No Blackwell GEMM has been timed here, so none of
     * Hopper's kernel-level figures (0.77, attention, reductions,
     * misaligned GEMMs, the overlapped epilogue) is carried over; BF16 and
     * FP8 GEMMs take a published B200 kernel table (EFF_GEMM_BLACKWELL_*
     * above), fused attention NVIDIA's published cuDNN figures by key
     * length (ATTN_SEQ_B200, ATTN_SEQ_GB200 above). */
    {
        .name = "b200",
        .gpu_model = "NVIDIA B200 (HGX/DGX B200)",
        .interconnect = "NVLink5 1.8 TB/s (DGX B200); 8x400 Gb/s ConnectX-7",
        .peak_flops = {80 * TFLOPS, 2250 * TFLOPS, 2250 * TFLOPS},
        .memory_bandwidth = 8000 * GBS,
        .device_memory = 180 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 900 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 50 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.7, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED_FP8(1100 * TFLOPS, 0.7, EFF_GEMM_BLACKWELL_F16, EFF_GEMM_BLACKWELL_FP8),
        .peak_flops_fp8 = 4500 * TFLOPS,
        .peak_flops_fp4 = 9000 * TFLOPS, .nics_per_host = 8, .nic_bandwidth = 50 * GBS,
        .attention_eff_seq = ATTN_SEQ_B200,
        .sm_count = SM_BLACKWELL, .nccl_channels = NCCL_CHANNELS_NVLINK5,
        /* HGX B200: PCIe Gen5 x16 to its Gen5 x86 host (MLPerf Inference
         * v6.0, Nebius B200-SXM-180GB system: "PCIe Gen5 x16") */
        .host_link_bandwidth = PCIE5_X16,
        .source = "NVIDIA Blackwell architecture technical brief, HGX B200 (1000 W) per GPU, "
                  "dense: 80 TFLOP/s FP32, 1100 TF32, 2250 FP16/BF16, 4500 FP8, 9000 FP4. "
                  "DGX B200 datasheet: 8 GPUs, 1440 GB HBM3e at 64 TB/s (180 GB, read as GiB, "
                  "and 8 TB/s per GPU), NVLink5 1.8 TB/s per GPU (900 each way), 8x400 Gb/s "
                  "ConnectX-7 = 50 GB/s per GPU.",
    },
    {
        .name = "gb200-nvl72",
        .gpu_model = "NVIDIA GB200 (Blackwell GPU, NVL72)",
        .interconnect = "NVLink5 1.8 TB/s, 72 GPUs on one NVLink Switch domain (18 trays of "
                        "4); 4x400 Gb/s ConnectX-7 per tray",
        .peak_flops = {90 * TFLOPS, 2500 * TFLOPS, 2500 * TFLOPS},
        .memory_bandwidth = 8000 * GBS,
        .device_memory = 186 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 4,
        .intra_host_bandwidth = 900 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 50 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.7, .conv_efficiency = 0.5, .memory_efficiency = 0.85,
        .kernel_launch_overhead = LAUNCH,
        REFINED_FP8(1250 * TFLOPS, 0.7, EFF_GEMM_BLACKWELL_F16, EFF_GEMM_BLACKWELL_FP8),
        .peak_flops_fp8 = 5000 * TFLOPS,
        .peak_flops_fp4 = 10000 * TFLOPS, .nics_per_host = 4, .nic_bandwidth = 50 * GBS,
        .attention_eff_seq = ATTN_SEQ_GB200,
        .sm_count = SM_BLACKWELL, .nccl_channels = NCCL_CHANNELS_NVLINK5,
        .scaleup_gpus = 72,
        .host_link_bandwidth = C2C_GB200_PER_GPU, /* NVLink-C2C, see the macro */
        .source = "NVIDIA Blackwell architecture technical brief, GB200 (1200 W) per GPU, "
                  "dense: 90 TFLOP/s FP32, 1250 TF32, 2500 FP16/BF16, 5000 FP8, 10000 FP4. "
                  "GB200 NVL72 datasheet: 72 GPUs, 13.4 TB HBM3e at 576 TB/s (372 GB and "
                  "16 TB/s per 2-GPU superchip: 186 GB, read as GiB, 8 TB/s per GPU), one "
                  "NVLink domain of 130 TB/s (1.8 TB/s per GPU, 900 each way); compute tray "
                  "of 4 GPUs, 4x400 Gb/s ConnectX-7 = 50 GB/s per GPU.",
    },
    /* AMD Instinct MI300X (docs/hardware.md "AMD Instinct MI300X"). The
     * rates, memory and links from ROCm's documentation (ROCm/ROCm
     * docs/conceptual/gpu-arch/mi300.md and docs/reference/
     * gpu-arch-specs.rst at e396b4898f45); the link speed from the Linux
     * amdgpu driver; the network from Azure's ND MI300X v5. No MI300X
     * kernel has been timed for approf; the efficiencies are published
     * single-GPU and single-host figures (the EFF_*_MI300X macros above).
     * The host is a switchless full mesh (intra_host_full_mesh): a pair of
     * GPUs talks over one of the 7 links (costdb_intra_bandwidth). */
    {
        .name = "mi300x",
        .gpu_model = "AMD Instinct MI300X (OAM)",
        .interconnect = "Infinity Fabric full mesh, 7 x 64 GB/s each way per GPU (8-GPU "
                        "platform, no switch); 8x400 Gb/s NDR InfiniBand",
        .peak_flops = {163.4 * TFLOPS, 1307.4 * TFLOPS, 1307.4 * TFLOPS},
        .memory_bandwidth = 5300 * GBS,
        .device_memory = 192 * GIB,
        .memory_reserve = RESERVE,
        .gpus_per_host = 8,
        .intra_host_bandwidth = 448 * GBS,
        .intra_host_latency = LAT_NVLINK,
        .inter_host_bandwidth = 50 * GBS,
        .inter_host_latency = LAT_IB,
        .gemm_efficiency = 0.7, .conv_efficiency = 0.5, .memory_efficiency = EFF_MEMORY_MI300X,
        .kernel_launch_overhead = LAUNCH,
        .peak_flops_tf32 = 653.7 * TFLOPS,
        .gemm_eff = {EFF_GEMM_FP32, 0.7, EFF_GEMM_MI300X_F16, EFF_GEMM_MI300X_FP8},
        .conv_eff = {EFF_CONV_FP32, EFF_CONV_TF32, EFF_CONV_F16, 0},
        .bus_efficiency = BUS_EFF_MI300X, .grad_overlap = GRAD_OVERLAP,
        .grad_bucket_bytes = GRAD_BUCKET, .peak_flops_fp8 = 2614.9 * TFLOPS,
        .nics_per_host = 8, .nic_bandwidth = 50 * GBS, .intra_host_full_mesh = 1, .rocm = 1,
        .host_link_bandwidth = PCIE5_X16, /* AMD MI300X datasheet: PCIe Gen5 x16, 128 GB/s */
        .source = "ROCm docs, MI300 microarchitecture (MI300X OAM peak): 163.4 TFLOP/s FP32, "
                  "653.7 TF32, 1307.4 FP16/BF16, 2614.9 FP8 (dense), 5.3 TB/s; 8 GPUs fully "
                  "connected by 7 Infinity Fabric links each. ROCm GPU specs: 192 GiB. Linux "
                  "amdgpu_xgmi.c: xGMI of GC 9.4.3 at 32 GT/s x16 = 64 GB/s each way a link, "
                  "448 GB/s over 7. Azure ND MI300X v5: 8x400 Gb/s NDR InfiniBand = 50 GB/s "
                  "per GPU.",
    },
};

const ApprofHardwareSpec *approf_hardware_builtins(size_t *n)
{
    if (n)
        *n = sizeof builtins / sizeof builtins[0];
    return builtins;
}

int approf_hardware_builtin(const char *name, ApprofHardwareSpec *out)
{
    if (!name || !out)
        return APPROF_EINVAL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        if (!strcmp(builtins[i].name, name)) {
            *out = builtins[i];
            return APPROF_OK;
        }
    }
    return APPROF_EINVAL;
}

int64_t approf_hardware_available_memory(const ApprofHardwareSpec *hw)
{
    int64_t avail;
    if (!hw)
        return 0;
    avail = hw->device_memory - hw->memory_reserve;
    return avail > 0 ? avail : 0;
}

/* FNV-1a, 64 bit: stable across platforms, enough to tell specs apart. */
static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
    return costdb_fnv1a(h, s, n);
}

void approf_hardware_fingerprint(const ApprofHardwareSpec *hw, char *out, size_t len)
{
    /* The numbers as the spec file writes them (%.15g in file units), so a
     * built-in and a file copied from `approf hardware show` agree even where
     * TFLOP/s * 1e12 and the datasheet literal differ in the last bit. */
    char buf[1024];
    int w;
    uint64_t h;
    if (!out || len == 0)
        return;
    if (!hw) {
        out[0] = '\0';
        return;
    }
    w = snprintf(buf, sizeof buf,
                 "%.15g|%.15g|%.15g|%.15g|%.15g|%.15g|%d|%.15g|%.15g|%.15g|%.15g|"
                 "%.15g|%.15g|%.15g|%.15g",
                 hw->peak_flops[APPROF_F32] / TFLOPS, hw->peak_flops[APPROF_F16] / TFLOPS,
                 hw->peak_flops[APPROF_BF16] / TFLOPS, (double)hw->device_memory / (double)GIB,
                 (double)hw->memory_reserve / (double)GIB, hw->memory_bandwidth / GBS,
                 hw->gpus_per_host, hw->intra_host_bandwidth / GBS, hw->intra_host_latency / US,
                 hw->inter_host_bandwidth / GBS, hw->inter_host_latency / US,
                 hw->gemm_efficiency, hw->conv_efficiency, hw->memory_efficiency,
                 hw->kernel_launch_overhead / US);
    if (w < 0)
        w = 0;
    if ((size_t)w >= sizeof buf)
        w = (int)sizeof buf - 1;
    /* The refinements (hardware.h, 0 = not given) join the hash only when
     * given, so a spec without them keeps the fingerprint it always had. */
    {
        const double extra[] = {
            hw->peak_flops_tf32 / TFLOPS, hw->peak_flops_fp8 / TFLOPS,
            hw->peak_flops_tf32 > 0 ? (double)hw->allow_tf32 : 0.0,
            hw->gemm_eff[0], hw->gemm_eff[1], hw->gemm_eff[2], hw->gemm_eff[3],
            hw->conv_eff[0], hw->conv_eff[1], hw->conv_eff[2], hw->conv_eff[3],
            hw->conv_bwd_data_factor, hw->conv_bwd_filter_factor, hw->host_overhead / US,
            (double)hw->nics_per_host, hw->nic_bandwidth / GBS, hw->bus_efficiency,
            hw->grad_overlap, hw->grad_bucket_bytes / (double)MIB, hw->gemm_store_overlap,
            hw->tp_comm_overlap, hw->attention_efficiency, hw->reduction_efficiency,
            hw->gemm_unaligned_factor, hw->grad_reduce_bytes, (double)hw->loss_f32,
            (double)hw->grad_accum_fusion, hw->tp_async_grad, hw->peak_flops_fp4 / TFLOPS,
            (double)hw->scaleup_gpus, hw->optimizer_main_param_bytes,
            hw->optimizer_exp_avg_bytes, hw->optimizer_exp_avg_sq_bytes,
            (double)hw->fp8_param_gather, (double)hw->zero3_rank_copies,
            hw->overlap_gemm_slowdown, (double)hw->intra_host_full_mesh,
            /* the SM count prices nothing without a userbuffers margin or
             * NCCL's channels */
            hw->tp_comm_overlap_sms > 0 || hw->nccl_channels > 0 ? (double)hw->sm_count : 0.0,
            (double)hw->tp_comm_overlap_sms, (double)hw->tp_comm_overlap_splits,
            hw->host_link_bandwidth / GBS, (double)hw->zero3_fetch_sync,
            (double)hw->zero3_grad_all_reduce, (double)hw->zero3_gather_copy,
            (double)hw->zero3_grad_copy, hw->attention_eff_seq[0], hw->attention_eff_seq[1],
            hw->attention_eff_seq[2], hw->attention_eff_seq[3], hw->attention_eff_seq[4],
            (double)hw->nccl_channels, (double)hw->moe_drop_pad, hw->optimizer_step_bytes,
            (double)hw->loss_metric_passes, (double)hw->metric_sync_states,
            (double)hw->cp_ring_torch, (double)hw->grad_presync_passes,
            hw->param_step_kernels, (double)hw->ddp_grad_copies};
        for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
            int e;
            if (extra[i] == 0.0)
                continue;
            e = snprintf(buf + w, sizeof buf - (size_t)w, "|%zu=%.15g", i, extra[i]);
            if (e < 0 || (size_t)e >= sizeof buf - (size_t)w)
                break;
            w += e;
        }
    }
    h = fnv1a(buf, (size_t)w, COSTDB_FNV_BASIS);
    snprintf(out, len, "analytic:%s:%012" PRIx64, hw->name, h >> 16);
}

void approf_hardware_adam_widths(const ApprofHardwareSpec *hw, CostdbAdamWidths *out)
{
    if (!out)
        return;
    *out = hw ? (CostdbAdamWidths){hw->optimizer_main_param_bytes, hw->optimizer_exp_avg_bytes,
                                   hw->optimizer_exp_avg_sq_bytes, hw->optimizer_step_bytes}
              : (CostdbAdamWidths){0, 0, 0, 0};
}

void approf_hardware_to_costdb(const ApprofHardwareSpec *hw, CostdbHardware *out)
{
    size_t len, cap = sizeof out->capabilities;
    int w;
    if (!hw || !out)
        return;
    memset(out, 0, sizeof *out);
    approf_hardware_fingerprint(hw, out->fingerprint, sizeof out->fingerprint);
    snprintf(out->kind, sizeof out->kind, "%s", "analytic");
    snprintf(out->spec_name, sizeof out->spec_name, "%s", hw->name);
    snprintf(out->gpu_model, sizeof out->gpu_model, "%s", hw->gpu_model);
    snprintf(out->interconnect, sizeof out->interconnect, "%s", hw->interconnect);
    out->gpus_per_host = hw->gpus_per_host;
    out->device_memory = hw->device_memory;
    out->peak_flops_f32 = hw->peak_flops[APPROF_F32];
    out->peak_flops_f16 = hw->peak_flops[APPROF_F16];
    out->peak_flops_bf16 = hw->peak_flops[APPROF_BF16];
    out->memory_bandwidth = hw->memory_bandwidth;
    out->intra_host_bandwidth = hw->intra_host_bandwidth;
    out->intra_host_latency = hw->intra_host_latency;
    out->inter_host_bandwidth = hw->inter_host_bandwidth;
    out->inter_host_latency = hw->inter_host_latency;

    w = snprintf(out->capabilities, cap,
                 "{\"gemm_efficiency\": %.15g, \"conv_efficiency\": %.15g, "
                 "\"memory_efficiency\": %.15g, \"kernel_launch_overhead\": %.15g, "
                 "\"memory_reserve\": %" PRId64 ", \"available_memory\": %" PRId64
                 ", \"source\": \"",
                 hw->gemm_efficiency, hw->conv_efficiency, hw->memory_efficiency,
                 hw->kernel_launch_overhead, hw->memory_reserve,
                 approf_hardware_available_memory(hw));
    if (w < 0 || (size_t)w >= cap) {
        out->capabilities[0] = '\0';
        return;
    }
    /* The refinements, when given (readers such as apsolve's placement
     * path can price gradient sync as the sweep did). */
    {
        const struct {
            const char *key;
            double v;
        } extra[] = {
            {"peak_flops_tf32", hw->peak_flops_tf32}, {"peak_flops_fp8", hw->peak_flops_fp8},
            {"allow_tf32", hw->peak_flops_tf32 > 0 ? (double)hw->allow_tf32 : 0.0},
            {"host_overhead", hw->host_overhead}, {"nics_per_host", (double)hw->nics_per_host},
            {"nic_bandwidth", hw->nic_bandwidth}, {"bus_efficiency", hw->bus_efficiency},
            {"grad_overlap", hw->grad_overlap}, {"grad_bucket_bytes", hw->grad_bucket_bytes},
            {"gemm_store_overlap", hw->gemm_store_overlap},
            {"tp_comm_overlap", hw->tp_comm_overlap},
            {"attention_efficiency", hw->attention_efficiency},
            {"reduction_efficiency", hw->reduction_efficiency},
            {"gemm_unaligned_factor", hw->gemm_unaligned_factor},
            {"grad_reduce_bytes", hw->grad_reduce_bytes},
            {"loss_f32", (double)hw->loss_f32},
            {"loss_metric_passes", (double)hw->loss_metric_passes},
            {"metric_sync_states", (double)hw->metric_sync_states},
            {"param_step_kernels", hw->param_step_kernels},
            {"ddp_grad_copies", (double)hw->ddp_grad_copies},
            {"grad_accum_fusion", (double)hw->grad_accum_fusion},
            {"tp_async_grad", hw->tp_async_grad},
            {"peak_flops_fp4", hw->peak_flops_fp4},
            {"scaleup_domain_gpus", (double)hw->scaleup_gpus},
            {"optimizer_main_param_bytes", hw->optimizer_main_param_bytes},
            {"optimizer_exp_avg_bytes", hw->optimizer_exp_avg_bytes},
            {"optimizer_exp_avg_sq_bytes", hw->optimizer_exp_avg_sq_bytes},
            {"optimizer_step_bytes", hw->optimizer_step_bytes},
            {"zero3_rank_copies", (double)hw->zero3_rank_copies},
            {"zero3_fetch_sync", (double)hw->zero3_fetch_sync},
            {"moe_drop_pad", (double)hw->moe_drop_pad},
            {"zero3_grad_all_reduce", (double)hw->zero3_grad_all_reduce},
            {"zero3_gather_copy", (double)hw->zero3_gather_copy},
            {"zero3_grad_copy", (double)hw->zero3_grad_copy},
            {"cp_ring_torch", (double)hw->cp_ring_torch},
            {"overlap_gemm_slowdown", hw->overlap_gemm_slowdown},
            {"intra_host_full_mesh", (double)hw->intra_host_full_mesh},
            {"sm_count", hw->tp_comm_overlap_sms > 0 || hw->nccl_channels > 0
                             ? (double)hw->sm_count : 0.0},
            {"tp_comm_overlap_sms", (double)hw->tp_comm_overlap_sms},
            {"tp_comm_overlap_splits", (double)hw->tp_comm_overlap_splits},
            {"host_link_bandwidth", hw->host_link_bandwidth},
            {"attention_efficiency_2k", hw->attention_eff_seq[0]},
            {"attention_efficiency_4k", hw->attention_eff_seq[1]},
            {"attention_efficiency_8k", hw->attention_eff_seq[2]},
            {"attention_efficiency_16k", hw->attention_eff_seq[3]},
            {"attention_efficiency_32k", hw->attention_eff_seq[4]},
            {"nccl_channels", (double)hw->nccl_channels},
            {"grad_presync_passes", (double)hw->grad_presync_passes}};
        for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
            int e;
            if (extra[i].v == 0.0)
                continue;
            /* the opening of "source" is the tail: insert before it */
            e = snprintf(out->capabilities + w - 11, cap - (size_t)w + 11,
                         "\"%s\": %.15g, \"source\": \"", extra[i].key, extra[i].v);
            if (e < 0 || (size_t)e >= cap - (size_t)w + 11) {
                out->capabilities[0] = '\0';
                return;
            }
            w += e - 11;
        }
    }
    /* a source that does not fit is left out whole */
    len = (size_t)w + costdb_json_escape(out->capabilities + w, cap - (size_t)w, hw->source);
    if (len >= cap) {
        len = (size_t)w;
        out->capabilities[len] = '\0';
    }
    if (len + 3 > cap) {
        out->capabilities[0] = '\0';
        return;
    }
    memcpy(out->capabilities + len, "\"}", 3);
}

/* Lower-case copy for matching. */
static void lower(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = (char)((in[i] >= 'A' && in[i] <= 'Z') ? in[i] - 'A' + 'a' : in[i]);
    out[i] = '\0';
}

const char *approf_hardware_match_gpu(const char *gpu_name, int64_t device_memory)
{
    char n[256];
    double gib = (double)device_memory / (1024.0 * 1024.0 * 1024.0);
    if (!gpu_name)
        return NULL;
    lower(gpu_name, n, sizeof n);
    if (strstr(n, "mi300x"))
        return "mi300x";
    if (strstr(n, "gb200"))
        return "gb200-nvl72";
    if (strstr(n, "b200"))
        return "b200";
    if (strstr(n, "h200"))
        return "h200";
    if (strstr(n, "h100"))
        return "h100-sxm";
    if (strstr(n, "a100"))
        return (strstr(n, "80gb") || gib > 48) ? "a100-80g" : "a100-40g";
    if (strstr(n, "v100"))
        return (strstr(n, "32gb") || gib > 20) ? "v100-32g" : "v100-16g";
    if (strstr(n, "1080 ti"))
        return "gtx-1080ti";
    return NULL;
}
