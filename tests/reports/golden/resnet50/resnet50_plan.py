# Plan 1 of resnet50.db (sweep 1): paste into an Alpa training script.
import alpa

stage_option = alpa.ManualStageOption(
    forward_stage_layer_ids=[[0, 1], [2, 3]],
    submesh_physical_shapes=[(1, 4), (1, 4)],
    submesh_logical_shapes=[(4, 1), (2, 2)],
    submesh_autosharding_option_dicts=[{'force_batch_dim_to_mesh_dim': 0}, {'force_batch_dim_to_mesh_dim': 0}])
method = alpa.PipeshardParallel(num_micro_batches=2,
                                layer_option=alpa.AutoLayerOption(layer_num=4),
                                stage_option=stage_option)

# The plan is not uniform (stages differ in submesh, logical mesh or size):
# LiBai / Megatron cannot express it.
