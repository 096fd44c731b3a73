UPDATE placement_set SET first_tensor = 9223372036854775800 WHERE tail_id IS NOT NULL; UPDATE placement_tail SET items = '[1,0,0,100,1]';
