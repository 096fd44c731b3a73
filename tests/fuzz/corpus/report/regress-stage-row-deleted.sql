DELETE FROM plan_stage WHERE stage_index = 0 AND plan_id = (SELECT max(id) FROM plan);
