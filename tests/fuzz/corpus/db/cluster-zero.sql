UPDATE sweep SET cluster_hosts = 0, cluster_gpus = 0;
