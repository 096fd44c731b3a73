UPDATE placement SET shape = x'00ff00', sharding_spec = randomblob(3000), tensor_name = x'';
