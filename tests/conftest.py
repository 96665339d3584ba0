"""GPU code runs on numba's CUDA simulator when no NVIDIA device is present (CI sets
NUMBA_ENABLE_CUDASIM=1 itself); this must happen before numba is first imported."""
import os

import pytest

# The tests compile thousands of kernels; LLVM's -O1 compiles the same generated code in ~0.7 of -O3's
# time. A run that sets NUMBA_OPT keeps its own level (CI runs a part of the op cases at -O3).
os.environ.setdefault("NUMBA_OPT", "1")

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not os.path.exists("/dev/nvidia0"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

# Ahead-of-time modules are built only by the tests of symjit.compiler.aot (which set SYMJIT_AOT
# themselves): a test process binds thousands of programs, none of which should start a builder.
os.environ.setdefault("SYMJIT_AOT", "off")


@pytest.fixture(autouse=True)
def fresh_pipeline_results(monkeypatch):
    """Binds of one computation share the pipeline's result (``symjit.compiler.shared``), keyed by
    what users can change. A test that changes a module constant the passes read
    (``monkeypatch.setattr(gemm_shapes, "GEMM_TILES", 0)``) must compile afresh: the table is
    emptied before each test and at each ``monkeypatch.setattr``."""
    from symjit.compiler import shared
    shared.clear_shared()
    setattr_ = monkeypatch.setattr

    def setattr_and_forget(*args, **kwargs):
        shared.clear_shared()
        return setattr_(*args, **kwargs)
    monkeypatch.setattr = setattr_and_forget
    yield
    shared.clear_shared()


@pytest.fixture(autouse=True)
def steady_blas_threads(monkeypatch):
    """Hold BLAS's thread count during each test. symjit's policy adapts it to the machine's load
    (:mod:`symjit.threads`), and a GEMM's rounding depends on it (OpenBLAS's sgemm of an 8x128 by
    128x784 product differs in the last bit between 1 and 2 threads), so two executors a test
    compares to the last bit must run under the same count. Between tests the policy adapts."""
    from symjit import threads
    pol = threads.policy()
    if pol is not None:
        n = pol.current or pol.cores
        pol._apply(n)
        monkeypatch.setattr(pol, "fixed", n)
    return pol


@pytest.fixture
def wide_tile_rule(monkeypatch):
    """Have the compiler pick the tile kernels of ``conv_vec`` by AVX-512's rule on any host with a
    tile: on an AVX2 host the rule takes fewer layers (``conv_shapes.VEC_NARROW_MAX_CHANNELS``), and a
    test of the tile kernels' results or choice by AVX-512's rule would otherwise test another
    kernel there. The kernels themselves still run the host's tile."""
    import functools

    from symjit.kernels.cpu import conv_shapes
    monkeypatch.setattr(conv_shapes, "prefers_vec", functools.partial(conv_shapes.prefers_vec, tile=(6, 4)))


# The slowest end-to-end tests (subprocesses, whole trainings, sweeps), run with --exhaustive only.
# Each module they test keeps faster tests in the default tier; a full run (CI) runs them all.
# Node ids, or a prefix ending in "[" for every parameter of a test but the ones listed plainly.
EXHAUSTIVE = (
    "tests/test_gluon_rnn.py::test_fused_layer_matches_its_unfused_cells[",
    "tests/test_gluon_rnn.py::test_cell_unroll_gradients_match_mx_rnn_symbols[",
    "tests/test_gluon_rnn.py::test_hybridized_cells_unroll_like_imperative_ones",
    "tests/test_gluon_rnn.py::test_conv_rnn_cell_matches_numpy_and_conv_cells_have_their_shapes",
    "tests/test_gluon_rnn.py::test_valid_length_masks_outputs_and_keeps_the_last_valid_states",
    "tests/test_imperative_shapes.py::test_reductions_on_random_axes_match_numpy[float16]",
    "tests/test_aot.py::test_warm_process_runs_without_numba_and_matches",
    "tests/test_aot.py::test_kernels_in_parts_run_from_entries_without_numba",
    "tests/test_aot.py::test_seeded_samplers_and_dropout_draw_the_same_numbers_from_an_entry",
    "tests/test_examples.py::test_lenet_short",
    "tests/test_examples.py::test_custom_loop_short",
    "tests/test_examples_training.py::",
    "tests/test_examples_gluon.py::",
    "tests/test_gluon_model_zoo.py::test_resnet18_v1_forward",
    "tests/test_gluon_model_zoo.py::test_squeezenet_forward_at_224",
    "symjit/gluon/model_zoo/vision/__init__.py::",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[Conv3D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[Dense_noflatten]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[InstanceNorm]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[GroupNorm]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[Conv1DTranspose]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[MaxPool1D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[AvgPool1D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[GlobalMaxPool1D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[GlobalAvgPool1D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[GlobalMaxPool2D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[ReflectionPad2D]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[ELU]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[SELU]",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[Swish]",
    "tests/test_gluon_vision.py::test_random_flips_and_color_transforms_stay_within_their_ranges",
    "tests/test_gluon_loss.py::test_loss_matches_numpy[KLDiv]",
    "tests/test_rnn.py::test_fused_weights_names_round_trip_and_initializer",
    "tests/test_rnn.py::test_stacks_modifiers_and_weights",
    "tests/test_gluon_nn.py::test_layer_matches_the_symbolic_operator[Conv1D]",
    "tests/test_autograd.py::test_mlp_with_softmax_cross_entropy_matches_numpy_and_simple_bind",
    "tests/test_gluon_loss.py::test_ctc_loss_layouts_lengths_and_weights",
    "tests/test_gluon_loss.py::test_sdml_loss_formula_hybridized_and_gradient",
    "tests/test_gluon_contrib_nn.py::test_deformable_convolution_with_zero_offsets_is_a_convolution",
    "tests/test_gluon_contrib_nn.py::test_pixel_shuffle_matches_numpy[3d]",
    "tests/test_cache.py::test_parallel_compile_matches_serial",
    "tests/test_cache.py::test_warm_cache_hits_and_corrupt_entries_recompile",
    "tests/test_cache.py::test_two_processes_compiling_at_once",
    "tests/test_gpu_executor.py::",
    "tests/test_gpu_seeds.py::",
    "tests/test_gemm_tiles.py::test_lenet_step_matches_the_blas_gemms",
    "tests/test_gemm_tiles.py::test_dot_products_of_a_convolution_net_match_blas",
    "tests/test_onnx.py::test_export_check_run_and_import_back[resnet18",
    "tests/test_kernels_conv_small.py::test_lenet_runs_the_small_kernels_and_matches_im2col",
    "tests/test_kernels_conv_vec.py::test_a_tile_of_any_shape_sums_its_strided_products[4-6-3]",
    "tests/test_kernels_conv_vec.py::test_a_tile_of_any_shape_sums_its_strided_products[6-4-2]",
    "tests/test_kernels_conv_vec.py::test_a_tile_of_any_shape_sums_its_strided_products[6-4-4]",
    "tests/test_dist.py::test_module_fit_dist_sync_two_workers_as_one",
    "tests/test_dist.py::test_dist_async_mlp_converges",
    "tests/test_dist.py::test_feedforward_fit_dist_sync",
    "tests/test_dist.py::test_failed_worker_stops_the_job[stall",
    "tests/test_dist.py::test_dist_device_sync_on_gpu",
    "tests/test_executor.py::test_batchnorm_relu_backward_rewrite_equals_unfused[False-True]",
    "tests/test_executor.py::test_batchnorm_relu_backward_rewrite_equals_unfused[True-True]",
    "tests/test_control_flow.py::test_while_loop_symbol_equals_ndarray_loop",
    "tests/test_mxnet_compat.py::test_backward_after_inference_forward_is_the_inference_gradient",
    "tests/test_linalg.py::test_gelqf_and_syevd_match_mxnet_recorded_outputs",
    "tests/test_float32_accuracy.py::test_tile_convolutions_are_as_accurate_as_a_direct_one[",
    "tests/test_lower.py::test_a_big_plane_convolution_runs_the_simd_tile_kernels[2]",
    "tests/test_backward_again.py::test_backward_calls_after_one_forward[deconv-relu-conv-add-",
    "tests/test_backward_again.py::test_backward_calls_after_one_forward[conv-bn-relu-conv-add-add-",
    "tests/test_optimizer_host.py::test_fused_on_a_gpu_equals_the_cpu[",
    "tests/test_random_ops.py::test_moments_on_the_cuda_target[",
    "tests/test_rnn.py::test_fused_cell_matches_its_unfused_cells[",
    "tests/test_threaded_kernels.py::test_batchnorm_in_parts_matches_serial[shape1-float64-",
    "tests/test_threaded_kernels.py::test_a_cached_program_with_threaded_kernels_loads_in_a_new_process",
    "tests/test_backward_again.py::test_backward_calls_after_one_forward[deconv-relu-conv-write-cpu]",
    "tests/test_dist.py::test_dist_sync_equals_single_process[2-None]",
    "tests/test_dist.py::test_dist_sync_equals_single_process[3-16]",
    "tests/test_float32_accuracy.py::test_resnet_v1_stage_on_7x7_maps_trains_in_float32_like_float64",
    "tests/test_float32_accuracy.py::test_tile_gemm_long_sums_are_as_accurate_as_blas[",
    "tests/test_profiler.py::test_kernel_events_on_gpu",
    "tests/test_no_leftovers.py::test_default_settings_leave_no_process_after_the_program",
    "tests/test_custom_op.py::test_numpy_softmax_example_trains",
    "tests/test_cli.py::test_timings_compile_each_distinct_kernel_once",
    "tests/test_rnn.py::test_lstm_language_model_perplexity_falls[",
    "tests/test_rnn.py::test_bucketing_example_reads_a_text_file",
)
KEEP = (   # the one parameter of a test above that stays in the default tier
    "tests/test_gluon_rnn.py::test_fused_layer_matches_its_unfused_cells[lstm]",
    "tests/test_gluon_rnn.py::test_cell_unroll_gradients_match_mx_rnn_symbols[lstm]",
    "tests/test_optimizer_host.py::test_fused_on_a_gpu_equals_the_cpu[nadam]",
    "tests/test_random_ops.py::test_moments_on_the_cuda_target[uniform]",
    "tests/test_rnn.py::test_fused_cell_matches_its_unfused_cells[lstm-True-NTC]",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.nodeid.startswith(EXHAUSTIVE) and item.nodeid not in KEEP:
            item.add_marker(pytest.mark.exhaustive)
    if not config.args or "tests" in config.args:   # the whole suite: no entry may be stale
        ids = {item.nodeid for item in items}
        files = {i.split("::")[0] for i in ids}   # (a module skipped in this venv collects nothing)
        stale = [e for e in EXHAUSTIVE + KEEP
                 if e.split("::")[0] in files and not any(i.startswith(e) for i in ids)]
        stale += [k for k in KEEP if not k.startswith(EXHAUSTIVE)]
        if stale:   # a renamed test would silently come back into the default tier
            raise pytest.UsageError(f"tests/conftest.py names tests that do not exist: {stale}")
