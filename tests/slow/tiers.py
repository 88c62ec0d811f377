"""The slow tier's budget (the README's test command: 35 minutes on 2 cores):
runtime tests whose capability a sibling in the slow tier already proves run
in the extended tier instead (``bash scripts/test.sh extended``).

One table, applied by tests/slow/conftest.py at collection: test id -> the
id of its sibling, which stays in the slow tier (checked by
tests/slow/test_tiers.py: both collected, the sibling not moved). Suites
that pick their own extended members (the modern suite's strategies, the
correctness suites' scripts) keep their tables beside their tests.
"""
from __future__ import annotations

EXTENDED = {
    # Horovod across two Slurm nodes: the recorded run stays (a job from an interpreter without
    # tfdist stays in the slow tier with tf-distribute across the two nodes)
    "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[horovod]":
        "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[horovod-recorded]",
    # a converted Keras script as a Slurm job, recorded: the two-node jobs run it so
    "test_slurm_jobs.py::test_keras_script_as_a_slurm_job_horovod":
        "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[horovod-recorded]",
    "test_slurm_jobs.py::test_keras_script_as_a_slurm_job_tf_distribute":
        "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[tf-distribute-recorded]",
    # a job from an interpreter that cannot import tfdist or LibCST: the two-node jobs run so
    "test_slurm_jobs.py::test_a_job_needs_nothing_but_the_training_environment[tf-distribute]":
        "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[tf-distribute]",
    "test_slurm_jobs.py::test_a_job_needs_nothing_but_the_training_environment[horovod]":
        "test_slurm_two_nodes.py::test_both_engines_train_across_two_nodes[tf-distribute]",
    # a GAN trained with train_on_batch on tf.distribute: one verify run of that family stays
    "test_train_on_batch.py::test_gan_train_on_batch_tf_distribute_two_workers":
        "test_train_on_batch.py::test_tfdist_verify_tf_distribute_passes_a_gan_whose_models_are_passed_to_train",
    "test_train_on_batch.py::test_tfdist_verify_passes_gan_recipes[train_on_batch_gan_model_factories-64-tf-distribute]":
        "test_train_on_batch.py::test_tfdist_verify_tf_distribute_passes_a_gan_whose_models_are_passed_to_train",
    "test_train_on_batch.py::test_tfdist_verify_passes_gan_recipes[train_on_batch_gan_class_attributes-200-horovod]":
        "test_train_on_batch.py::test_tfdist_verify_tf_distribute_passes_a_gan_whose_models_are_passed_to_train",
    "test_train_on_batch.py::test_gan_train_on_batch_horovod_two_ranks":
        "test_train_on_batch.py::test_tfdist_verify_tf_distribute_passes_a_gan_whose_models_are_passed_to_train",
    # objects built in a module the script imports
    "test_train_on_batch.py::test_gan_models_built_by_an_unread_module[horovod]":
        "test_project_optimizer_parameter_runtime.py::test_tf_function_step_in_another_module",
    # gradients changed before the optimizer, summed first
    "test_gradient_clipping_runtime.py::test_clipped_training_ends_where_one_process_on_the_global_batch_ends[tape_optimizer_clipnorm]":
        "test_gradient_clipping_runtime.py::test_clipped_training_ends_where_one_process_on_the_global_batch_ends[train_step_clip_by_value]",
    # verify --compare on step loops
    "test_verify_compare.py::test_step_loops_record_their_loss_and_pass[tape_gan.py-2]":
        "test_verify_compare.py::test_tf_distribute_workers_compare_with_the_loss_multiplied_back",
    # who divides a loss by the replicas, by what the model learns
    "test_train_step_tf_distribute.py::test_a_loss_object_the_step_averages_learns_like_the_original_and_undivided_does_not":
        "test_loss_shares_runtime.py::test_the_loss_is_divided_once_where_keras_does_not_divide_it[train_step_sum_added_in_place]",
    # Keras fit on a data source beyond from_tensor_slices, on Horovod
    "test_data_sources.py::test_sequence_subclass_read_rank_strided":
        "test_data_sources.py::test_tfds_through_a_helper_function_in_keras_fit",
    "test_train_step_tf_distribute.py::test_a_loss_divided_twice_or_not_at_all_leaves_the_band[not divided-scaled_loss = loss-<lambda>]":
        "test_loss_shares_runtime.py::test_the_loss_is_divided_once_where_keras_does_not_divide_it[train_step_sum_added_in_place]",
    "test_train_step_tf_distribute.py::test_a_loss_divided_twice_or_not_at_all_leaves_the_band[divided twice-"
    "scaled_loss = loss / strategy.num_replicas_in_sync / strategy.num_replicas_in_sync-<lambda>]":
        "test_loss_shares_runtime.py::test_the_loss_is_divided_once_where_keras_does_not_divide_it[train_step_sum_added_in_place]",
    # the bundled examples, converted and run as a new user would
    "test_examples_horovod.py::test_converted_example_trains_on_two_ranks[tape_tf_function]":
        "test_examples_horovod.py::test_converted_example_trains_on_two_ranks[keras_sequential]",
    "test_examples_horovod.py::test_converted_example_trains_on_two_ranks[tf1_session]":
        "test_examples_horovod.py::test_converted_example_trains_on_two_ranks[keras_sequential]",
    "test_examples_horovod.py::test_uneven_data_on_three_ranks_does_not_hang":
        "test_examples_horovod.py::test_converted_example_trains_on_two_ranks[keras_sequential]",
    "test_examples_tf_distribute.py::test_new_user_converts_then_runs_two_workers[tape_tf_function.py]":
        "test_examples_tf_distribute.py::test_new_user_converts_then_runs_two_workers[keras_sequential.py]",
    # verify catches labels sliced apart from their samples
    "test_training_correctness.py::test_verify_catches_tape_labels_sliced_with_another_stride":
        "test_training_correctness.py::test_verify_catches_labels_sliced_twice",
    # multi-input pairs kept on two ranks
    "test_multi_input_pairs.py::test_named_dict_inputs_keep_their_pairs_on_two_ranks":
        "test_multi_input_pairs.py::test_wide_deep_tuple_inputs_keep_their_pairs_on_two_ranks",
    # projects of several modules: the same shape on the other engine stays
    "test_project_class_method_arrays_runtime.py::test_horovod": "test_project_class_method_arrays_runtime.py::test_tf_distribute",
    "test_project_helper_runtime.py::test_horovod": "test_project_helper_runtime.py::test_tf_distribute",
    "test_project_helper_settings_runtime.py::test_horovod[settings_dict]":
        "test_project_helper_settings_runtime.py::test_horovod[batch_argument]",
    "test_project_helper_settings_runtime.py::test_tf_distribute[batch_argument]":
        "test_project_helper_settings_runtime.py::test_tf_distribute[settings_dict]",
    "test_project_optimizer_parameter_runtime.py::test_eager_loop_in_another_module":
        "test_project_optimizer_parameter_runtime.py::test_tf_function_step_in_another_module",
    "test_project_window_helper_runtime.py::test_fit_on_the_helpers_batches":
        "test_project_window_helper_runtime.py::test_tape_loop_windows_stay_whole_and_disjoint",
    # read-back barriers
    "test_read_back_barrier_runtime.py::test_horovod_tf1_graph_mode": "test_read_back_barrier_runtime.py::test_tf_distribute",
    # verify's step cap and TF1 runs
    # Horovod's verify passes and catches; the same checks on tf.distribute stay
    "test_runtime_verify.py::test_correct_tape_script_passes":
        "test_tf_distribute_runtime.py::test_verify_passes_tape_script_and_checks_samples",
    "test_runtime_verify.py::test_unsharded_data_fails_on_steps": "test_tf_distribute_runtime.py::test_verify_fails_data_not_divided",
    "test_runtime_verify.py::test_checkpoint_on_every_rank_fails_on_writers":
        "test_tf_distribute_runtime.py::test_verify_fails_a_non_chief_writing_at_the_users_path",
    "test_runtime_verify.py::test_cli_verify_passes_correct_keras_script":
        "test_examples_tf_distribute.py::test_new_user_converts_then_runs_two_workers[keras_sequential.py]",
    # verify --compare on a Keras conversion: the modern suite compares every item
    "test_verify_compare.py::test_correct_keras_conversion_learns_like_the_original":
        "test_modern_suite.py::test_modern_item_trains_like_the_original[keras_cnn_sequential_add_validation.py-devices-cells-variant]",
    "test_read_back_barrier_runtime.py::test_horovod": "test_read_back_barrier_runtime.py::test_tf_distribute",
    "test_runtime_verify.py::test_converted_by_tfdist_with_steps_cap":
        "test_tf_distribute_runtime.py::test_verify_steps_cap_under_keras3_and_tf_keras",
    "test_runtime_verify.py::test_tf1_monitored_training_session_passes":
        "test_training_correctness.py::test_converted_script_trains_correctly[monitored_next_batch_stop_hook-np2]",
    # scaled schedules and warm-up
    "test_scaled_schedule_runtime.py::test_rates_compressed_and_scaled_and_rebuilt_from_config":
        "test_scaled_schedule_runtime.py::test_user_schedule_converts_and_trains",
    "test_warmup_runtime.py::test_a_tape_loop_warms_up_over_its_first_epoch_on_2_ranks[@tf.function-"
    "tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=16, decay_rate=0.5)-<lambda>]":
        "test_warmup_runtime.py::test_a_tape_loop_warms_up_over_its_first_epoch_on_2_ranks[-0.1-<lambda>]",
    "test_warmup_runtime.py::test_a_tf1_session_warms_up_over_the_epoch_given_on_2_ranks":
        "test_warmup_runtime.py::test_learning_rate_ramps_to_the_scaled_rate_on_2_ranks[key0-0.2]",
    "test_warmup_runtime.py::test_fit_warms_up_the_script_s_own_schedule_on_2_ranks":
        "test_warmup_runtime.py::test_learning_rate_ramps_to_the_scaled_rate_on_2_ranks[key0-0.2]",
    # stop 47's shapes: one mode or engine of each stays in the slow tier
    "test_helper_data_runtime.py::test_a_gan_reading_a_helper_modules_dataset_trains_like_the_original[devices]":
        "test_helper_data_runtime.py::test_a_gan_reading_a_helper_modules_dataset_trains_like_the_original[workers]",
    "test_model_builds_runtime.py::test_layers_trained_by_themselves_are_built_in_the_scope[devices]":
        "test_model_builds_runtime.py::test_layers_trained_by_themselves_are_built_in_the_scope[workers]",
    "test_ignored_lr_runtime.py::test_the_rate_an_ignored_lr_leaves_is_the_one_scaled[tf-distribute]":
        "test_ignored_lr_runtime.py::test_the_rate_an_ignored_lr_leaves_is_the_one_scaled[horovod]",
}
