-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 14: entries in blocks (schemas/README.md,
-- "stage_profile"). Up to schema 13 each entry was a row of stage_entry: its
-- key, the id of its cost row and the reused flag, 21 bytes of the file for
-- about 7 bytes of information; on llama-3.1-405b, 32x8, every variant, 40
-- layers, that was 15.5 MB. Now approf's writer stores the entries of one
-- (sweep, submesh, range) and 64 configs as one row of stage_entry_block:
-- per config and phase 3 bytes, cost_id * 2 + reused (0: no entry). Entries
-- a block cannot hold (a cost_id past 2^23 - 1) and entries written with
-- SQL stay rows, in stage_entry_row (schema 8's stage_entry, renamed, with
-- its checks and foreign key). stage_entry is now a view over both, with
-- INSTEAD OF triggers that take INSERT, UPDATE and DELETE as the table did:
-- a block's entry that a statement names moves to stage_entry_row first, so
-- that the statement's conflict clause (OR REPLACE, OR IGNORE) meets it
-- there. approf packs the rows already there into blocks as it migrates
-- (costdb/entry_blocks.c). The version bump keeps an older approf, which
-- writes stage_entry as a table, from opening the file.

DROP VIEW stage_profile;

ALTER TABLE stage_entry RENAME TO stage_entry_row;

CREATE TABLE stage_entry_block (
  sweep_id            INTEGER NOT NULL,
  submesh_index       INTEGER NOT NULL,
  start_layer         INTEGER NOT NULL CHECK (start_layer >= 0),
  end_layer           INTEGER NOT NULL,
  config_block        INTEGER NOT NULL CHECK (config_block >= 0),  -- configs 64 * it .. + 63
  -- slot 2 * (config_index % 64) + phase: 3 bytes big-endian, cost_id * 2 + reused
  costs               BLOB NOT NULL CHECK (typeof(costs) = 'blob' AND length(costs) % 3 = 0
                                           AND length(costs) <= 384),
  CHECK (end_layer >= start_layer),
  -- approf's order of profiling, as stage_entry's
  PRIMARY KEY (sweep_id, submesh_index DESC, start_layer, end_layer, config_block),
  FOREIGN KEY (sweep_id, submesh_index)
    REFERENCES sweep_submesh(sweep_id, submesh_index) ON DELETE CASCADE
) WITHOUT ROWID;

-- The entries of the blocks, one row a slot that holds one.
CREATE VIEW stage_entry_slot (sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused) AS
  WITH RECURSIVE slot(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM slot WHERE k < 127)
  SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, v / 2, v % 2
  FROM (SELECT b.sweep_id AS sweep_id, b.start_layer AS start_layer, b.end_layer AS end_layer,
               b.submesh_index AS submesh_index, b.config_block * 64 + s.k / 2 AS config_index,
               s.k % 2 AS phase,
               (instr(X'000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FA0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF', substr(b.costs, 3 * s.k + 1, 1)) - 1) * 65536 + (instr(X'000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FA0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF', substr(b.costs, 3 * s.k + 2, 1)) - 1) * 256 + (instr(X'000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FA0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF', substr(b.costs, 3 * s.k + 3, 1)) - 1) AS v
        FROM stage_entry_block b CROSS JOIN slot s WHERE s.k < length(b.costs) / 3)
  WHERE v > 0;

-- The rows last: SQLite names the origin of a compound view's columns by
-- its last SELECT (costdb/db_row.c).
CREATE VIEW stage_entry (sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused) AS
  SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused FROM stage_entry_slot
  UNION ALL
  SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused FROM stage_entry_row;

CREATE TRIGGER stage_entry_insert INSTEAD OF INSERT ON stage_entry
BEGIN
  INSERT INTO stage_entry_row (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                               cost_id, reused)
    SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused
    FROM stage_entry_slot WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer AND config_index = NEW.config_index AND phase = NEW.phase;
  UPDATE stage_entry_block
    SET costs = CAST(substr(costs, 1, 3 * (2 * (NEW.config_index % 64) + NEW.phase)) || zeroblob(3) || substr(costs, 3 * (2 * (NEW.config_index % 64) + NEW.phase) + 4) AS BLOB)
    WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index
      AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer
      AND config_block = NEW.config_index / 64
      AND EXISTS (SELECT 1 FROM stage_entry_slot WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer AND config_index = NEW.config_index AND phase = NEW.phase);
  INSERT INTO stage_entry_row (sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused)
    VALUES (NEW.sweep_id, NEW.start_layer, NEW.end_layer, NEW.submesh_index, NEW.config_index,
            NEW.phase, NEW.cost_id, coalesce(NEW.reused, 0));
END;

