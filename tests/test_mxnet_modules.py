"""MXNet's small top-level modules and version numbers: what an MXNet 1.x script finds in them.

``mx.__version__`` is the MXNet API level; symjit's own version is ``__symjit_version__``.
``mx.visualization`` is ``mx.viz``; ``mx.runtime`` reports the features symjit really has;
``mx.libinfo`` says there is no native library; ``mx.engine``'s bulk size is kept and changes no
result; ``mx.util`` has the classic (non-NumPy) semantics.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.compiler import cache

ROOT = Path(__file__).resolve().parents[1]

# the feature names of MXNet 1.9.1's mx.runtime, in its order
MXNET_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
    "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
    "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
    "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
]


# --- versions ---------------------------------------------------------------------------------------

def test_mxnet_scripts_see_mxnet_1_9_1():
    assert mx.__version__ == "1.9.1"
    major, minor = (int(x) for x in mx.__version__.split(".")[:2])
    assert (major, minor) >= (1, 6) and major < 2   # the branch MXNet 1.x scripts take
    assert mx.libinfo.__version__ == mx.__version__


def test_symjit_version_is_the_package_version():
    text = (ROOT / "pyproject.toml").read_text()
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]   # the [project] table
    assert mx.__symjit_version__ == re.search(r'^version = "([^"]+)"$', project, re.M).group(1)
    assert importlib.metadata.version("symjit") == mx.__symjit_version__


def test_cache_keys_follow_symjit_version_not_the_api_level(monkeypatch):
    from symjit import _version
    key = cache.source_key("def k(): pass\n", "cpu")
    monkeypatch.setattr(_version, "__version__", "9.9.9")
    assert cache.source_key("def k(): pass\n", "cpu") == key
    monkeypatch.setattr(_version, "__symjit_version__", "0.0.0-other")
    assert cache.source_key("def k(): pass\n", "cpu") != key


def test_version_option_prints_both(capsys):
    with pytest.raises(SystemExit) as exc:
        from symjit.cli import main
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"symjit {mx.__symjit_version__} (MXNet 1.9.1 API)"


def test_console_script_version():
    out = subprocess.run([sys.executable, "-m", "symjit.cli", "--version"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"symjit \S+ \(MXNet 1\.9\.1 API\)\n", out.stdout), out.stdout


# --- mx.visualization -------------------------------------------------------------------------------

def test_visualization_is_viz():
    import symjit.visualization
    from symjit.visualization import plot_network
    assert mx.visualization is mx.viz is symjit.visualization
    assert plot_network is mx.viz.plot_network
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    assert "fc" in mx.visualization.plot_network(net, shape={"data": (1, 4)}).source


# --- mx.runtime -------------------------------------------------------------------------------------

def test_features_have_mxnet_names_and_flags():
    features = mx.runtime.Features()
    assert list(features) == MXNET_FEATURES
    assert [f.name for f in mx.runtime.feature_list()] == MXNET_FEATURES
    for name, feature in features.items():
        assert feature.name == name and isinstance(feature.enabled, bool)
        assert features.is_enabled(name) is feature.enabled
        assert features.is_enabled(name.lower()) is feature.enabled
        assert repr(feature) == ("✔ " if feature.enabled else "✖ ") + name
    assert repr(features).startswith("[") and "PROFILER" in repr(features)


def test_features_report_what_symjit_has():
    f = mx.runtime.Features()
    for never in ("CUDNN", "NCCL", "TENSORRT", "MKLDNN", "CUDA_RTC", "JEMALLOC", "CAFFE", "TVM_OP", "LAPACK"):
        assert not f.is_enabled(never), never
    assert f.is_enabled("PROFILER")
    assert f.is_enabled("OPENCV") == (importlib.util.find_spec("cv2") is not None)
    assert f.is_enabled("DIST_KVSTORE") == (importlib.util.find_spec("mpi4py") is not None)
    blas = [name for name in ("BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE") if f.is_enabled(name)]
    assert len(blas) <= 1
    # a processor with AVX2 has AVX, SSE4.2 and SSE2 (as LLVM reports x86 processors)
    if f.is_enabled("CPU_AVX2"):
        assert f.is_enabled("CPU_AVX") and f.is_enabled("CPU_SSE4_2") and f.is_enabled("CPU_SSE2")


def test_cuda_feature_matches_whether_a_gpu_array_can_be_made():
    try:
        mx.nd.zeros((2,), ctx=mx.gpu(0)).asnumpy()
        usable = True
    except mx.MXNetError:
        usable = False
    assert mx.runtime.Features().is_enabled("CUDA") == usable


def test_unknown_feature_is_a_runtime_error_naming_it():
    with pytest.raises(RuntimeError, match=r"'NO_SUCH'.*known features: CUDA, CUDNN") as exc:
        mx.runtime.Features().is_enabled("no_such")
    assert isinstance(exc.value, mx.MXNetError)


# --- mx.libinfo -------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [lambda: mx.libinfo.find_lib_path(), lambda: mx.libinfo.find_include_path(),
                                  lambda: mx.libinfo.find_conf_path()])
def test_library_paths_are_a_runtime_error_saying_why(call):
    with pytest.raises(RuntimeError, match="no native library") as exc:
        call()
    assert isinstance(exc.value, mx.MXNetError)


# --- mx.engine --------------------------------------------------------------------------------------

def _small_loop() -> np.ndarray:
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(4):
        x = x * 2 + 1
    return x.asnumpy()


def test_bulk_size_is_kept_and_returned():
    first = mx.engine.set_bulk_size(7)
    try:
        assert mx.engine.set_bulk_size(3) == 7
        with mx.engine.bulk(11) as scope:
            assert scope is not None
            assert mx.engine.set_bulk_size(11) == 11
        assert mx.engine.set_bulk_size(3) == 3   # restored after the scope
    finally:
        mx.engine.set_bulk_size(first)
    with pytest.raises(mx.MXNetError, match="set_bulk_size"):
        mx.engine.set_bulk_size(-1)


def test_bulk_size_is_per_thread_and_starts_at_zero():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(mx.engine.set_bulk_size(5)))
    thread.start()
    thread.join()
    assert seen == [0]


def test_bulk_changes_no_result():
    plain = _small_loop()
    with mx.engine.bulk(16):
        bulked = _small_loop()
    np.testing.assert_array_equal(plain, bulked)
    np.testing.assert_array_equal(plain, (np.arange(6).reshape(2, 3) * 16 + 15).astype(np.float32))


# --- mx.util ----------------------------------------------------------------------------------------

def test_numpy_array_semantics_are_off_and_cannot_be_turned_on():
    assert mx.util.is_np_shape() is False and mx.util.is_np_array() is False
    assert mx.is_np_shape is mx.util.is_np_shape and mx.use_np is mx.util.use_np
    assert mx.util.set_np_shape(False) is False
    mx.util.set_np(shape=False, array=False)
    mx.util.reset_np()
    with mx.np_shape(False), mx.np_array(False):
        assert not mx.is_np_shape()
    decorated = [mx.util.use_np(len), mx.util.use_np_array(len)]

    @mx.use_np
    class Net:
        pass
    refused = [lambda: mx.util.set_np(), lambda: mx.util.set_np(shape=True, array=True), Net,
               *(lambda f=f: f([1]) for f in decorated)]
    for call in refused:
        with pytest.raises(NotImplementedError, match="NumPy array semantics are not supported") as exc:
            call()
        assert isinstance(exc.value, mx.MXNetError)
        assert not mx.util.is_np_shape()          # a refused call changes nothing
    with pytest.raises(mx.util.NumpySemanticsUnsupported, match=r"np_array\(True\)"):
        with mx.np_array():
            pass
    with pytest.raises(ValueError, match="shape semantics are required"):
        mx.util.set_np(shape=False, array=True)


def test_environment_and_directories(monkeypatch, tmp_path):
    monkeypatch.delenv("SYMJIT_UTIL_TEST", raising=False)
    assert mx.util.getenv("SYMJIT_UTIL_TEST") is None
    mx.util.setenv("SYMJIT_UTIL_TEST", "on")
    assert mx.util.getenv("SYMJIT_UTIL_TEST") == "on"
    mx.util.setenv("SYMJIT_UTIL_TEST", None)
    assert mx.util.getenv("SYMJIT_UTIL_TEST") is None
    mx.util.makedirs(tmp_path / "a" / "b")
    mx.util.makedirs(str(tmp_path / "a" / "b"))   # exists already: fine
    assert (tmp_path / "a" / "b").is_dir()


def test_gpu_queries():
    n = mx.util.get_gpu_count()
    assert n == mx.num_gpus()
    with pytest.raises(mx.MXNetError, match=rf"no GPU {n}: {n} GPU\(s\)"):
        mx.util.get_gpu_memory(n)
    with pytest.raises(ValueError, match="expected a gpu context"):
        mx.util.get_cuda_compute_capability(mx.cpu())
    if n:
        free, total = mx.util.get_gpu_memory(0)
        assert 0 <= free <= total
        assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 10


def test_new_modules_are_listed():
    names = dir(mx)
    for name in ("visualization", "runtime", "libinfo", "engine", "util", "is_np_shape", "np_shape"):
        assert name in names, name
