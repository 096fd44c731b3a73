UPDATE sweep SET cluster_hosts = 1024, cluster_gpus = 1024;
