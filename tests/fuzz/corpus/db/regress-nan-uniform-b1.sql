UPDATE sweep SET micro_batches = 4294967294, global_batch = 9223372036854775807;
