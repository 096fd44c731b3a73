-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 4: every value has its column's type
-- (schemas/README.md, "Types"). SQLite's type affinity lets text into
-- INTEGER and REAL columns ('lots' in peak_memory passes peak_memory >= 0,
-- since text sorts after numbers) and such a value reads as 0. STRICT tables
-- would need SQLite 3.37 and a rebuild of every table; these triggers check
-- typeof() on every INSERT and UPDATE instead, after affinity has converted
-- what can be converted ('2' -> 2). The WHEN clause is the fast path; the
-- body names the first offending column. Rows already in a schema-3 file are
-- not rewritten: costdb's readers check each value's type when they read it
-- and refuse the row, naming table, key and column.

CREATE TRIGGER strict_hardware_insert BEFORE INSERT ON hardware
  WHEN typeof(NEW.fingerprint) <> 'text'
    OR typeof(NEW.kind) <> 'text'
    OR typeof(NEW.spec_name) NOT IN ('text', 'null')
    OR typeof(NEW.gpu_model) <> 'text'
    OR typeof(NEW.gpus_per_host) <> 'integer'
    OR typeof(NEW.device_memory) <> 'integer'
    OR typeof(NEW.driver_version) NOT IN ('text', 'null')
    OR typeof(NEW.cuda_version) NOT IN ('text', 'null')
    OR typeof(NEW.nccl_version) NOT IN ('text', 'null')
    OR typeof(NEW.interconnect) NOT IN ('text', 'null')
    OR typeof(NEW.peak_flops_f32) NOT IN ('real', 'null')
    OR typeof(NEW.peak_flops_f16) NOT IN ('real', 'null')
    OR typeof(NEW.peak_flops_bf16) NOT IN ('real', 'null')
    OR typeof(NEW.memory_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.intra_host_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.intra_host_latency) NOT IN ('real', 'null')
    OR typeof(NEW.inter_host_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.inter_host_latency) NOT IN ('real', 'null')
    OR typeof(NEW.capabilities) NOT IN ('text', 'null')
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'hardware.fingerprint: not a text value') WHERE typeof(NEW.fingerprint) <> 'text';
  SELECT RAISE(ABORT, 'hardware.kind: not a text value') WHERE typeof(NEW.kind) <> 'text';
  SELECT RAISE(ABORT, 'hardware.spec_name: not a text value') WHERE typeof(NEW.spec_name) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.gpu_model: not a text value') WHERE typeof(NEW.gpu_model) <> 'text';
  SELECT RAISE(ABORT, 'hardware.gpus_per_host: not an integer value') WHERE typeof(NEW.gpus_per_host) <> 'integer';
  SELECT RAISE(ABORT, 'hardware.device_memory: not an integer value') WHERE typeof(NEW.device_memory) <> 'integer';
  SELECT RAISE(ABORT, 'hardware.driver_version: not a text value') WHERE typeof(NEW.driver_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.cuda_version: not a text value') WHERE typeof(NEW.cuda_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.nccl_version: not a text value') WHERE typeof(NEW.nccl_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.interconnect: not a text value') WHERE typeof(NEW.interconnect) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_f32: not a real value') WHERE typeof(NEW.peak_flops_f32) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_f16: not a real value') WHERE typeof(NEW.peak_flops_f16) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_bf16: not a real value') WHERE typeof(NEW.peak_flops_bf16) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.memory_bandwidth: not a real value') WHERE typeof(NEW.memory_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.intra_host_bandwidth: not a real value') WHERE typeof(NEW.intra_host_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.intra_host_latency: not a real value') WHERE typeof(NEW.intra_host_latency) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.inter_host_bandwidth: not a real value') WHERE typeof(NEW.inter_host_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.inter_host_latency: not a real value') WHERE typeof(NEW.inter_host_latency) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.capabilities: not a text value') WHERE typeof(NEW.capabilities) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_hardware_update BEFORE UPDATE ON hardware
  WHEN typeof(NEW.fingerprint) <> 'text'
    OR typeof(NEW.kind) <> 'text'
    OR typeof(NEW.spec_name) NOT IN ('text', 'null')
    OR typeof(NEW.gpu_model) <> 'text'
    OR typeof(NEW.gpus_per_host) <> 'integer'
    OR typeof(NEW.device_memory) <> 'integer'
    OR typeof(NEW.driver_version) NOT IN ('text', 'null')
    OR typeof(NEW.cuda_version) NOT IN ('text', 'null')
    OR typeof(NEW.nccl_version) NOT IN ('text', 'null')
    OR typeof(NEW.interconnect) NOT IN ('text', 'null')
    OR typeof(NEW.peak_flops_f32) NOT IN ('real', 'null')
    OR typeof(NEW.peak_flops_f16) NOT IN ('real', 'null')
    OR typeof(NEW.peak_flops_bf16) NOT IN ('real', 'null')
    OR typeof(NEW.memory_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.intra_host_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.intra_host_latency) NOT IN ('real', 'null')
    OR typeof(NEW.inter_host_bandwidth) NOT IN ('real', 'null')
    OR typeof(NEW.inter_host_latency) NOT IN ('real', 'null')
    OR typeof(NEW.capabilities) NOT IN ('text', 'null')
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'hardware.fingerprint: not a text value') WHERE typeof(NEW.fingerprint) <> 'text';
  SELECT RAISE(ABORT, 'hardware.kind: not a text value') WHERE typeof(NEW.kind) <> 'text';
  SELECT RAISE(ABORT, 'hardware.spec_name: not a text value') WHERE typeof(NEW.spec_name) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.gpu_model: not a text value') WHERE typeof(NEW.gpu_model) <> 'text';
  SELECT RAISE(ABORT, 'hardware.gpus_per_host: not an integer value') WHERE typeof(NEW.gpus_per_host) <> 'integer';
  SELECT RAISE(ABORT, 'hardware.device_memory: not an integer value') WHERE typeof(NEW.device_memory) <> 'integer';
  SELECT RAISE(ABORT, 'hardware.driver_version: not a text value') WHERE typeof(NEW.driver_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.cuda_version: not a text value') WHERE typeof(NEW.cuda_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.nccl_version: not a text value') WHERE typeof(NEW.nccl_version) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.interconnect: not a text value') WHERE typeof(NEW.interconnect) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_f32: not a real value') WHERE typeof(NEW.peak_flops_f32) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_f16: not a real value') WHERE typeof(NEW.peak_flops_f16) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.peak_flops_bf16: not a real value') WHERE typeof(NEW.peak_flops_bf16) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.memory_bandwidth: not a real value') WHERE typeof(NEW.memory_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.intra_host_bandwidth: not a real value') WHERE typeof(NEW.intra_host_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.intra_host_latency: not a real value') WHERE typeof(NEW.intra_host_latency) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.inter_host_bandwidth: not a real value') WHERE typeof(NEW.inter_host_bandwidth) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.inter_host_latency: not a real value') WHERE typeof(NEW.inter_host_latency) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'hardware.capabilities: not a text value') WHERE typeof(NEW.capabilities) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'hardware.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_comm_profile_insert BEFORE INSERT ON comm_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.collective) <> 'text'
    OR typeof(NEW.group_desc) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.bytes) <> 'integer'
    OR typeof(NEW.seconds) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'comm_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'comm_profile.collective: not a text value') WHERE typeof(NEW.collective) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.group_desc: not a text value') WHERE typeof(NEW.group_desc) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.bytes: not an integer value') WHERE typeof(NEW.bytes) <> 'integer';
  SELECT RAISE(ABORT, 'comm_profile.seconds: not a real value') WHERE typeof(NEW.seconds) <> 'real';
