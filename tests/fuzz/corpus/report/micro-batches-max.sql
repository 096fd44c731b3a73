UPDATE plan SET micro_batches = 1048576;
