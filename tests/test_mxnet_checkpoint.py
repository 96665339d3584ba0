"""A checkpoint written by MXNet 1.9.1 (symbol JSON + .params) reproduces MXNet's own inference
output through symjit's compiled (fused) executor."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.config import Config
from symjit.executor import Executor

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mxnet"


@pytest.mark.parametrize("fusion", [True, False])
def test_mlp_checkpoint_matches_mxnet_output(fusion):
    sym = mx.sym.load(str(DATA / "mlp-symbol.json"))
    params = mx.nd.load(str(DATA / "mlp-0005.params"))
    expected = json.loads((DATA / "mlp-0005-expected.json").read_text())
    x = np.array(expected["input"], dtype=np.float32)
    arg = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=x.shape)[0]))
    args = {n: arg.get(n, mx.nd.zeros(s)) for n, s in shapes.items()}
    args["data"] = mx.nd.array(x)
    ex = Executor(sym, mx.cpu(), args, None, "null", aux, config=Config.from_env().replace(fusion=fusion))
    out = ex.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, np.array(expected["output"]), rtol=1e-5, atol=1e-6)
    kernels = [grp for grp in ex._programs["infer"].groups if not grp.view]
    if fusion:   # FullyConnected + BatchNorm (moving stats) + relu in one kernel
        assert [op.name for op in kernels[0].ops] == ["fc1", "bn1", "relu1"]