END;

CREATE TRIGGER strict_comm_profile_update BEFORE UPDATE ON comm_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.collective) <> 'text'
    OR typeof(NEW.group_desc) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.bytes) <> 'integer'
    OR typeof(NEW.seconds) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'comm_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'comm_profile.collective: not a text value') WHERE typeof(NEW.collective) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.group_desc: not a text value') WHERE typeof(NEW.group_desc) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'comm_profile.bytes: not an integer value') WHERE typeof(NEW.bytes) <> 'integer';
  SELECT RAISE(ABORT, 'comm_profile.seconds: not a real value') WHERE typeof(NEW.seconds) <> 'real';
END;

CREATE TRIGGER strict_compute_profile_insert BEFORE INSERT ON compute_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.op) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.size) <> 'integer'
    OR typeof(NEW.rate) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'compute_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'compute_profile.op: not a text value') WHERE typeof(NEW.op) <> 'text';
  SELECT RAISE(ABORT, 'compute_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'compute_profile.size: not an integer value') WHERE typeof(NEW.size) <> 'integer';
  SELECT RAISE(ABORT, 'compute_profile.rate: not a real value') WHERE typeof(NEW.rate) <> 'real';
END;

CREATE TRIGGER strict_compute_profile_update BEFORE UPDATE ON compute_profile
  WHEN typeof(NEW.hardware_id) <> 'integer'
    OR typeof(NEW.op) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.size) <> 'integer'
    OR typeof(NEW.rate) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'compute_profile.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) <> 'integer';
  SELECT RAISE(ABORT, 'compute_profile.op: not a text value') WHERE typeof(NEW.op) <> 'text';
  SELECT RAISE(ABORT, 'compute_profile.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'compute_profile.size: not an integer value') WHERE typeof(NEW.size) <> 'integer';
  SELECT RAISE(ABORT, 'compute_profile.rate: not a real value') WHERE typeof(NEW.rate) <> 'real';
END;

CREATE TRIGGER strict_model_insert BEFORE INSERT ON model
  WHEN typeof(NEW.name) <> 'text'
    OR typeof(NEW.signature) <> 'text'
    OR typeof(NEW.graph_hash) <> 'text'
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.batch_size) <> 'integer'
    OR typeof(NEW.num_params) <> 'integer'
    OR typeof(NEW.num_layers) <> 'integer'
    OR typeof(NEW.layer_option) <> 'text'
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'model.name: not a text value') WHERE typeof(NEW.name) <> 'text';
  SELECT RAISE(ABORT, 'model.signature: not a text value') WHERE typeof(NEW.signature) <> 'text';
  SELECT RAISE(ABORT, 'model.graph_hash: not a text value') WHERE typeof(NEW.graph_hash) <> 'text';
  SELECT RAISE(ABORT, 'model.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'model.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'model.batch_size: not an integer value') WHERE typeof(NEW.batch_size) <> 'integer';
  SELECT RAISE(ABORT, 'model.num_params: not an integer value') WHERE typeof(NEW.num_params) <> 'integer';
  SELECT RAISE(ABORT, 'model.num_layers: not an integer value') WHERE typeof(NEW.num_layers) <> 'integer';
  SELECT RAISE(ABORT, 'model.layer_option: not a text value') WHERE typeof(NEW.layer_option) <> 'text';
  SELECT RAISE(ABORT, 'model.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_model_update BEFORE UPDATE ON model
  WHEN typeof(NEW.name) <> 'text'
    OR typeof(NEW.signature) <> 'text'
    OR typeof(NEW.graph_hash) <> 'text'
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.batch_size) <> 'integer'
    OR typeof(NEW.num_params) <> 'integer'
    OR typeof(NEW.num_layers) <> 'integer'
    OR typeof(NEW.layer_option) <> 'text'
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'model.name: not a text value') WHERE typeof(NEW.name) <> 'text';
  SELECT RAISE(ABORT, 'model.signature: not a text value') WHERE typeof(NEW.signature) <> 'text';
  SELECT RAISE(ABORT, 'model.graph_hash: not a text value') WHERE typeof(NEW.graph_hash) <> 'text';
  SELECT RAISE(ABORT, 'model.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'model.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'model.batch_size: not an integer value') WHERE typeof(NEW.batch_size) <> 'integer';
  SELECT RAISE(ABORT, 'model.num_params: not an integer value') WHERE typeof(NEW.num_params) <> 'integer';
  SELECT RAISE(ABORT, 'model.num_layers: not an integer value') WHERE typeof(NEW.num_layers) <> 'integer';
  SELECT RAISE(ABORT, 'model.layer_option: not a text value') WHERE typeof(NEW.layer_option) <> 'text';
  SELECT RAISE(ABORT, 'model.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_model_layer_insert BEFORE INSERT ON model_layer
  WHEN typeof(NEW.model_id) <> 'integer'
    OR typeof(NEW.layer_index) <> 'integer'
    OR typeof(NEW.op_begin) <> 'integer'
    OR typeof(NEW.op_end) <> 'integer'
    OR typeof(NEW.fwd_flops) <> 'real'
    OR typeof(NEW.bwd_flops) <> 'real'
    OR typeof(NEW.param_bytes) <> 'integer'
    OR typeof(NEW.activation_bytes) <> 'integer'
    OR typeof(NEW.inbound_bytes) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'model_layer.model_id: not an integer value') WHERE typeof(NEW.model_id) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.layer_index: not an integer value') WHERE typeof(NEW.layer_index) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.op_begin: not an integer value') WHERE typeof(NEW.op_begin) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.op_end: not an integer value') WHERE typeof(NEW.op_end) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.fwd_flops: not a real value') WHERE typeof(NEW.fwd_flops) <> 'real';
  SELECT RAISE(ABORT, 'model_layer.bwd_flops: not a real value') WHERE typeof(NEW.bwd_flops) <> 'real';
  SELECT RAISE(ABORT, 'model_layer.param_bytes: not an integer value') WHERE typeof(NEW.param_bytes) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.activation_bytes: not an integer value') WHERE typeof(NEW.activation_bytes) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.inbound_bytes: not an integer value') WHERE typeof(NEW.inbound_bytes) <> 'integer';
