UPDATE sweep SET num_layers = 0;
