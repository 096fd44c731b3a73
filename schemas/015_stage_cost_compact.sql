-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 15: compact cost rows
-- (schemas/README.md, "stage_profile"; docs/performance.md, "Compact cost
-- rows"). On llama-3.1-405b, 32x8, every variant, stage_cost was most of
-- the file: each out-of-memory row carried its error text ("needs 768.6
-- GiB, 79.1 GiB available on h100-sxm"; 29 bytes a row on average over all
-- rows) and every row the sweep's one available_memory (6 bytes). Now:
-- - stage_error holds every distinct error text once (shared by all
--   sweeps, never deleted, like placement_text), a cost row its id in
--   error_id (NULL: no error);
-- - stage_cost_sweep holds a sweep's available_memory, and a cost row NULL
--   in available_memory when it has that value (any other value stays in
--   the row).
-- The view stage_profile gives the same rows as before, with the text and
-- the value in place; its INSTEAD OF triggers put a written error text in
-- stage_error. Rows already there are copied with their values as they
-- are; a sweep's available_memory is the integer most of its cost rows
-- hold. The version bump keeps an older approf, which writes error text
-- into stage_cost, from opening the file.

DROP VIEW stage_profile;

CREATE TABLE stage_error (
  id                  INTEGER PRIMARY KEY,
  text                TEXT NOT NULL UNIQUE
);

CREATE TABLE stage_cost_sweep (
  sweep_id            INTEGER PRIMARY KEY REFERENCES sweep(id) ON DELETE CASCADE,
  available_memory    INTEGER NOT NULL CHECK (available_memory >= 0)
);

-- The texts in their order, so that equal files number them the same.
INSERT INTO stage_error (text)
  SELECT DISTINCT error FROM stage_cost WHERE error IS NOT NULL ORDER BY error;

-- A sweep's available_memory: the integer most of its cost rows hold (the
-- smallest of those as common).
INSERT INTO stage_cost_sweep (sweep_id, available_memory)
  SELECT sweep_id, available_memory
  FROM (SELECT sweep_id, available_memory,
               row_number() OVER (PARTITION BY sweep_id
                                  ORDER BY count(*) DESC, available_memory) AS r
        FROM stage_cost WHERE typeof(available_memory) = 'integer' AND available_memory >= 0
        GROUP BY sweep_id, available_memory)
  WHERE r = 1;

-- Schema 8's stage_cost with schema 12's wgrad_cost, available_memory NULL
-- for the sweep's (stage_cost_sweep) and error_id in place of error. No
-- foreign key on error_id: texts are never deleted, and readers refuse an
-- id that names none.
CREATE TABLE stage_cost_v15 (
  sweep_id            INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,
  cost_id             INTEGER NOT NULL CHECK (cost_id > 0),
  compute_cost        REAL NOT NULL CHECK (compute_cost >= 0),
  peak_memory         INTEGER NOT NULL CHECK (peak_memory >= 0),
  invar_size          INTEGER NOT NULL CHECK (invar_size >= 0),
  outvar_size         INTEGER NOT NULL CHECK (outvar_size >= 0),
  temp_buffer_size    INTEGER NOT NULL CHECK (temp_buffer_size >= 0),
  available_memory    INTEGER CHECK (available_memory IS NULL OR available_memory >= 0),
  intermediate_size   INTEGER NOT NULL CHECK (intermediate_size >= 0),
  initial_size        INTEGER NOT NULL CHECK (initial_size >= 0),
  repeats             INTEGER NOT NULL DEFAULT 1,
  spread              REAL NOT NULL DEFAULT 0,
  status              TEXT NOT NULL DEFAULT 'ok' CHECK (status IN
                        ('ok', 'oom', 'failed', 'timeout', 'skipped')),
  error_id            INTEGER,
  apply_cost          REAL CHECK (apply_cost IS NULL OR apply_cost >= 0),
  wgrad_cost          REAL
    CHECK (wgrad_cost IS NULL OR (wgrad_cost >= 0 AND wgrad_cost <= compute_cost)),
  PRIMARY KEY (sweep_id, cost_id)
) WITHOUT ROWID;

INSERT INTO stage_cost_v15 (sweep_id, cost_id, compute_cost, peak_memory, invar_size,
                            outvar_size, temp_buffer_size, available_memory, intermediate_size,
                            initial_size, repeats, spread, status, error_id, apply_cost,
                            wgrad_cost)
  SELECT c.sweep_id, c.cost_id, c.compute_cost, c.peak_memory, c.invar_size, c.outvar_size,
         c.temp_buffer_size,
         CASE WHEN typeof(c.available_memory) = 'integer'
                   AND c.available_memory = (SELECT m.available_memory FROM stage_cost_sweep m
                                             WHERE m.sweep_id = c.sweep_id)
              THEN NULL ELSE c.available_memory END,
         c.intermediate_size, c.initial_size, c.repeats, c.spread, c.status,
         (SELECT x.id FROM stage_error x WHERE x.text = c.error), c.apply_cost, c.wgrad_cost
  FROM stage_cost c ORDER BY c.sweep_id, c.cost_id;

