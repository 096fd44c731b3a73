-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 8: stage costs stored once
-- (schemas/README.md, "stage_profile"). A sweep's entries repeat the same
-- costs many times over: ranges of equal length inside a stack of equal
-- layers, and the variants of a stage that come out the same. A 32-layer
-- GPT sweep with every variant holds 475,272 entries and 73,792 distinct
-- cost rows. The key of each entry stays in stage_entry, with the id of
-- its costs in stage_cost (ids numbered per sweep); stage_profile is now a
-- view that joins the two, with the columns and the order of schema 7's
-- table, and INSTEAD OF triggers make INSERT, UPDATE and DELETE on it work
-- as they did (an insert or update through the view adds a cost row of its
-- own; approf's writer shares them). Existing entries are copied with
-- their costs shared the same way. The version bump keeps an older approf
-- from opening a file whose stage_profile is a view.

CREATE TABLE stage_cost (
  sweep_id            INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,
  cost_id             INTEGER NOT NULL CHECK (cost_id > 0),
  compute_cost        REAL NOT NULL CHECK (compute_cost >= 0),   -- +inf when not ok
  peak_memory         INTEGER NOT NULL CHECK (peak_memory >= 0),
  invar_size          INTEGER NOT NULL CHECK (invar_size >= 0),
  outvar_size         INTEGER NOT NULL CHECK (outvar_size >= 0),
  temp_buffer_size    INTEGER NOT NULL CHECK (temp_buffer_size >= 0),
  available_memory    INTEGER NOT NULL CHECK (available_memory >= 0),
  intermediate_size   INTEGER NOT NULL CHECK (intermediate_size >= 0),
  initial_size        INTEGER NOT NULL CHECK (initial_size >= 0),
  repeats             INTEGER NOT NULL DEFAULT 1,
  spread              REAL NOT NULL DEFAULT 0,
  status              TEXT NOT NULL DEFAULT 'ok' CHECK (status IN
                        ('ok', 'oom', 'failed', 'timeout', 'skipped')),
  error               TEXT,
  apply_cost          REAL CHECK (apply_cost IS NULL OR apply_cost >= 0),
  PRIMARY KEY (sweep_id, cost_id)
) WITHOUT ROWID;

-- No foreign key on cost_id: SQLite would look for the entries of every
-- deleted cost row by scanning stage_entry. A cost_id with no cost row
-- reads as NULL costs through the view, which approf's readers refuse.
CREATE TABLE stage_entry (
  sweep_id            INTEGER NOT NULL,
  start_layer         INTEGER NOT NULL CHECK (start_layer >= 0),
  end_layer           INTEGER NOT NULL,
  submesh_index       INTEGER NOT NULL,
  config_index        INTEGER NOT NULL,
  phase               INTEGER NOT NULL CHECK (phase IN (0, 1)),  -- 0 fwd, 1 bwd
  cost_id             INTEGER NOT NULL,
  reused              INTEGER NOT NULL DEFAULT 0,  -- 1: copied from an identical range
  CHECK (end_layer >= start_layer),
  -- approf's order of profiling (the largest submesh first, as Alpa), so a
  -- sweep appends its entries at the end of the b-tree and fills its pages
  PRIMARY KEY (sweep_id, submesh_index DESC, start_layer, end_layer, config_index, phase),
  FOREIGN KEY (sweep_id, submesh_index, config_index)
    REFERENCES sweep_config(sweep_id, submesh_index, config_index) ON DELETE CASCADE
) WITHOUT ROWID;

-- The entries already there: each distinct cost row of a sweep once,
-- numbered by its columns, then every entry pointing at its row (found
-- through an index made for the copy and dropped after it). Values are
-- copied as they are, with SQL's IS (NULL equals NULL): a row a careless
-- writer left with a wrong type is refused on read, as before, and the
-- typeof triggers below only check what is written from now on.
INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                        temp_buffer_size, available_memory, intermediate_size, initial_size,
                        repeats, spread, status, error, apply_cost)
  SELECT sweep_id,
         row_number() OVER (PARTITION BY sweep_id ORDER BY compute_cost, peak_memory,
                            invar_size, outvar_size, temp_buffer_size, available_memory,
                            intermediate_size, initial_size, repeats, spread, status, error,
                            apply_cost),
         compute_cost, peak_memory, invar_size, outvar_size, temp_buffer_size, available_memory,
         intermediate_size, initial_size, repeats, spread, status, error, apply_cost
  FROM (SELECT DISTINCT sweep_id, compute_cost, peak_memory, invar_size, outvar_size,
               temp_buffer_size, available_memory, intermediate_size, initial_size, repeats,
               spread, status, error, apply_cost
        FROM stage_profile);

