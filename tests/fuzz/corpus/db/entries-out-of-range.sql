UPDATE stage_profile SET start_layer = 5, end_layer = 2 WHERE phase = 0; UPDATE stage_profile SET end_layer = 2147483647 WHERE phase = 1;
