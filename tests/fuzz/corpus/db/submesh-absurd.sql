UPDATE sweep_submesh SET hosts = 0, gpus_per_host = -4; UPDATE sweep_submesh SET submesh_index = 1000000 WHERE submesh_index = 0;
