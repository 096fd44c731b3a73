UPDATE model_layer SET fwd_flops = 9e999, bwd_flops = -9e999, param_bytes = -1, layer_index = layer_index + 1000;
