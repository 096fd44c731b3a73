ALTER TABLE stage_profile RENAME COLUMN compute_cost TO cost;
