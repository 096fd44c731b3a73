UPDATE plan_stage SET logical_a = 3, logical_b = 5, force_batch_dim = 7;
