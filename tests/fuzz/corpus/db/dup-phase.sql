UPDATE stage_profile SET phase = 0;
