DELETE FROM resharding_task; UPDATE plan_stage SET submesh_index = 60000, config_index = 60000;