END;

CREATE TRIGGER strict_model_layer_update BEFORE UPDATE ON model_layer
  WHEN typeof(NEW.model_id) <> 'integer'
    OR typeof(NEW.layer_index) <> 'integer'
    OR typeof(NEW.op_begin) <> 'integer'
    OR typeof(NEW.op_end) <> 'integer'
    OR typeof(NEW.fwd_flops) <> 'real'
    OR typeof(NEW.bwd_flops) <> 'real'
    OR typeof(NEW.param_bytes) <> 'integer'
    OR typeof(NEW.activation_bytes) <> 'integer'
    OR typeof(NEW.inbound_bytes) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'model_layer.model_id: not an integer value') WHERE typeof(NEW.model_id) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.layer_index: not an integer value') WHERE typeof(NEW.layer_index) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.op_begin: not an integer value') WHERE typeof(NEW.op_begin) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.op_end: not an integer value') WHERE typeof(NEW.op_end) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.fwd_flops: not a real value') WHERE typeof(NEW.fwd_flops) <> 'real';
  SELECT RAISE(ABORT, 'model_layer.bwd_flops: not a real value') WHERE typeof(NEW.bwd_flops) <> 'real';
  SELECT RAISE(ABORT, 'model_layer.param_bytes: not an integer value') WHERE typeof(NEW.param_bytes) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.activation_bytes: not an integer value') WHERE typeof(NEW.activation_bytes) <> 'integer';
  SELECT RAISE(ABORT, 'model_layer.inbound_bytes: not an integer value') WHERE typeof(NEW.inbound_bytes) <> 'integer';
