-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 2: stage variants (docs/variants.md).
-- A variant is one more sweep_config row of its submesh; the defaults make
-- every config of a schema-1 database Alpa's plain config (memory level 0,
-- no recomputation, no ZeRO). Documented in schemas/README.md.

-- Which point of the stage's time-versus-memory Pareto set (0: the fastest).
ALTER TABLE sweep_config ADD COLUMN memory_level INTEGER NOT NULL DEFAULT 0
  CHECK (memory_level >= 0);
-- Activation recomputation of the stage.
ALTER TABLE sweep_config ADD COLUMN recompute TEXT NOT NULL DEFAULT 'none'
  CHECK (recompute IN ('none', 'selective', 'full'));
-- ZeRO stage across the data-parallel replicas: 0 none, 1 optimizer state,
-- 2 + gradients, 3 + parameters.
ALTER TABLE sweep_config ADD COLUMN zero INTEGER NOT NULL DEFAULT 0
  CHECK (zero BETWEEN 0 AND 3);

-- Seconds spent once per iteration after the last backward (gradient sync
-- and optimizer step, as ZeRO shards them); NULL: unknown.
ALTER TABLE stage_profile ADD COLUMN apply_cost REAL
  CHECK (apply_cost IS NULL OR apply_cost >= 0);