CREATE INDEX stage_cost_copy ON stage_cost (sweep_id, compute_cost, peak_memory, invar_size,
  outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size, repeats,
  spread, status, error, apply_cost);

INSERT INTO stage_entry (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                         cost_id, reused)
  SELECT p.sweep_id, p.start_layer, p.end_layer, p.submesh_index, p.config_index, p.phase,
         (SELECT c.cost_id FROM stage_cost c
          WHERE c.sweep_id = p.sweep_id AND c.compute_cost IS p.compute_cost
            AND c.peak_memory IS p.peak_memory AND c.invar_size IS p.invar_size
            AND c.outvar_size IS p.outvar_size AND c.temp_buffer_size IS p.temp_buffer_size
            AND c.available_memory IS p.available_memory
            AND c.intermediate_size IS p.intermediate_size
            AND c.initial_size IS p.initial_size AND c.repeats IS p.repeats
            AND c.spread IS p.spread AND c.status IS p.status AND c.error IS p.error
            AND c.apply_cost IS p.apply_cost),
         p.reused
  FROM stage_profile p
  ORDER BY p.sweep_id, p.submesh_index DESC, p.start_layer, p.end_layer, p.config_index, p.phase;

DROP INDEX stage_cost_copy;

DROP TABLE stage_profile;

CREATE VIEW stage_profile AS
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         c.compute_cost AS compute_cost, c.peak_memory AS peak_memory,
         c.invar_size AS invar_size, c.outvar_size AS outvar_size,
         c.temp_buffer_size AS temp_buffer_size, c.available_memory AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         c.error AS error, c.apply_cost AS apply_cost
  FROM stage_entry e LEFT JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id;

-- Writes through the view. A column left out of an INSERT takes schema 7's
-- default (a view has none of its own).
CREATE TRIGGER stage_profile_insert INSTEAD OF INSERT ON stage_profile
BEGIN
  INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                          temp_buffer_size, available_memory, intermediate_size, initial_size,
                          repeats, spread, status, error, apply_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            coalesce(NEW.repeats, 1), coalesce(NEW.spread, 0), coalesce(NEW.status, 'ok'),
            NEW.error, NEW.apply_cost);
  INSERT INTO stage_entry (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                           cost_id, reused)
    VALUES (NEW.sweep_id, NEW.start_layer, NEW.end_layer, NEW.submesh_index, NEW.config_index,
            NEW.phase,
            (SELECT max(cost_id) FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            coalesce(NEW.reused, 0));
END;

CREATE TRIGGER stage_profile_update INSTEAD OF UPDATE ON stage_profile
BEGIN
  INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                          temp_buffer_size, available_memory, intermediate_size, initial_size,
                          repeats, spread, status, error, apply_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            NEW.repeats, NEW.spread, NEW.status, NEW.error, NEW.apply_cost);
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
    OR typeof(NEW.available_memory) <> 'integer'
    OR typeof(NEW.intermediate_size) <> 'integer'
    OR typeof(NEW.initial_size) <> 'integer'
    OR typeof(NEW.repeats) <> 'integer'
    OR typeof(NEW.spread) <> 'real'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error) NOT IN ('text', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_cost.error: not a text value') WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'stage_cost.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_stage_cost_update BEFORE UPDATE ON stage_cost
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.cost_id) <> 'integer'
    OR typeof(NEW.compute_cost) <> 'real'
    OR typeof(NEW.peak_memory) <> 'integer'
    OR typeof(NEW.invar_size) <> 'integer'
    OR typeof(NEW.outvar_size) <> 'integer'
    OR typeof(NEW.temp_buffer_size) <> 'integer'
    OR typeof(NEW.available_memory) <> 'integer'
    OR typeof(NEW.intermediate_size) <> 'integer'
    OR typeof(NEW.initial_size) <> 'integer'
    OR typeof(NEW.repeats) <> 'integer'
    OR typeof(NEW.spread) <> 'real'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error) NOT IN ('text', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_cost.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_cost.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_cost.error: not a text value') WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'stage_cost.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_stage_entry_insert BEFORE INSERT ON stage_entry
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.phase) <> 'integer'
    OR typeof(NEW.cost_id) <> 'integer'
    OR typeof(NEW.reused) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'stage_entry.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.phase: not an integer value') WHERE typeof(NEW.phase) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.reused: not an integer value') WHERE typeof(NEW.reused) <> 'integer';
END;

CREATE TRIGGER strict_stage_entry_update BEFORE UPDATE ON stage_entry
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.phase) <> 'integer'
    OR typeof(NEW.cost_id) <> 'integer'
    OR typeof(NEW.reused) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'stage_entry.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.phase: not an integer value') WHERE typeof(NEW.phase) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.cost_id: not an integer value') WHERE typeof(NEW.cost_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_entry.reused: not an integer value') WHERE typeof(NEW.reused) <> 'integer';
END;
