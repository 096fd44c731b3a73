# Plan 1 of uniform.db (sweep 1): paste into an Alpa training script.
import alpa

stage_option = alpa.ManualStageOption(
    forward_stage_layer_ids=[[0, 1], [2, 3]],
    submesh_physical_shapes=[(1, 4), (1, 4)],
    submesh_logical_shapes=[(2, 2), (2, 2)],
    submesh_autosharding_option_dicts=[{'force_batch_dim_to_mesh_dim': 0}, {'force_batch_dim_to_mesh_dim': 0}])
method = alpa.PipeshardParallel(num_micro_batches=2,
                                layer_option=alpa.AutoLayerOption(layer_num=4),
                                stage_option=stage_option)

# The plan is uniform: the same 3-D layout in LiBai's config
# train.dist.data_parallel_size = 2
# train.dist.tensor_parallel_size = 2
# train.dist.pipeline_parallel_size = 2
# train.dist.pipeline_num_layers: unknown (the parameter names show no transformer blocks): set it to the model's number of transformer blocks
# train.train_micro_batch_size = 16
# train.num_accumulation_steps = 2
# (LiBai has no interleaved schedule: it runs 1F1B)
# and as Megatron-LM arguments:
# --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 16 --global-batch-size 64
# --num-layers: unknown (the parameter names show no transformer blocks): the model's number of transformer blocks
# --num-layers-per-virtual-pipeline-stage: the blocks of a stage / 2 (interleaved, 2 chunks per stage)
# dtype f32: no --bf16/--fp16 (fp32)
