-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 11: the recomputation mode 'op'
-- (docs/variants.md, "Recomputation": torchtitan's per-op selective
-- activation checkpointing). Schema 2 added sweep_config.recompute with a
-- CHECK of its three names; SQLite cannot change a CHECK in place, so the
-- table is rebuilt with the same columns, keys and values and a CHECK that
-- also takes 'op'. costdb/db.c runs this migration with foreign keys off
-- (dropping the old table must not cascade into the entries and
-- placements that reference it) and checks them before it commits. The
-- typeof triggers of schema 4 go with the old table and are made again.

CREATE TABLE sweep_config_v11 (
  sweep_id          INTEGER NOT NULL,
  submesh_index     INTEGER NOT NULL,
  config_index      INTEGER NOT NULL CHECK (config_index >= 0),
  logical_a         INTEGER NOT NULL CHECK (logical_a > 0),
  logical_b         INTEGER NOT NULL CHECK (logical_b > 0),
  force_batch_dim   INTEGER,         -- NULL: no option; else the mesh axis
  memory_level      INTEGER NOT NULL DEFAULT 0 CHECK (memory_level >= 0),
  recompute         TEXT NOT NULL DEFAULT 'none'
                      CHECK (recompute IN ('none', 'selective', 'full', 'op')),
  zero              INTEGER NOT NULL DEFAULT 0 CHECK (zero BETWEEN 0 AND 3),
  PRIMARY KEY (sweep_id, submesh_index, config_index),
  FOREIGN KEY (sweep_id, submesh_index)
    REFERENCES sweep_submesh(sweep_id, submesh_index) ON DELETE CASCADE
) WITHOUT ROWID;

INSERT INTO sweep_config_v11 (sweep_id, submesh_index, config_index, logical_a, logical_b,
                              force_batch_dim, memory_level, recompute, zero)
  SELECT sweep_id, submesh_index, config_index, logical_a, logical_b, force_batch_dim,
         memory_level, recompute, zero
  FROM sweep_config;

DROP TABLE sweep_config;
ALTER TABLE sweep_config_v11 RENAME TO sweep_config;

CREATE TRIGGER strict_sweep_config_insert BEFORE INSERT ON sweep_config
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.logical_a) <> 'integer'
    OR typeof(NEW.logical_b) <> 'integer'
    OR typeof(NEW.force_batch_dim) NOT IN ('integer', 'null')
    OR typeof(NEW.memory_level) <> 'integer'
    OR typeof(NEW.recompute) <> 'text'
    OR typeof(NEW.zero) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'sweep_config.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.logical_a: not an integer value') WHERE typeof(NEW.logical_a) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.logical_b: not an integer value') WHERE typeof(NEW.logical_b) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.force_batch_dim: not an integer value') WHERE typeof(NEW.force_batch_dim) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep_config.memory_level: not an integer value') WHERE typeof(NEW.memory_level) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.recompute: not a text value') WHERE typeof(NEW.recompute) <> 'text';
  SELECT RAISE(ABORT, 'sweep_config.zero: not an integer value') WHERE typeof(NEW.zero) <> 'integer';
END;

CREATE TRIGGER strict_sweep_config_update BEFORE UPDATE ON sweep_config
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.logical_a) <> 'integer'
    OR typeof(NEW.logical_b) <> 'integer'
    OR typeof(NEW.force_batch_dim) NOT IN ('integer', 'null')
    OR typeof(NEW.memory_level) <> 'integer'
    OR typeof(NEW.recompute) <> 'text'
    OR typeof(NEW.zero) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'sweep_config.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.logical_a: not an integer value') WHERE typeof(NEW.logical_a) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.logical_b: not an integer value') WHERE typeof(NEW.logical_b) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.force_batch_dim: not an integer value') WHERE typeof(NEW.force_batch_dim) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep_config.memory_level: not an integer value') WHERE typeof(NEW.memory_level) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_config.recompute: not a text value') WHERE typeof(NEW.recompute) <> 'text';
  SELECT RAISE(ABORT, 'sweep_config.zero: not an integer value') WHERE typeof(NEW.zero) <> 'integer';
END;
