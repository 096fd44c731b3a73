UPDATE stage_entry SET cost_id = cost_id + 1000;
