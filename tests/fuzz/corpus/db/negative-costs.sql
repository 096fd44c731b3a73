UPDATE stage_profile SET compute_cost = -1.5; UPDATE stage_profile SET peak_memory = -1, available_memory = -9223372036854775808, intermediate_size = 9223372036854775807;
