-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 3: compact placements
-- (schemas/README.md). Schema 1 stored one row per (stage entry, tensor)
-- with the tensor's name, shape, dtype and ShardingSpec text repeated in
-- every row: a 32-layer GPT sweep held about a million rows over some sixty
-- distinct specs and a thousand tensors. Now:
--   placement_text    every distinct text once (tensor names, shapes,
--                     dtypes, ShardingSpec strings), by id;
--   placement_tensor  a sweep's tensors: index -> name, shape, dtype;
--   placement_set     one row per stage entry: its placements as a JSON
--                     array of [role, tensor_index, spec_id] triples (role 0
--                     param, 1 input, 2 output);
--   placement         a view with the columns of the schema-1 table, so
--                     reading SQL keeps working (for the sqlite3 shell and
--                     scripts: approf's own queries do not use it, and no
--                     JSON function is used in a constraint, so a
--                     connection with trusted_schema=OFF reads the tables).
-- Existing rows are converted; a tensor index with several names in a
-- (hand-made) schema-1 file keeps the first.

CREATE TABLE placement_text (
  id    INTEGER PRIMARY KEY,
  text  TEXT NOT NULL UNIQUE
);

CREATE TABLE placement_tensor (
  sweep_id      INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,
  tensor_index  INTEGER NOT NULL CHECK (tensor_index >= 0),
  name_id       INTEGER NOT NULL REFERENCES placement_text(id),
  shape_id      INTEGER NOT NULL REFERENCES placement_text(id),
  dtype_id      INTEGER NOT NULL REFERENCES placement_text(id),
  PRIMARY KEY (sweep_id, tensor_index)
) WITHOUT ROWID;

CREATE TABLE placement_set (
  sweep_id       INTEGER NOT NULL,
  start_layer    INTEGER NOT NULL,
  end_layer      INTEGER NOT NULL,
  submesh_index  INTEGER NOT NULL,
  config_index   INTEGER NOT NULL,
  items          TEXT NOT NULL,   -- '[[role, tensor_index, spec_id], ...]'
  -- a rowid table: rows of a kilobyte or more are stored densely there,
  -- while a WITHOUT ROWID b-tree would half-fill its pages with them
  UNIQUE (sweep_id, start_layer, end_layer, submesh_index, config_index),
  FOREIGN KEY (sweep_id, submesh_index, config_index)
    REFERENCES sweep_config(sweep_id, submesh_index, config_index) ON DELETE CASCADE
);

INSERT OR IGNORE INTO placement_text (text)
  SELECT tensor_name FROM placement UNION SELECT shape FROM placement
  UNION SELECT dtype FROM placement UNION SELECT sharding_spec FROM placement;

INSERT OR IGNORE INTO placement_tensor (sweep_id, tensor_index, name_id, shape_id, dtype_id)
  SELECT p.sweep_id, p.tensor_index,
         (SELECT id FROM placement_text WHERE text = p.tensor_name),
         (SELECT id FROM placement_text WHERE text = p.shape),
         (SELECT id FROM placement_text WHERE text = p.dtype)
  FROM placement p ORDER BY p.sweep_id, p.tensor_index;

INSERT INTO placement_set (sweep_id, start_layer, end_layer, submesh_index, config_index, items)
  SELECT sweep_id, start_layer, end_layer, submesh_index, config_index,
         json_group_array(json_array(r, tensor_index, s))
  FROM (SELECT p.sweep_id, p.start_layer, p.end_layer, p.submesh_index, p.config_index,
               p.tensor_index,
               CASE p.role WHEN 'param' THEN 0 WHEN 'input' THEN 1 ELSE 2 END AS r,
               (SELECT id FROM placement_text WHERE text = p.sharding_spec) AS s
        FROM placement p
        ORDER BY 1, 2, 3, 4, 5, 7, 6)
  GROUP BY sweep_id, start_layer, end_layer, submesh_index, config_index;

DROP TABLE placement;

CREATE VIEW placement AS
  SELECT s.sweep_id AS sweep_id, s.start_layer AS start_layer, s.end_layer AS end_layer,
         s.submesh_index AS submesh_index, s.config_index AS config_index,
         json_extract(j.value, '$[1]') AS tensor_index,
         n.text AS tensor_name,
         CASE json_extract(j.value, '$[0]') WHEN 0 THEN 'param' WHEN 1 THEN 'input'
           ELSE 'output' END AS role,
         sh.text AS shape, dt.text AS dtype, sp.text AS sharding_spec
  FROM placement_set s
  JOIN json_each(s.items) j
  JOIN placement_tensor t ON t.sweep_id = s.sweep_id
                         AND t.tensor_index = json_extract(j.value, '$[1]')
  JOIN placement_text n ON n.id = t.name_id
  JOIN placement_text sh ON sh.id = t.shape_id
  JOIN placement_text dt ON dt.id = t.dtype_id
  JOIN placement_text sp ON sp.id = json_extract(j.value, '$[2]');
