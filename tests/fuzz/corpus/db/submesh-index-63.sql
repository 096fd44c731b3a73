UPDATE sweep_submesh SET submesh_index = submesh_index + 62; UPDATE sweep_config SET submesh_index = submesh_index + 62; UPDATE stage_profile SET submesh_index = submesh_index + 62;
