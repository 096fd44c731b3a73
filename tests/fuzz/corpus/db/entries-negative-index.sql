UPDATE stage_profile SET submesh_index = -1, config_index = -2147483648;