END;

CREATE TRIGGER strict_sweep_insert BEFORE INSERT ON sweep
  WHEN typeof(NEW.name) NOT IN ('text', 'null')
    OR typeof(NEW.model_id) NOT IN ('integer', 'null')
    OR typeof(NEW.hardware_id) NOT IN ('integer', 'null')
    OR typeof(NEW.cluster_hosts) <> 'integer'
    OR typeof(NEW.cluster_gpus) <> 'integer'
    OR typeof(NEW.global_batch) <> 'integer'
    OR typeof(NEW.micro_batches) <> 'integer'
    OR typeof(NEW.num_layers) <> 'integer'
    OR typeof(NEW.layer_option) <> 'text'
    OR typeof(NEW.submesh_space) <> 'text'
    OR typeof(NEW.logical_space) <> 'text'
    OR typeof(NEW.profile_mode) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.backend) <> 'text'
    OR typeof(NEW.tool_version) <> 'text'
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.shard) NOT IN ('text', 'null')
    OR typeof(NEW.source) NOT IN ('text', 'null')
    OR typeof(NEW.started_at) <> 'text'
    OR typeof(NEW.finished_at) NOT IN ('text', 'null')
    OR typeof(NEW.status) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'sweep.name: not a text value') WHERE typeof(NEW.name) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.model_id: not an integer value') WHERE typeof(NEW.model_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep.cluster_hosts: not an integer value') WHERE typeof(NEW.cluster_hosts) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.cluster_gpus: not an integer value') WHERE typeof(NEW.cluster_gpus) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.global_batch: not an integer value') WHERE typeof(NEW.global_batch) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.micro_batches: not an integer value') WHERE typeof(NEW.micro_batches) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.num_layers: not an integer value') WHERE typeof(NEW.num_layers) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.layer_option: not a text value') WHERE typeof(NEW.layer_option) <> 'text';
  SELECT RAISE(ABORT, 'sweep.submesh_space: not a text value') WHERE typeof(NEW.submesh_space) <> 'text';
  SELECT RAISE(ABORT, 'sweep.logical_space: not a text value') WHERE typeof(NEW.logical_space) <> 'text';
  SELECT RAISE(ABORT, 'sweep.profile_mode: not a text value') WHERE typeof(NEW.profile_mode) <> 'text';
  SELECT RAISE(ABORT, 'sweep.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'sweep.backend: not a text value') WHERE typeof(NEW.backend) <> 'text';
  SELECT RAISE(ABORT, 'sweep.tool_version: not a text value') WHERE typeof(NEW.tool_version) <> 'text';
  SELECT RAISE(ABORT, 'sweep.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.shard: not a text value') WHERE typeof(NEW.shard) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.source: not a text value') WHERE typeof(NEW.source) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.started_at: not a text value') WHERE typeof(NEW.started_at) <> 'text';
  SELECT RAISE(ABORT, 'sweep.finished_at: not a text value') WHERE typeof(NEW.finished_at) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.status: not a text value') WHERE typeof(NEW.status) <> 'text';
END;

