UPDATE plan_stage SET stage_index = stage_index + 3;
