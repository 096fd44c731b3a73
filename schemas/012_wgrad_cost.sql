-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 12: the weight-gradient seconds of a
-- backward (schemas/README.md, "stage_profile"). The zero-bubble pipeline
-- schedule ZB-H1 (docs/solver.md, "Schedules") splits each backward into
-- the input gradient (B) and the weight gradient (W), and defers W; its
-- price needs each stage's W. stage_cost gains wgrad_cost: the seconds of
-- a backward entry's compute_cost spent computing parameter gradients (the
-- backward kernels the stage program lowers as weight gradients), NULL when
-- unknown: forward entries, CSV imports and every row written before this
-- version, for which apsolve refuses ZB-H1 rather than guess a split. The
-- stage_profile view is made again with the column last, with its INSTEAD
-- OF triggers (dropping a view drops them).

ALTER TABLE stage_cost ADD COLUMN wgrad_cost REAL
  CHECK (wgrad_cost IS NULL OR (wgrad_cost >= 0 AND wgrad_cost <= compute_cost));

DROP VIEW stage_profile;

CREATE VIEW stage_profile AS
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         c.compute_cost AS compute_cost, c.peak_memory AS peak_memory,
         c.invar_size AS invar_size, c.outvar_size AS outvar_size,
         c.temp_buffer_size AS temp_buffer_size, c.available_memory AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         c.error AS error, c.apply_cost AS apply_cost, c.wgrad_cost AS wgrad_cost
  FROM stage_entry e LEFT JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id;

-- Writes through the view. A column left out of an INSERT takes schema 7's
-- default (a view has none of its own).
CREATE TRIGGER stage_profile_insert INSTEAD OF INSERT ON stage_profile
BEGIN
  INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size,
                          temp_buffer_size, available_memory, intermediate_size, initial_size,
                          repeats, spread, status, error, apply_cost, wgrad_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            coalesce(NEW.repeats, 1), coalesce(NEW.spread, 0), coalesce(NEW.status, 'ok'),
            NEW.error, NEW.apply_cost, NEW.wgrad_cost);
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
                          repeats, spread, status, error, apply_cost, wgrad_cost)
    VALUES (NEW.sweep_id,
            (SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = NEW.sweep_id),
            NEW.compute_cost, NEW.peak_memory, NEW.invar_size, NEW.outvar_size,
            NEW.temp_buffer_size, NEW.available_memory, NEW.intermediate_size, NEW.initial_size,
            NEW.repeats, NEW.spread, NEW.status, NEW.error, NEW.apply_cost, NEW.wgrad_cost);
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

-- The new column has its type (schema 4); the older triggers check the rest.
CREATE TRIGGER strict_stage_cost_wgrad_insert BEFORE INSERT ON stage_cost
  WHEN typeof(NEW.wgrad_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.wgrad_cost: not a real value');
END;

CREATE TRIGGER strict_stage_cost_wgrad_update BEFORE UPDATE ON stage_cost
  WHEN typeof(NEW.wgrad_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_cost.wgrad_cost: not a real value');
END;
