UPDATE plan_stage SET submesh_hosts = 1024, submesh_gpus = 1024; UPDATE sweep SET cluster_hosts = 1024, cluster_gpus = 1024;
