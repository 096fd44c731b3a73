-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 16: cost rows checked by SQLite itself
-- (schemas/README.md, "stage_profile"; docs/performance.md, "Cost rows
-- checked by SQLite itself"). Every cost row approf's writer stored ran
-- schema 4's strict_stage_cost_insert trigger (a sub-program with sixteen
-- typeof() tests) and schema 8's status CHECK, whose IN list of five
-- constants SQLite 3.40 evaluates through an ephemeral table it builds anew
-- for each row (EXPLAIN: OpenEphemeral and five IdxInsert before the row's
-- insert, with no Once around them; a list of two constants is compared in
-- line). Now stage_cost is a STRICT table (SQLite 3.37 and later): SQLite
-- refuses a value of another type itself, after the same conversions the
-- trigger allowed ('2' -> 2 in an INTEGER column, 5 -> 5.0 in a REAL one),
-- naming table and column ("cannot store TEXT value in INTEGER column
-- stage_cost.peak_memory"), on INSERT and UPDATE; and the status CHECK is a
-- chain of comparisons, the same test without the ephemeral table. Rows
-- are copied as they are. A row with a value of another type (written
-- without approf's triggers) cannot be copied: approf checks for one before
-- it migrates and refuses the file, naming the row, leaving it unchanged
-- (costdb/db.c). stage_profile is dropped and made again as schema 15 made
-- it (its INSTEAD OF triggers with it): a view names its tables by name.

DROP VIEW stage_profile;

-- The rows wait in a temporary table, dropped below: ALTER TABLE ...
-- RENAME parses every object of the schema again, ten times the
-- instructions of the rest of this file, and costdb/db.c replays every
-- migration on each open to check a file's schema. Dropping the table drops
-- its triggers; the new one has the old name.
CREATE TEMP TABLE stage_cost_v15 AS SELECT * FROM stage_cost;
DROP TABLE stage_cost;

-- Schema 15's stage_cost, STRICT, with the status CHECK as comparisons.
CREATE TABLE stage_cost (
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
  status              TEXT NOT NULL DEFAULT 'ok'
    CHECK (status = 'ok' OR status = 'oom' OR status = 'failed' OR status = 'timeout'
           OR status = 'skipped'),
  error_id            INTEGER,
  apply_cost          REAL CHECK (apply_cost IS NULL OR apply_cost >= 0),
  wgrad_cost          REAL
    CHECK (wgrad_cost IS NULL OR (wgrad_cost >= 0 AND wgrad_cost <= compute_cost)),
  PRIMARY KEY (sweep_id, cost_id)
) STRICT, WITHOUT ROWID;

INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                        temp_buffer_size, available_memory, intermediate_size, initial_size,
                        repeats, spread, status, error_id, apply_cost, wgrad_cost)
  SELECT sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
         temp_buffer_size, available_memory, intermediate_size, initial_size,
         repeats, spread, status, error_id, apply_cost, wgrad_cost
  FROM temp.stage_cost_v15 ORDER BY sweep_id, cost_id;

DROP TABLE temp.stage_cost_v15;

-- stage_profile and its INSTEAD OF triggers as schema 15 made them.
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