CREATE TRIGGER strict_sweep_update BEFORE UPDATE ON sweep
  WHEN typeof(NEW.name) NOT IN ('text', 'null')
    OR typeof(NEW.model_id) NOT IN ('integer', 'null')
    OR typeof(NEW.hardware_id) NOT IN ('integer', 'null')
    OR typeof(NEW.cluster_hosts) <> 'integer'
    OR typeof(NEW.cluster_gpus) <> 'integer'
    OR typeof(NEW.global_batch) <> 'integer'
    OR typeof(NEW.micro_batches) <> 'integer'
    OR typeof(NEW.num_layers) <> 'integer'
    OR typeof(NEW.layer_option) <> 'text'
    OR typeof(NEW.submesh_space) <> 'text'
    OR typeof(NEW.logical_space) <> 'text'
    OR typeof(NEW.profile_mode) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.backend) <> 'text'
    OR typeof(NEW.tool_version) <> 'text'
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.shard) NOT IN ('text', 'null')
    OR typeof(NEW.source) NOT IN ('text', 'null')
    OR typeof(NEW.started_at) <> 'text'
    OR typeof(NEW.finished_at) NOT IN ('text', 'null')
    OR typeof(NEW.status) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'sweep.name: not a text value') WHERE typeof(NEW.name) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.model_id: not an integer value') WHERE typeof(NEW.model_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep.hardware_id: not an integer value') WHERE typeof(NEW.hardware_id) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'sweep.cluster_hosts: not an integer value') WHERE typeof(NEW.cluster_hosts) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.cluster_gpus: not an integer value') WHERE typeof(NEW.cluster_gpus) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.global_batch: not an integer value') WHERE typeof(NEW.global_batch) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.micro_batches: not an integer value') WHERE typeof(NEW.micro_batches) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.num_layers: not an integer value') WHERE typeof(NEW.num_layers) <> 'integer';
  SELECT RAISE(ABORT, 'sweep.layer_option: not a text value') WHERE typeof(NEW.layer_option) <> 'text';
  SELECT RAISE(ABORT, 'sweep.submesh_space: not a text value') WHERE typeof(NEW.submesh_space) <> 'text';
  SELECT RAISE(ABORT, 'sweep.logical_space: not a text value') WHERE typeof(NEW.logical_space) <> 'text';
  SELECT RAISE(ABORT, 'sweep.profile_mode: not a text value') WHERE typeof(NEW.profile_mode) <> 'text';
  SELECT RAISE(ABORT, 'sweep.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'sweep.backend: not a text value') WHERE typeof(NEW.backend) <> 'text';
  SELECT RAISE(ABORT, 'sweep.tool_version: not a text value') WHERE typeof(NEW.tool_version) <> 'text';
  SELECT RAISE(ABORT, 'sweep.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.shard: not a text value') WHERE typeof(NEW.shard) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.source: not a text value') WHERE typeof(NEW.source) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.started_at: not a text value') WHERE typeof(NEW.started_at) <> 'text';
  SELECT RAISE(ABORT, 'sweep.finished_at: not a text value') WHERE typeof(NEW.finished_at) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'sweep.status: not a text value') WHERE typeof(NEW.status) <> 'text';
END;

CREATE TRIGGER strict_sweep_submesh_insert BEFORE INSERT ON sweep_submesh
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.hosts) <> 'integer'
    OR typeof(NEW.gpus_per_host) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'sweep_submesh.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.hosts: not an integer value') WHERE typeof(NEW.hosts) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.gpus_per_host: not an integer value') WHERE typeof(NEW.gpus_per_host) <> 'integer';
END;

CREATE TRIGGER strict_sweep_submesh_update BEFORE UPDATE ON sweep_submesh
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.hosts) <> 'integer'
    OR typeof(NEW.gpus_per_host) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'sweep_submesh.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.hosts: not an integer value') WHERE typeof(NEW.hosts) <> 'integer';
  SELECT RAISE(ABORT, 'sweep_submesh.gpus_per_host: not an integer value') WHERE typeof(NEW.gpus_per_host) <> 'integer';
END;

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

CREATE TRIGGER strict_stage_profile_insert BEFORE INSERT ON stage_profile
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.phase) <> 'integer'
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
    OR typeof(NEW.reused) <> 'integer'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error) NOT IN ('text', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_profile.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.phase: not an integer value') WHERE typeof(NEW.phase) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_profile.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_profile.reused: not an integer value') WHERE typeof(NEW.reused) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_profile.error: not a text value') WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'stage_profile.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_stage_profile_update BEFORE UPDATE ON stage_profile
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.phase) <> 'integer'
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
    OR typeof(NEW.reused) <> 'integer'
    OR typeof(NEW.status) <> 'text'
    OR typeof(NEW.error) NOT IN ('text', 'null')
    OR typeof(NEW.apply_cost) NOT IN ('real', 'null')
BEGIN
  SELECT RAISE(ABORT, 'stage_profile.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.phase: not an integer value') WHERE typeof(NEW.phase) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.compute_cost: not a real value') WHERE typeof(NEW.compute_cost) <> 'real';
  SELECT RAISE(ABORT, 'stage_profile.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.invar_size: not an integer value') WHERE typeof(NEW.invar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.outvar_size: not an integer value') WHERE typeof(NEW.outvar_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.temp_buffer_size: not an integer value') WHERE typeof(NEW.temp_buffer_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.intermediate_size: not an integer value') WHERE typeof(NEW.intermediate_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.initial_size: not an integer value') WHERE typeof(NEW.initial_size) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.repeats: not an integer value') WHERE typeof(NEW.repeats) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.spread: not a real value') WHERE typeof(NEW.spread) <> 'real';
  SELECT RAISE(ABORT, 'stage_profile.reused: not an integer value') WHERE typeof(NEW.reused) <> 'integer';
  SELECT RAISE(ABORT, 'stage_profile.status: not a text value') WHERE typeof(NEW.status) <> 'text';
  SELECT RAISE(ABORT, 'stage_profile.error: not a text value') WHERE typeof(NEW.error) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'stage_profile.apply_cost: not a real value') WHERE typeof(NEW.apply_cost) NOT IN ('real', 'null');
