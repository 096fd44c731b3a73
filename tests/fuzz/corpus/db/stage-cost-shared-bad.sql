UPDATE stage_cost SET status = 'bogus', compute_cost = -3 WHERE cost_id = 1;
