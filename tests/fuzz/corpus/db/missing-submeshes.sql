DELETE FROM sweep_submesh;