END;

CREATE TRIGGER strict_plan_insert BEFORE INSERT ON plan
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.kind) <> 'text'
    OR typeof(NEW.objective) <> 'text'
    OR typeof(NEW.micro_batches) <> 'integer'
    OR typeof(NEW.global_batch) NOT IN ('integer', 'null')
    OR typeof(NEW.memory_budget) NOT IN ('integer', 'null')
    OR typeof(NEW.max_stages) NOT IN ('integer', 'null')
    OR typeof(NEW.cost) <> 'real'
    OR typeof(NEW.full_cost) NOT IN ('real', 'null')
    OR typeof(NEW.feasible) <> 'integer'
    OR typeof(NEW.solve_seconds) NOT IN ('real', 'null')
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'plan.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'plan.kind: not a text value') WHERE typeof(NEW.kind) <> 'text';
  SELECT RAISE(ABORT, 'plan.objective: not a text value') WHERE typeof(NEW.objective) <> 'text';
  SELECT RAISE(ABORT, 'plan.micro_batches: not an integer value') WHERE typeof(NEW.micro_batches) <> 'integer';
  SELECT RAISE(ABORT, 'plan.global_batch: not an integer value') WHERE typeof(NEW.global_batch) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.memory_budget: not an integer value') WHERE typeof(NEW.memory_budget) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.max_stages: not an integer value') WHERE typeof(NEW.max_stages) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.cost: not a real value') WHERE typeof(NEW.cost) <> 'real';
  SELECT RAISE(ABORT, 'plan.full_cost: not a real value') WHERE typeof(NEW.full_cost) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'plan.feasible: not an integer value') WHERE typeof(NEW.feasible) <> 'integer';
  SELECT RAISE(ABORT, 'plan.solve_seconds: not a real value') WHERE typeof(NEW.solve_seconds) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'plan.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'plan.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_plan_update BEFORE UPDATE ON plan
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.kind) <> 'text'
    OR typeof(NEW.objective) <> 'text'
    OR typeof(NEW.micro_batches) <> 'integer'
    OR typeof(NEW.global_batch) NOT IN ('integer', 'null')
    OR typeof(NEW.memory_budget) NOT IN ('integer', 'null')
    OR typeof(NEW.max_stages) NOT IN ('integer', 'null')
    OR typeof(NEW.cost) <> 'real'
    OR typeof(NEW.full_cost) NOT IN ('real', 'null')
    OR typeof(NEW.feasible) <> 'integer'
    OR typeof(NEW.solve_seconds) NOT IN ('real', 'null')
    OR typeof(NEW.options) NOT IN ('text', 'null')
    OR typeof(NEW.created_at) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'plan.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'plan.kind: not a text value') WHERE typeof(NEW.kind) <> 'text';
  SELECT RAISE(ABORT, 'plan.objective: not a text value') WHERE typeof(NEW.objective) <> 'text';
  SELECT RAISE(ABORT, 'plan.micro_batches: not an integer value') WHERE typeof(NEW.micro_batches) <> 'integer';
  SELECT RAISE(ABORT, 'plan.global_batch: not an integer value') WHERE typeof(NEW.global_batch) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.memory_budget: not an integer value') WHERE typeof(NEW.memory_budget) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.max_stages: not an integer value') WHERE typeof(NEW.max_stages) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan.cost: not a real value') WHERE typeof(NEW.cost) <> 'real';
  SELECT RAISE(ABORT, 'plan.full_cost: not a real value') WHERE typeof(NEW.full_cost) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'plan.feasible: not an integer value') WHERE typeof(NEW.feasible) <> 'integer';
  SELECT RAISE(ABORT, 'plan.solve_seconds: not a real value') WHERE typeof(NEW.solve_seconds) NOT IN ('real', 'null');
  SELECT RAISE(ABORT, 'plan.options: not a text value') WHERE typeof(NEW.options) NOT IN ('text', 'null');
  SELECT RAISE(ABORT, 'plan.created_at: not a text value') WHERE typeof(NEW.created_at) <> 'text';
END;

