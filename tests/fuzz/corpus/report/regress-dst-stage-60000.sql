UPDATE resharding_task SET dst_stage = 60000 WHERE task_index = 0;
