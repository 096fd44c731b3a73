UPDATE stage_profile SET available_memory = 1, peak_memory = 9223372036854775807, initial_size = 9223372036854775807, intermediate_size = 0;