CREATE TRIGGER strict_plan_stage_insert BEFORE INSERT ON plan_stage
  WHEN typeof(NEW.plan_id) <> 'integer'
    OR typeof(NEW.stage_index) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) NOT IN ('integer', 'null')
    OR typeof(NEW.submesh_hosts) <> 'integer'
    OR typeof(NEW.submesh_gpus) <> 'integer'
    OR typeof(NEW.config_index) NOT IN ('integer', 'null')
    OR typeof(NEW.logical_a) <> 'integer'
    OR typeof(NEW.logical_b) <> 'integer'
    OR typeof(NEW.force_batch_dim) NOT IN ('integer', 'null')
    OR typeof(NEW.fwd_cost) <> 'real'
    OR typeof(NEW.bwd_cost) <> 'real'
    OR typeof(NEW.peak_memory) <> 'integer'
    OR typeof(NEW.memory_needed) <> 'integer'
    OR typeof(NEW.available_memory) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'plan_stage.plan_id: not an integer value') WHERE typeof(NEW.plan_id) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.stage_index: not an integer value') WHERE typeof(NEW.stage_index) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.submesh_hosts: not an integer value') WHERE typeof(NEW.submesh_hosts) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.submesh_gpus: not an integer value') WHERE typeof(NEW.submesh_gpus) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.config_index: not an integer value') WHERE typeof(NEW.config_index) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.logical_a: not an integer value') WHERE typeof(NEW.logical_a) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.logical_b: not an integer value') WHERE typeof(NEW.logical_b) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.force_batch_dim: not an integer value') WHERE typeof(NEW.force_batch_dim) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.fwd_cost: not a real value') WHERE typeof(NEW.fwd_cost) <> 'real';
  SELECT RAISE(ABORT, 'plan_stage.bwd_cost: not a real value') WHERE typeof(NEW.bwd_cost) <> 'real';
  SELECT RAISE(ABORT, 'plan_stage.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.memory_needed: not an integer value') WHERE typeof(NEW.memory_needed) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
END;

CREATE TRIGGER strict_plan_stage_update BEFORE UPDATE ON plan_stage
  WHEN typeof(NEW.plan_id) <> 'integer'
    OR typeof(NEW.stage_index) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) NOT IN ('integer', 'null')
    OR typeof(NEW.submesh_hosts) <> 'integer'
    OR typeof(NEW.submesh_gpus) <> 'integer'
    OR typeof(NEW.config_index) NOT IN ('integer', 'null')
    OR typeof(NEW.logical_a) <> 'integer'
    OR typeof(NEW.logical_b) <> 'integer'
    OR typeof(NEW.force_batch_dim) NOT IN ('integer', 'null')
    OR typeof(NEW.fwd_cost) <> 'real'
    OR typeof(NEW.bwd_cost) <> 'real'
    OR typeof(NEW.peak_memory) <> 'integer'
    OR typeof(NEW.memory_needed) <> 'integer'
    OR typeof(NEW.available_memory) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'plan_stage.plan_id: not an integer value') WHERE typeof(NEW.plan_id) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.stage_index: not an integer value') WHERE typeof(NEW.stage_index) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.submesh_hosts: not an integer value') WHERE typeof(NEW.submesh_hosts) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.submesh_gpus: not an integer value') WHERE typeof(NEW.submesh_gpus) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.config_index: not an integer value') WHERE typeof(NEW.config_index) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.logical_a: not an integer value') WHERE typeof(NEW.logical_a) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.logical_b: not an integer value') WHERE typeof(NEW.logical_b) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.force_batch_dim: not an integer value') WHERE typeof(NEW.force_batch_dim) NOT IN ('integer', 'null');
  SELECT RAISE(ABORT, 'plan_stage.fwd_cost: not a real value') WHERE typeof(NEW.fwd_cost) <> 'real';
  SELECT RAISE(ABORT, 'plan_stage.bwd_cost: not a real value') WHERE typeof(NEW.bwd_cost) <> 'real';
  SELECT RAISE(ABORT, 'plan_stage.peak_memory: not an integer value') WHERE typeof(NEW.peak_memory) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.memory_needed: not an integer value') WHERE typeof(NEW.memory_needed) <> 'integer';
  SELECT RAISE(ABORT, 'plan_stage.available_memory: not an integer value') WHERE typeof(NEW.available_memory) <> 'integer';
END;

CREATE TRIGGER strict_resharding_task_insert BEFORE INSERT ON resharding_task
  WHEN typeof(NEW.plan_id) <> 'integer'
    OR typeof(NEW.task_index) <> 'integer'
    OR typeof(NEW.src_stage) <> 'integer'
    OR typeof(NEW.dst_stage) <> 'integer'
    OR typeof(NEW.tensor_name) <> 'text'
    OR typeof(NEW.shape) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.src_spec) <> 'text'
    OR typeof(NEW.dst_spec) <> 'text'
    OR typeof(NEW.bytes) <> 'integer'
    OR typeof(NEW.strategy) <> 'text'
    OR typeof(NEW.seconds) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'resharding_task.plan_id: not an integer value') WHERE typeof(NEW.plan_id) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.task_index: not an integer value') WHERE typeof(NEW.task_index) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.src_stage: not an integer value') WHERE typeof(NEW.src_stage) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.dst_stage: not an integer value') WHERE typeof(NEW.dst_stage) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.tensor_name: not a text value') WHERE typeof(NEW.tensor_name) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.shape: not a text value') WHERE typeof(NEW.shape) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.src_spec: not a text value') WHERE typeof(NEW.src_spec) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.dst_spec: not a text value') WHERE typeof(NEW.dst_spec) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.bytes: not an integer value') WHERE typeof(NEW.bytes) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.strategy: not a text value') WHERE typeof(NEW.strategy) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.seconds: not a real value') WHERE typeof(NEW.seconds) <> 'real';
