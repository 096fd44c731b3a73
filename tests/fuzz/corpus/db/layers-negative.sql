UPDATE sweep SET num_layers = -7, micro_batches = -1, global_batch = -1;
