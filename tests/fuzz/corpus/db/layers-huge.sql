UPDATE sweep SET num_layers = 4096;