END;

CREATE TRIGGER strict_resharding_task_update BEFORE UPDATE ON resharding_task
  WHEN typeof(NEW.plan_id) <> 'integer'
    OR typeof(NEW.task_index) <> 'integer'
    OR typeof(NEW.src_stage) <> 'integer'
    OR typeof(NEW.dst_stage) <> 'integer'
    OR typeof(NEW.tensor_name) <> 'text'
    OR typeof(NEW.shape) <> 'text'
    OR typeof(NEW.dtype) <> 'text'
    OR typeof(NEW.src_spec) <> 'text'
    OR typeof(NEW.dst_spec) <> 'text'
    OR typeof(NEW.bytes) <> 'integer'
    OR typeof(NEW.strategy) <> 'text'
    OR typeof(NEW.seconds) <> 'real'
BEGIN
  SELECT RAISE(ABORT, 'resharding_task.plan_id: not an integer value') WHERE typeof(NEW.plan_id) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.task_index: not an integer value') WHERE typeof(NEW.task_index) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.src_stage: not an integer value') WHERE typeof(NEW.src_stage) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.dst_stage: not an integer value') WHERE typeof(NEW.dst_stage) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.tensor_name: not a text value') WHERE typeof(NEW.tensor_name) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.shape: not a text value') WHERE typeof(NEW.shape) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.dtype: not a text value') WHERE typeof(NEW.dtype) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.src_spec: not a text value') WHERE typeof(NEW.src_spec) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.dst_spec: not a text value') WHERE typeof(NEW.dst_spec) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.bytes: not an integer value') WHERE typeof(NEW.bytes) <> 'integer';
  SELECT RAISE(ABORT, 'resharding_task.strategy: not a text value') WHERE typeof(NEW.strategy) <> 'text';
  SELECT RAISE(ABORT, 'resharding_task.seconds: not a real value') WHERE typeof(NEW.seconds) <> 'real';
END;

CREATE TRIGGER strict_placement_text_insert BEFORE INSERT ON placement_text
  WHEN typeof(NEW.text) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_text.text: not a text value') WHERE typeof(NEW.text) <> 'text';
END;

CREATE TRIGGER strict_placement_text_update BEFORE UPDATE ON placement_text
  WHEN typeof(NEW.text) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_text.text: not a text value') WHERE typeof(NEW.text) <> 'text';
END;

CREATE TRIGGER strict_placement_tensor_insert BEFORE INSERT ON placement_tensor
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.tensor_index) <> 'integer'
    OR typeof(NEW.name_id) <> 'integer'
    OR typeof(NEW.shape_id) <> 'integer'
    OR typeof(NEW.dtype_id) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'placement_tensor.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.tensor_index: not an integer value') WHERE typeof(NEW.tensor_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.name_id: not an integer value') WHERE typeof(NEW.name_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.shape_id: not an integer value') WHERE typeof(NEW.shape_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.dtype_id: not an integer value') WHERE typeof(NEW.dtype_id) <> 'integer';
END;

CREATE TRIGGER strict_placement_tensor_update BEFORE UPDATE ON placement_tensor
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.tensor_index) <> 'integer'
    OR typeof(NEW.name_id) <> 'integer'
    OR typeof(NEW.shape_id) <> 'integer'
    OR typeof(NEW.dtype_id) <> 'integer'
BEGIN
  SELECT RAISE(ABORT, 'placement_tensor.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.tensor_index: not an integer value') WHERE typeof(NEW.tensor_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.name_id: not an integer value') WHERE typeof(NEW.name_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.shape_id: not an integer value') WHERE typeof(NEW.shape_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_tensor.dtype_id: not an integer value') WHERE typeof(NEW.dtype_id) <> 'integer';
END;

CREATE TRIGGER strict_placement_set_insert BEFORE INSERT ON placement_set
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.items) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_set.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.items: not a text value') WHERE typeof(NEW.items) <> 'text';
END;

CREATE TRIGGER strict_placement_set_update BEFORE UPDATE ON placement_set
  WHEN typeof(NEW.sweep_id) <> 'integer'
    OR typeof(NEW.start_layer) <> 'integer'
    OR typeof(NEW.end_layer) <> 'integer'
    OR typeof(NEW.submesh_index) <> 'integer'
    OR typeof(NEW.config_index) <> 'integer'
    OR typeof(NEW.items) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'placement_set.sweep_id: not an integer value') WHERE typeof(NEW.sweep_id) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.start_layer: not an integer value') WHERE typeof(NEW.start_layer) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.end_layer: not an integer value') WHERE typeof(NEW.end_layer) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.submesh_index: not an integer value') WHERE typeof(NEW.submesh_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.config_index: not an integer value') WHERE typeof(NEW.config_index) <> 'integer';
  SELECT RAISE(ABORT, 'placement_set.items: not a text value') WHERE typeof(NEW.items) <> 'text';
END;
