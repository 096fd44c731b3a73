UPDATE sweep_config SET config_index = config_index + 300; UPDATE stage_profile SET config_index = config_index + 300;
