"""mx.contrib and the placeholders of the modules symjit does not have yet: importing them works,
using them is a clear error."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import symjit as mx


def test_contrib_operator_namespaces():
    assert mx.contrib.sym is mx.sym.contrib and mx.contrib.symbol is mx.sym.contrib
    assert mx.contrib.nd is mx.nd.contrib and mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.onnx is mx.onnx
    with pytest.raises(AttributeError):
        mx.contrib.nonexistent  # noqa: B018


def _amp_convert():
    from symjit.contrib.amp import amp
    amp.convert_symbol(None)


@pytest.mark.parametrize("call, what", [
    (_amp_convert, "mixed precision"),
    (lambda: mx.contrib.quant.quantize_model(None, {}, {}), "quantization"),
])
def test_out_of_scope_contrib_modules_import_and_refuse(call, what):
    with pytest.raises(mx.MXNetError, match=what):
        call()


def test_planned_modules_import_as_placeholders():
    code = ("import sys\nimport symjit as mx\nfrom symjit import np, npx\n"
            "assert not hasattr(mx, 'np')\n"
            "for mod in (np, npx):\n"
            "    try:\n        mod.anything\n    except mx.MXNetError as e:\n"
            "        assert str(e).startswith('mx.' + mod.__name__.split('.')[-1] + ' is not supported'), e\n"
            "    else:\n        raise SystemExit('no error')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_attribute_module_and_py_slice():
    from symjit.attribute import AttrScope
    from symjit.ndarray.ndarray import py_slice
    assert AttrScope is mx.AttrScope
    assert py_slice is slice


def test_dataloader_iter_pads_the_last_batch_and_checks_what_it_gets():
    ds = mx.gluon.data.ArrayDataset(np.arange(14.0).reshape(7, 2), np.arange(7.0))
    it = mx.contrib.io.DataLoaderIter(mx.gluon.data.DataLoader(ds, batch_size=3), dtype="float64")
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    last = batches[-1]
    assert last.data[0].dtype == np.float64
    assert last.data[0].asnumpy().tolist() == [[12.0, 13.0], [0.0, 0.0], [0.0, 0.0]]
    assert last.label[0].asnumpy().tolist() == [6.0, 0.0, 0.0]
    it.reset()
    assert len(list(it)) == 3
    with pytest.raises(mx.MXNetError, match="no batch"):
        mx.contrib.io.DataLoaderIter([])
    with pytest.raises(mx.MXNetError, match="pairs of NDArrays"):
        mx.contrib.io.DataLoaderIter([[1, 2, 3]])
