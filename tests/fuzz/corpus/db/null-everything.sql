UPDATE stage_profile SET compute_cost = NULL, status = NULL, error = NULL; UPDATE sweep SET name = NULL, status = NULL, layer_option = NULL;
