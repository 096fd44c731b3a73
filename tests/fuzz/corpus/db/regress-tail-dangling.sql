UPDATE placement_set SET tail_id = 424242;
