UPDATE stage_cost SET cost_id = cost_id * 99991; UPDATE stage_entry SET cost_id = cost_id * 99991;
