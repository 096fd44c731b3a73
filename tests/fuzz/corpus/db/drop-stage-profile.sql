DROP TABLE stage_profile;
