-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 6: a compact encoding of a
-- placement set's items (schemas/README.md, "placement"). Schema 3 wrote
-- [[role, tensor_index, spec_id], ...]; approf now writes
-- [n_param, n_input, n_output, d1, spec1, d2, spec2, ...]: the items sorted
-- by role then tensor, role by position (the first n_param are parameters,
-- then inputs, then outputs), tensor_index as a running sum of the d's.
-- About half the text, and placement sets are most of a sweep's database.
-- Rows written before stay as they are: approf reads both encodings, and so
-- does the `placement` view below. The version bump keeps an older approf,
-- which reads only the first encoding, from opening a file that holds the
-- second.

DROP VIEW placement;

CREATE VIEW placement AS
  SELECT s.sweep_id AS sweep_id, x.start_layer AS start_layer, x.end_layer AS end_layer,
         x.submesh_index AS submesh_index, x.config_index AS config_index,
         x.ti AS tensor_index, n.text AS tensor_name,
         CASE x.r WHEN 0 THEN 'param' WHEN 1 THEN 'input' ELSE 'output' END AS role,
         sh.text AS shape, dt.text AS dtype, sp.text AS sharding_spec
  FROM (
    SELECT s.rowid AS sid, s.start_layer AS start_layer, s.end_layer AS end_layer,
           s.submesh_index AS submesh_index, s.config_index AS config_index,
           json_extract(j.value, '$[0]') AS r, json_extract(j.value, '$[1]') AS ti,
           json_extract(j.value, '$[2]') AS spec_id
    FROM placement_set s JOIN json_each(s.items) j
    WHERE json_type(s.items, '$[0]') = 'array'
    UNION ALL
    SELECT sid, start_layer, end_layer, submesh_index, config_index,
           CASE WHEN i < np THEN 0 WHEN i < np + ni THEN 1 ELSE 2 END,
           sum(d) OVER (PARTITION BY sid ORDER BY i), spec_id
    FROM (SELECT s.rowid AS sid, s.start_layer AS start_layer, s.end_layer AS end_layer,
                 s.submesh_index AS submesh_index, s.config_index AS config_index,
                 json_extract(s.items, '$[0]') AS np, json_extract(s.items, '$[1]') AS ni,
                 (j.key - 3) / 2 AS i, max(CASE WHEN j.key % 2 = 1 THEN j.value END) AS d,
                 max(CASE WHEN j.key % 2 = 0 THEN j.value END) AS spec_id
          FROM placement_set s JOIN json_each(s.items) j
          WHERE json_type(s.items, '$[0]') = 'integer' AND j.key >= 3
          GROUP BY s.rowid, i)
  ) x
  JOIN placement_set s ON s.rowid = x.sid
  JOIN placement_tensor t ON t.sweep_id = s.sweep_id AND t.tensor_index = x.ti
  JOIN placement_text n ON n.id = t.name_id
  JOIN placement_text sh ON sh.id = t.shape_id
  JOIN placement_text dt ON dt.id = t.dtype_id
  JOIN placement_text sp ON sp.id = x.spec_id;
