-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 9: GEMM rates per shape
-- (schemas/README.md, "gemm_profile"). compute_profile holds one rate per
-- square size; a GPU is not smooth in M, N and K (a tile count that leaves
-- a partial last wave, a short K loop), so `approf probe` now also measures
-- a grid of (m, n, k) per dtype, and the analytic backend prices a GEMM on
-- a hardware row that has such points from them (interpolated in log2 of
-- each size: hw/gemm_table.c). Nothing is copied: a file of schema 8 has no
-- points, and approf reads it as having none.

CREATE TABLE gemm_profile (
  hardware_id   INTEGER NOT NULL REFERENCES hardware(id) ON DELETE CASCADE,
  dtype         TEXT NOT NULL,     -- 'bf16', 'f16', ...
  m             INTEGER NOT NULL CHECK (m > 0),
  n             INTEGER NOT NULL CHECK (n > 0),
  k             INTEGER NOT NULL CHECK (k > 0),
  rate          REAL NOT NULL CHECK (rate > 0),   -- FLOP/s: 2 m n k / seconds
  PRIMARY KEY (hardware_id, dtype, m, n, k)
) WITHOUT ROWID;

CREATE TRIGGER strict_gemm_profile_insert BEFORE INSERT ON gemm_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.m) <> 'integer'
    OR typeof(NEW.n) <> 'integer'
    OR typeof(NEW.k) <> 'integer'
    OR typeof(NEW.rate) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'gemm_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'gemm_profile.m: not an integer value') WHERE typeof(NEW.m) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.n: not an integer value') WHERE typeof(NEW.n) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.k: not an integer value') WHERE typeof(NEW.k) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.rate: not a real value') WHERE typeof(NEW.rate) <> 'real';
END;

CREATE TRIGGER strict_gemm_profile_update BEFORE UPDATE ON gemm_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.m) <> 'integer'
    OR typeof(NEW.n) <> 'integer'
    OR typeof(NEW.k) <> 'integer'
    OR typeof(NEW.rate) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'gemm_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'gemm_profile.m: not an integer value') WHERE typeof(NEW.m) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.n: not an integer value') WHERE typeof(NEW.n) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.k: not an integer value') WHERE typeof(NEW.k) <> 'integer';
  SELECT RAISE(ABORT, 'gemm_profile.rate: not a real value') WHERE typeof(NEW.rate) <> 'real';
END;
