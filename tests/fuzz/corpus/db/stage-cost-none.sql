DELETE FROM stage_cost; INSERT INTO stage_profile SELECT * FROM stage_profile;
