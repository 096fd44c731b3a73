-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 1. Documented in schemas/README.md.
-- Sizes are bytes (INTEGER), times are seconds (REAL; +inf allowed for costs),
-- timestamps are ISO-8601 UTC text.

-- A machine type: an analytic spec (kind 'analytic', spec_name set) or a
-- measured machine (kind 'measured', driver/CUDA/NCCL versions set).
CREATE TABLE hardware (
  id                    INTEGER PRIMARY KEY,
  fingerprint           TEXT NOT NULL UNIQUE,
  kind                  TEXT NOT NULL CHECK (kind IN ('analytic', 'measured', 'imported')),
  spec_name             TEXT,
  gpu_model             TEXT NOT NULL,
  gpus_per_host         INTEGER NOT NULL CHECK (gpus_per_host > 0),
  device_memory         INTEGER NOT NULL CHECK (device_memory >= 0),
  driver_version        TEXT,
  cuda_version          TEXT,
  nccl_version          TEXT,
  interconnect          TEXT,
  peak_flops_f32        REAL,
  peak_flops_f16        REAL,
  peak_flops_bf16       REAL,
  memory_bandwidth      REAL,
  intra_host_bandwidth  REAL,
  intra_host_latency    REAL,
  inter_host_bandwidth  REAL,
  inter_host_latency    REAL,
  capabilities          TEXT,      -- JSON object: anything else measured or specified
  created_at            TEXT NOT NULL
);

