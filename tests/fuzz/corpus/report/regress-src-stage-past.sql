UPDATE resharding_task SET src_stage = 5;
