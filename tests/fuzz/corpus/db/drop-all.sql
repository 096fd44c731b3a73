DROP TABLE plan_stage; DROP TABLE plan; DROP TABLE sweep_config; DROP TABLE sweep_submesh;