CREATE TRIGGER stage_entry_update INSTEAD OF UPDATE ON stage_entry
BEGIN
  INSERT INTO stage_entry_row (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                               cost_id, reused)
    SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused
    FROM stage_entry_slot WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer AND config_index = OLD.config_index AND phase = OLD.phase;
  UPDATE stage_entry_block
    SET costs = CAST(substr(costs, 1, 3 * (2 * (OLD.config_index % 64) + OLD.phase)) || zeroblob(3) || substr(costs, 3 * (2 * (OLD.config_index % 64) + OLD.phase) + 4) AS BLOB)
    WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index
      AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer
      AND config_block = OLD.config_index / 64
      AND EXISTS (SELECT 1 FROM stage_entry_slot WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer AND config_index = OLD.config_index AND phase = OLD.phase);
  INSERT INTO stage_entry_row (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
                               cost_id, reused)
    SELECT sweep_id, start_layer, end_layer, submesh_index, config_index, phase, cost_id, reused
    FROM stage_entry_slot WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer AND config_index = NEW.config_index AND phase = NEW.phase;
  UPDATE stage_entry_block
    SET costs = CAST(substr(costs, 1, 3 * (2 * (NEW.config_index % 64) + NEW.phase)) || zeroblob(3) || substr(costs, 3 * (2 * (NEW.config_index % 64) + NEW.phase) + 4) AS BLOB)
    WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index
      AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer
      AND config_block = NEW.config_index / 64
      AND EXISTS (SELECT 1 FROM stage_entry_slot WHERE sweep_id = NEW.sweep_id AND submesh_index = NEW.submesh_index AND start_layer = NEW.start_layer AND end_layer = NEW.end_layer AND config_index = NEW.config_index AND phase = NEW.phase);
  UPDATE stage_entry_row
    SET sweep_id = NEW.sweep_id, start_layer = NEW.start_layer, end_layer = NEW.end_layer,
        submesh_index = NEW.submesh_index, config_index = NEW.config_index, phase = NEW.phase,
        cost_id = NEW.cost_id, reused = NEW.reused
    WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer AND config_index = OLD.config_index AND phase = OLD.phase;
END;

CREATE TRIGGER stage_entry_delete INSTEAD OF DELETE ON stage_entry
BEGIN
  UPDATE stage_entry_block
    SET costs = CAST(substr(costs, 1, 3 * (2 * (OLD.config_index % 64) + OLD.phase)) || zeroblob(3) || substr(costs, 3 * (2 * (OLD.config_index % 64) + OLD.phase) + 4) AS BLOB)
    WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index
      AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer
      AND config_block = OLD.config_index / 64
      AND EXISTS (SELECT 1 FROM stage_entry_slot WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer AND config_index = OLD.config_index AND phase = OLD.phase);
  DELETE FROM stage_entry_row WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index AND start_layer = OLD.start_layer AND end_layer = OLD.end_layer AND config_index = OLD.config_index AND phase = OLD.phase;
END;

-- Deleting a config deletes its entries, as the foreign key of
-- stage_entry_row does (a deleted submesh takes its blocks by theirs).
CREATE TRIGGER stage_entry_block_config_delete AFTER DELETE ON sweep_config
  WHEN EXISTS (SELECT 1 FROM sweep_submesh
               WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index)
BEGIN
  UPDATE stage_entry_block
    SET costs = CAST(substr(costs, 1, 6 * (OLD.config_index % 64)) || zeroblob(6)
                     || substr(costs, 6 * (OLD.config_index % 64) + 7) AS BLOB)
    WHERE sweep_id = OLD.sweep_id AND submesh_index = OLD.submesh_index
      AND config_block = OLD.config_index / 64 AND length(costs) > 6 * (OLD.config_index % 64);
END;

-- stage_profile and its INSTEAD OF triggers as schema 12 made them (dropping a
-- view drops its triggers), now over the view stage_entry.
-- An entry joined to its cost row, or with NULL costs where its cost_id
-- names none (schema 8's LEFT JOIN), for the rows and for the slots; CROSS
-- JOIN keeps SQLite's planner from starting at stage_cost and searching the
-- entries of each cost row (a LEFT JOIN becomes a plain join, free to
-- reorder, once a query asks for a cost column not to be NULL). The rows
-- joined to their costs come last: SQLite names the origin of a compound
-- view's columns by its last SELECT, which messages about a bad value
-- name (costdb/db_row.c).
CREATE VIEW stage_profile AS
  SELECT e.sweep_id AS sweep_id, e.start_layer AS start_layer, e.end_layer AS end_layer,
         e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,
         c.compute_cost AS compute_cost, c.peak_memory AS peak_memory,
         c.invar_size AS invar_size, c.outvar_size AS outvar_size,
         c.temp_buffer_size AS temp_buffer_size, c.available_memory AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         c.error AS error, c.apply_cost AS apply_cost, c.wgrad_cost AS wgrad_cost
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
         c.temp_buffer_size AS temp_buffer_size, c.available_memory AS available_memory,
         c.intermediate_size AS intermediate_size, c.initial_size AS initial_size,
         c.repeats AS repeats, c.spread AS spread, e.reused AS reused, c.status AS status,
         c.error AS error, c.apply_cost AS apply_cost, c.wgrad_cost AS wgrad_cost
  FROM stage_entry_row e CROSS JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id;

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