DROP TABLE stage_cost;

ALTER TABLE stage_cost_v15 RENAME TO stage_cost;

-- stage_profile and its INSTEAD OF triggers as schema 14 made them, with the
-- error text and the sweep's available_memory put back in place. An
-- error_id that names no text reads as the id itself (an integer where a
-- text belongs), which approf's readers refuse.
CREATE VIEW stage_profile AS
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         c.compute_cost AS compute_cost, c.peak_memory AS peak_memory,
         c.invar_size AS invar_size, c.outvar_size AS outvar_size,
         c.temp_buffer_size AS temp_buffer_size, coalesce(c.available_memory, (SELECT m.available_memory FROM stage_cost_sweep m
                                    WHERE m.sweep_id = c.sweep_id)) AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         CASE WHEN c.error_id IS NULL THEN NULL
              ELSE coalesce((SELECT x.text FROM stage_error x WHERE x.id = c.error_id), c.error_id)
         END AS error, c.apply_cost AS apply_cost, c.wgrad_cost AS wgrad_cost
  FROM stage_entry_slot e CROSS JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id
  UNION ALL
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.reused, NULL, NULL, NULL,
         NULL
  FROM stage_entry_slot e WHERE NOT EXISTS (SELECT 1 FROM stage_cost c
                              WHERE c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id)
  UNION ALL
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.reused, NULL, NULL, NULL,
         NULL
  FROM stage_entry_row e WHERE NOT EXISTS (SELECT 1 FROM stage_cost c
                              WHERE c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id)
  UNION ALL
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         c.compute_cost AS compute_cost, c.peak_memory AS peak_memory,
         c.invar_size AS invar_size, c.outvar_size AS outvar_size,
         c.temp_buffer_size AS temp_buffer_size, coalesce(c.available_memory, (SELECT m.available_memory FROM stage_cost_sweep m
                                    WHERE m.sweep_id = c.sweep_id)) AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         CASE WHEN c.error_id IS NULL THEN NULL
              ELSE coalesce((SELECT x.text FROM stage_error x WHERE x.id = c.error_id), c.error_id)
         END AS error, c.apply_cost AS apply_cost, c.wgrad_cost AS wgrad_cost
  FROM stage_entry_row e CROSS JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id;

-- Writes through the view. A column left out of an INSERT takes schema 7's
-- default (a view has none of its own).
-- Writes through the view. A column left out of an INSERT takes schema 7's
-- default (a view has none of its own). The error text goes to stage_error
-- (once), the cost row holds its id; available_memory stays in the row.
CREATE TRIGGER stage_profile_insert INSTEAD OF INSERT ON stage_profile
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.error: not a text value')
    WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: stage_cost.available_memory')
    WHERE NEW.available_memory IS NULL;
  INSERT INTO stage_error (text) SELECT NEW.error
    WHERE NEW.error IS NOT NULL AND NOT EXISTS (SELECT 1 FROM stage_error WHERE text = NEW.error);
  INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                          temp_buffer_size, available_memory, intermediate_size, initial_size,
                          repeats, spread, status, error_id, apply_cost, wgrad_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            coalesce(NEW.repeats, 1), coalesce(NEW.spread, 0), coalesce(NEW.status, 'ok'),
            (SELECT id FROM stage_error WHERE text = NEW.error), NEW.apply_cost, NEW.wgrad_cost);
  INSERT INTO stage_entry (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                           cost_id, reused)
    VALUES (NEW.sweep_id, NEW.start_layer, NEW.end_layer, NEW.submesh_index, NEW.config_index,
            NEW.phase,
            (SELECT max(cost_id) FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            coalesce(NEW.reused, 0));
END;

CREATE TRIGGER stage_profile_update INSTEAD OF UPDATE ON stage_profile
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.error: not a text value')
    WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: stage_cost.available_memory')
    WHERE NEW.available_memory IS NULL;
  INSERT INTO stage_error (text) SELECT NEW.error
    WHERE NEW.error IS NOT NULL AND NOT EXISTS (SELECT 1 FROM stage_error WHERE text = NEW.error);
  INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                          temp_buffer_size, available_memory, intermediate_size, initial_size,
                          repeats, spread, status, error_id, apply_cost, wgrad_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            NEW.repeats, NEW.spread, NEW.status,
            (SELECT id FROM stage_error WHERE text = NEW.error), NEW.apply_cost, NEW.wgrad_cost);
  UPDATE stage_entry
    SET sweep_id = NEW.sweep_id, start_layer = NEW.start_layer, end_layer = NEW.end_layer,
        submesh_index = NEW.submesh_index, config_index = NEW.config_index, phase = NEW.phase,
        cost_id = (SELECT max(cost_id) FROM stage_cost WHERE sweep_id = NEW.sweep_id),
        reused = NEW.reused
    WHERE sweep_id = OLD.sweep_id AND start_layer = OLD.start_layer
      AND end_layer = OLD.end_layer AND submesh_index = OLD.submesh_index
      AND config_index = OLD.config_index AND phase = OLD.phase;
