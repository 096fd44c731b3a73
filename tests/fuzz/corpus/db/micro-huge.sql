UPDATE sweep SET micro_batches = 2147483647, global_batch = 9223372036854775807;
