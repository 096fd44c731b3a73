UPDATE placement_set SET first_tensor = 9007199254740993;