END;

CREATE TRIGGER stage_profile_delete INSTEAD OF DELETE ON stage_profile
BEGIN
  DELETE FROM stage_entry
    WHERE sweep_id = OLD.sweep_id AND start_layer = OLD.start_layer
      AND end_layer = OLD.end_layer AND submesh_index = OLD.submesh_index
      AND config_index = OLD.config_index AND phase = OLD.phase;
END;

-- Every value has its column's type (schema 4).
CREATE TRIGGER strict_stage_cost_insert BEFORE INSERT ON stage_cost
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.cost_id) <> 'integer'
    OR typeof(NEW.compute_cost) <> 'real'
    OR typeof(NEW.peak_memory) <> 'integer'
    OR typeof(NEW.invar_size) <> 'integer'
    OR typeof(NEW.outvar_size) <> 'integer'
    OR typeof(NEW.temp_buffer_size) <> 'integer'
    OR typeof(NEW.available_memory) NOT IN ('integer', 'null')
    OR typeof(NEW.intermediate_size) <> 'integer'
    OR typeof(NEW.initial_size) <> 'integer'
    OR typeof(NEW.repeats) <> 'integer'
    OR typeof(NEW.spread) <> 'real'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error_id) NOT IN ('integer', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
    OR typeof(NEW.wgrad_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.available_memory: not an integer value') WHERE typeof(NEW.available_memory) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'stage_cost.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_cost.error_id: not an integer value') WHERE typeof(NEW.error_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'stage_cost.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'stage_cost.wgrad_cost: not a real value') WHERE typeof(NEW.wgrad_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_stage_cost_update BEFORE UPDATE ON stage_cost
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.cost_id) <> 'integer'
    OR typeof(NEW.compute_cost) <> 'real'
    OR typeof(NEW.peak_memory) <> 'integer'
    OR typeof(NEW.invar_size) <> 'integer'
    OR typeof(NEW.outvar_size) <> 'integer'
    OR typeof(NEW.temp_buffer_size) <> 'integer'
    OR typeof(NEW.available_memory) NOT IN ('integer', 'null')
    OR typeof(NEW.intermediate_size) <> 'integer'
    OR typeof(NEW.initial_size) <> 'integer'
    OR typeof(NEW.repeats) <> 'integer'
    OR typeof(NEW.spread) <> 'real'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error_id) NOT IN ('integer', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
    OR typeof(NEW.wgrad_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.available_memory: not an integer value') WHERE typeof(NEW.available_memory) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'stage_cost.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_cost.error_id: not an integer value') WHERE typeof(NEW.error_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'stage_cost.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'stage_cost.wgrad_cost: not a real value') WHERE typeof(NEW.wgrad_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_stage_error_insert BEFORE INSERT ON stage_error
  WHEN typeof(NEW.id) <> 'integer'
    OR typeof(NEW.text) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'stage_error.id: not an integer value') WHERE typeof(NEW.id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_error.text: not a text value') WHERE typeof(NEW.text) <> 'text';
END;

CREATE TRIGGER strict_stage_error_update BEFORE UPDATE ON stage_error
  WHEN typeof(NEW.id) <> 'integer'
    OR typeof(NEW.text) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'stage_error.id: not an integer value') WHERE typeof(NEW.id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_error.text: not a text value') WHERE typeof(NEW.text) <> 'text';
END;

CREATE TRIGGER strict_stage_cost_sweep_insert BEFORE INSERT ON stage_cost_sweep
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.available_memory) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'stage_cost_sweep.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost_sweep.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
END;

CREATE TRIGGER strict_stage_cost_sweep_update BEFORE UPDATE ON stage_cost_sweep
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.available_memory) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'stage_cost_sweep.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost_sweep.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
END;
