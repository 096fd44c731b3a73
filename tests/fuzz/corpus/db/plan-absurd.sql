UPDATE plan_stage SET start_layer = 9, end_layer = -3, submesh_index = 99, config_index = 99, fwd_cost = 9e999; UPDATE plan SET cost = -9e999, micro_batches = 0;
