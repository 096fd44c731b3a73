DELETE FROM sweep_config WHERE config_index = 0;
