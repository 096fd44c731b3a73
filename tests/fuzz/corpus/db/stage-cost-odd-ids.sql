UPDATE stage_entry SET cost_id = -1 WHERE phase = 1; UPDATE stage_cost SET cost_id = 9223372036854775807 WHERE cost_id = 2;
