UPDATE stage_profile SET compute_cost = 'nan', peak_memory = 'lots', phase = 'fwd' WHERE start_layer = 0;