-- Measured collective curves (Alpa's mesh_profiling database, in bytes).
CREATE TABLE comm_profile (
  hardware_id   INTEGER NOT NULL REFERENCES hardware(id) ON DELETE CASCADE,
  collective    TEXT NOT NULL CHECK (collective IN
                  ('all-reduce', 'all-gather', 'reduce-scatter', 'all-to-all', 'send-recv')),
  group_desc    TEXT NOT NULL,     -- e.g. '1x8' or replica groups '[[0,1],[2,3]]'
  dtype         TEXT NOT NULL,
  bytes         INTEGER NOT NULL CHECK (bytes > 0),
  seconds       REAL NOT NULL CHECK (seconds >= 0),
  PRIMARY KEY (hardware_id, collective, group_desc, dtype, bytes)
) WITHOUT ROWID;

-- Measured compute curves: 'gemm' FLOP/s per size, 'memcpy' bytes/s.
CREATE TABLE compute_profile (
  hardware_id   INTEGER NOT NULL REFERENCES hardware(id) ON DELETE CASCADE,
  op            TEXT NOT NULL,
  dtype         TEXT NOT NULL,
  size          INTEGER NOT NULL,
  rate          REAL NOT NULL,
  PRIMARY KEY (hardware_id, op, dtype, size)
) WITHOUT ROWID;

-- A model after layer construction. signature hashes the operator graph and
-- the layer split, so equal signatures mean comparable entries across files.
CREATE TABLE model (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  signature     TEXT NOT NULL UNIQUE,
  graph_hash    TEXT NOT NULL,
  options       TEXT,              -- JSON: zoo options (preset, dataset, ...)
  dtype         TEXT NOT NULL,
  batch_size    INTEGER NOT NULL CHECK (batch_size > 0),
  num_params    INTEGER NOT NULL CHECK (num_params >= 0),
  num_layers    INTEGER NOT NULL CHECK (num_layers > 0),
  layer_option  TEXT NOT NULL,     -- 'auto:eps=0.5' | 'manual' | 'imported'
  created_at    TEXT NOT NULL
);

CREATE TABLE model_layer (
  model_id          INTEGER NOT NULL REFERENCES model(id) ON DELETE CASCADE,
  layer_index       INTEGER NOT NULL CHECK (layer_index >= 0),
  op_begin          INTEGER NOT NULL,
  op_end            INTEGER NOT NULL, -- exclusive
  fwd_flops         REAL NOT NULL,
  bwd_flops         REAL NOT NULL,
  param_bytes       INTEGER NOT NULL,
  activation_bytes  INTEGER NOT NULL,
  inbound_bytes     INTEGER NOT NULL,
  PRIMARY KEY (model_id, layer_index)
) WITHOUT ROWID;

-- One profiling run (or one imported cost table).
CREATE TABLE sweep (
  id                INTEGER PRIMARY KEY,
  name              TEXT,
  model_id          INTEGER REFERENCES model(id),
  hardware_id       INTEGER REFERENCES hardware(id),
  cluster_hosts     INTEGER NOT NULL CHECK (cluster_hosts > 0),
  cluster_gpus      INTEGER NOT NULL CHECK (cluster_gpus > 0),
  global_batch      INTEGER NOT NULL CHECK (global_batch > 0),
  micro_batches     INTEGER NOT NULL CHECK (micro_batches > 0),
  num_layers        INTEGER NOT NULL CHECK (num_layers > 0),
  layer_option      TEXT NOT NULL,
  submesh_space     TEXT NOT NULL,
  logical_space     TEXT NOT NULL,
  profile_mode      TEXT NOT NULL DEFAULT 'composition',
  dtype             TEXT NOT NULL DEFAULT 'f32',
  backend           TEXT NOT NULL,   -- 'model' | 'cuda' | 'import'
  tool_version      TEXT NOT NULL,
  options           TEXT,            -- JSON: everything else that shaped the sweep
  shard             TEXT,            -- 'K/N' when the sweep is one shard of a split
  source            TEXT,            -- e.g. the CSV file an import came from
  started_at        TEXT NOT NULL,
  finished_at       TEXT,
  status            TEXT NOT NULL CHECK (status IN
                      ('running', 'complete', 'interrupted', 'failed', 'imported'))
);

CREATE TABLE sweep_submesh (
  sweep_id        INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,
  submesh_index   INTEGER NOT NULL CHECK (submesh_index >= 0),
  hosts           INTEGER NOT NULL CHECK (hosts > 0),
  gpus_per_host   INTEGER NOT NULL CHECK (gpus_per_host > 0),
  PRIMARY KEY (sweep_id, submesh_index),
  UNIQUE (sweep_id, hosts, gpus_per_host)
) WITHOUT ROWID;

CREATE TABLE sweep_config (
  sweep_id          INTEGER NOT NULL,
  submesh_index     INTEGER NOT NULL,
  config_index      INTEGER NOT NULL CHECK (config_index >= 0),
  logical_a         INTEGER NOT NULL CHECK (logical_a > 0),
  logical_b         INTEGER NOT NULL CHECK (logical_b > 0),
  force_batch_dim   INTEGER,         -- NULL: no option; else the mesh axis
  PRIMARY KEY (sweep_id, submesh_index, config_index),
  FOREIGN KEY (sweep_id, submesh_index)
    REFERENCES sweep_submesh(sweep_id, submesh_index) ON DELETE CASCADE
) WITHOUT ROWID;

-- One ModuleProfileResult: (sweep, i, j, s, c, phase).
CREATE TABLE stage_profile (
  sweep_id            INTEGER NOT NULL,
  start_layer         INTEGER NOT NULL CHECK (start_layer >= 0),
  end_layer           INTEGER NOT NULL,
  submesh_index       INTEGER NOT NULL,
  config_index        INTEGER NOT NULL,
  phase               INTEGER NOT NULL CHECK (phase IN (0, 1)),  -- 0 fwd, 1 bwd
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
  reused              INTEGER NOT NULL DEFAULT 0,  -- 1: copied from an identical range
  status              TEXT NOT NULL DEFAULT 'ok' CHECK (status IN
                        ('ok', 'oom', 'failed', 'timeout', 'skipped')),
  error               TEXT,
  CHECK (end_layer >= start_layer),
  PRIMARY KEY (sweep_id, start_layer, end_layer, submesh_index, config_index, phase),
  FOREIGN KEY (sweep_id, submesh_index, config_index)
    REFERENCES sweep_config(sweep_id, submesh_index, config_index) ON DELETE CASCADE
) WITHOUT ROWID;

-- Sharding of every parameter, input and output of a stage.
CREATE TABLE placement (
  sweep_id        INTEGER NOT NULL,
  start_layer     INTEGER NOT NULL,
  end_layer       INTEGER NOT NULL,
  submesh_index   INTEGER NOT NULL,
  config_index    INTEGER NOT NULL,
  tensor_index    INTEGER NOT NULL,
  tensor_name     TEXT NOT NULL,
  role            TEXT NOT NULL CHECK (role IN ('param', 'input', 'output')),
  shape           TEXT NOT NULL,   -- '2048,8192'
  dtype           TEXT NOT NULL,
  sharding_spec   TEXT NOT NULL,   -- Alpa's ShardingSpec(...) text
  PRIMARY KEY (sweep_id, start_layer, end_layer, submesh_index, config_index, role, tensor_index),
  FOREIGN KEY (sweep_id, submesh_index, config_index)
    REFERENCES sweep_config(sweep_id, submesh_index, config_index) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE plan (
  id              INTEGER PRIMARY KEY,
  sweep_id        INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,
  kind            TEXT NOT NULL CHECK (kind IN ('auto', 'manual', 'uniform', '3d')),
  objective       TEXT NOT NULL CHECK (objective IN ('training', 'inference')),
  micro_batches   INTEGER NOT NULL CHECK (micro_batches > 0),
  global_batch    INTEGER,
  memory_budget   INTEGER,
  max_stages      INTEGER,
  cost            REAL NOT NULL,     -- Alpa's objective T
  full_cost       REAL,              -- T plus transfers, grad sync, optimizer
  feasible        INTEGER NOT NULL DEFAULT 1,
  solve_seconds   REAL,
  options         TEXT,              -- JSON: the inputs that produced the plan
  created_at      TEXT NOT NULL
);

CREATE TABLE plan_stage (
  plan_id           INTEGER NOT NULL REFERENCES plan(id) ON DELETE CASCADE,
  stage_index       INTEGER NOT NULL,
  start_layer       INTEGER NOT NULL,
  end_layer         INTEGER NOT NULL,
  submesh_index     INTEGER,
  submesh_hosts     INTEGER NOT NULL,
  submesh_gpus      INTEGER NOT NULL,
  config_index      INTEGER,
  logical_a         INTEGER NOT NULL,
  logical_b         INTEGER NOT NULL,
  force_batch_dim   INTEGER,
  fwd_cost          REAL NOT NULL,
  bwd_cost          REAL NOT NULL,
  peak_memory       INTEGER NOT NULL,
  memory_needed     INTEGER NOT NULL,  -- peak + initial + in-flight intermediates
  available_memory  INTEGER NOT NULL,
  PRIMARY KEY (plan_id, stage_index)
) WITHOUT ROWID;

CREATE TABLE resharding_task (
  plan_id         INTEGER NOT NULL REFERENCES plan(id) ON DELETE CASCADE,
  task_index      INTEGER NOT NULL,
  src_stage       INTEGER NOT NULL,
  dst_stage       INTEGER NOT NULL,
  tensor_name     TEXT NOT NULL,
  shape           TEXT NOT NULL,
  dtype           TEXT NOT NULL,
  src_spec        TEXT NOT NULL,
  dst_spec        TEXT NOT NULL,
  bytes           INTEGER NOT NULL,
  strategy        TEXT NOT NULL,   -- 'send-recv' | 'broadcast' | 'local-allgather'
  seconds         REAL NOT NULL,
  PRIMARY KEY (plan_id, task_index)
) WITHOUT ROWID;

CREATE INDEX sweep_by_model ON sweep(model_id);
CREATE INDEX plan_by_sweep ON plan(sweep_id);
