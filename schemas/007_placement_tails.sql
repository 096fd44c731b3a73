-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 7: placement sets share their
-- items (schemas/README.md, "placement"). In schema 6's encoding the items
-- of a range [i, j] and of [i+1, j+1] with the same sharding differ only
-- in the first tensor delta (the tensors of the next layer, in the same
-- order): a 64-layer GPT sweep holds 15,845 sets but 1,684 distinct lists
-- once that first delta is set aside. A set written now is a reference:
-- placement_tail holds each distinct list once, with its first delta 0,
-- and placement_set.first_tensor the tensor index it starts from (every
-- tensor index of the list shifted by it); such a row's items is ''. Rows
-- written before stay as they are: approf reads all three forms, and so
-- does the `placement` view below. The version bump keeps an older approf
-- from opening a file that holds references.

CREATE TABLE placement_tail (
  id     INTEGER PRIMARY KEY,
  hash   INTEGER NOT NULL,   -- FNV-1a of items (costdb/fnv.h), to find a list
  items  TEXT NOT NULL       -- schema 6's encoding, first delta 0
);

CREATE INDEX placement_tail_by_hash ON placement_tail (hash);

ALTER TABLE placement_set ADD COLUMN first_tensor INTEGER;
ALTER TABLE placement_set ADD COLUMN tail_id INTEGER REFERENCES placement_tail(id);

CREATE TRIGGER strict_placement_tail_insert BEFORE INSERT ON placement_tail
  WHEN typeof(NEW.hash) <> 'integer'
    OR typeof(NEW.items) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_tail.hash: not an integer value') WHERE typeof(NEW.hash) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tail.items: not a text value') WHERE typeof(NEW.items) <> 'text';
END;

CREATE TRIGGER strict_placement_tail_update BEFORE UPDATE ON placement_tail
  WHEN typeof(NEW.hash) <> 'integer'
    OR typeof(NEW.items) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_tail.hash: not an integer value') WHERE typeof(NEW.hash) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tail.items: not a text value') WHERE typeof(NEW.items) <> 'text';
END;

CREATE TRIGGER strict_placement_set_reference BEFORE INSERT ON placement_set
  WHEN typeof(NEW.first_tensor) NOT IN ('integer', 'null')
    OR typeof(NEW.tail_id) NOT IN ('integer', 'null')
    OR (NEW.first_tensor IS NULL) <> (NEW.tail_id IS NULL)
    OR NEW.first_tensor < 0
BEGIN
  SELECT RAISE(ABORT, 'placement_set.first_tensor: not an integer value') WHERE typeof(NEW.first_tensor) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'placement_set.tail_id: not an integer value') WHERE typeof(NEW.tail_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'placement_set.first_tensor: given without tail_id, or tail_id without it') WHERE (NEW.first_tensor IS NULL) <> (NEW.tail_id IS NULL);
  SELECT RAISE(ABORT, 'placement_set.first_tensor: negative') WHERE NEW.first_tensor < 0;
END;

CREATE TRIGGER strict_placement_set_reference_update BEFORE UPDATE ON placement_set
  WHEN typeof(NEW.first_tensor) NOT IN ('integer', 'null')
    OR typeof(NEW.tail_id) NOT IN ('integer', 'null')
    OR (NEW.first_tensor IS NULL) <> (NEW.tail_id IS NULL)
    OR NEW.first_tensor < 0
BEGIN
  SELECT RAISE(ABORT, 'placement_set.first_tensor: not an integer value') WHERE typeof(NEW.first_tensor) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'placement_set.tail_id: not an integer value') WHERE typeof(NEW.tail_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'placement_set.first_tensor: given without tail_id, or tail_id without it') WHERE (NEW.first_tensor IS NULL) <> (NEW.tail_id IS NULL);
  SELECT RAISE(ABORT, 'placement_set.first_tensor: negative') WHERE NEW.first_tensor < 0;
END;

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
    WHERE s.tail_id IS NULL AND json_type(s.items, '$[0]') = 'array'
    UNION ALL
    SELECT sid, start_layer, end_layer, submesh_index, config_index,
           CASE WHEN i < np THEN 0 WHEN i < np + ni THEN 1 ELSE 2 END,
           base + sum(d) OVER (PARTITION BY sid ORDER BY i), spec_id
    FROM (SELECT s.rowid AS sid, s.start_layer AS start_layer, s.end_layer AS end_layer,
                 s.submesh_index AS submesh_index, s.config_index AS config_index,
                 coalesce(s.first_tensor, 0) AS base,
                 json_extract(coalesce(t.items, s.items), '$[0]') AS np,
                 json_extract(coalesce(t.items, s.items), '$[1]') AS ni,
                 (j.key - 3) / 2 AS i, max(CASE WHEN j.key % 2 = 1 THEN j.value END) AS d,
                 max(CASE WHEN j.key % 2 = 0 THEN j.value END) AS spec_id
          FROM placement_set s LEFT JOIN placement_tail t ON t.id = s.tail_id
          JOIN json_each(coalesce(t.items, s.items)) j
          WHERE json_type(coalesce(t.items, s.items), '$[0]') = 'integer' AND j.key >= 3
          GROUP BY s.rowid, i)
  ) x
  JOIN placement_set s ON s.rowid = x.sid
  JOIN placement_tensor t ON t.sweep_id = s.sweep_id AND t.tensor_index = x.ti
  JOIN placement_text n ON n.id = t.name_id
  JOIN placement_text sh ON sh.id = t.shape_id
  JOIN placement_text dt ON dt.id = t.dtype_id
  JOIN placement_text sp ON sp.id = x.spec_id;
