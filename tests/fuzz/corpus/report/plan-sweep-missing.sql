UPDATE plan SET sweep_id = 77;
