UPDATE plan_stage SET fwd_cost = 'nan', bwd_cost = 1e999;
