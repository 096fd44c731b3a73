DROP TABLE stage_profile;
CREATE TABLE stage_profile(sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
  compute_cost, peak_memory, invar_size, outvar_size, temp_buffer_size, available_memory,
  intermediate_size, initial_size, repeats, spread, reused, status, error);
INSERT INTO stage_profile VALUES (1, 0, 0, 0, 0, 0, NULL, NULL, 1, 1, 1, NULL, 1, 1, NULL, NULL, NULL, NULL, NULL);
INSERT INTO stage_profile VALUES (1, 0, 0, 0, 0, 1, 'abc', x'00', 1, 1, 1, 1e300, 1, 1, 1, 'x', 2, 'ok', x'ff');
INSERT INTO stage_profile VALUES (1, 1, 1, 0, 0, 0, 1.5, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 'ok', '');
INSERT INTO stage_profile VALUES (1, 1, 1, 0, 0, 1, -9e999, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 'ok', '');
INSERT INTO stage_profile VALUES (1, 0, 1, 0, 0, 0, 9e999, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 'ok', '');
INSERT INTO stage_profile VALUES (1, 0, 1, 0, 0, 1, -9e999, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 'ok', '');
