UPDATE plan SET micro_batches = 0;
