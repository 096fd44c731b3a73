UPDATE stage_profile SET compute_cost = 9e999 WHERE phase = 0; UPDATE stage_profile SET compute_cost = -9e999 WHERE phase = 1;
