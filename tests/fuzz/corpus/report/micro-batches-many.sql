UPDATE plan SET micro_batches = 30000;
