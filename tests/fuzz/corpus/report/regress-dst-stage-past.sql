UPDATE resharding_task SET dst_stage = 7;
