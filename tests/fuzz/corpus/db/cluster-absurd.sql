UPDATE sweep SET cluster_hosts = 2147483647, cluster_gpus = 2147483647;
