UPDATE placement_set SET first_tensor = 1, tail_id = (SELECT min(id) FROM placement_tail); DELETE FROM placement_tail WHERE id > (SELECT min(id) FROM placement_tail);
