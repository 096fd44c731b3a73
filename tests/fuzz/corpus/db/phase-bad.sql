UPDATE stage_profile SET phase = 7 WHERE start_layer = 0;
