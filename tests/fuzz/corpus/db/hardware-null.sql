UPDATE hardware SET peak_flops_f32 = 0, memory_bandwidth = -1, intra_host_bandwidth = 9e999, inter_host_bandwidth = NULL, gpus_per_host = 0;
