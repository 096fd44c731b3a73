DELETE FROM stage_profile WHERE phase = 1 AND start_layer = 0;
