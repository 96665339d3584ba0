"""mx.mon.Monitor over an executor: interval, pattern, statistic, log format."""
from __future__ import annotations

import logging

import numpy as np

import symjit as mx


def _exe():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3))
    ex.arg_dict["data"][:] = np.arange(6.0).reshape(2, 3)
    ex.arg_dict["fc_weight"][:] = 1.0
    ex.arg_dict["fc_bias"][:] = 0.5
    return ex


def test_interval_pattern_and_default_statistic():
    ex = _exe()
    mon = mx.mon.Monitor(2, pattern="fc_.*")
    mon.install(ex)
    seen = []
    for _ in range(4):
        mon.tic()
        ex.forward()
        seen.append(mon.toc())
    assert [len(s) for s in seen] == [3, 0, 3, 0]      # batches 1 and 3 only
    first = {name: float(text) for _, name, text in seen[0]}
    out = np.arange(6.0).reshape(2, 3) @ np.ones((3, 2)) + 0.5
    assert np.isclose(first["fc_output"], np.linalg.norm(out) / np.sqrt(out.size))
    assert np.isclose(first["fc_weight"], 1.0) and np.isclose(first["fc_bias"], 0.5)
    assert "data" not in first


def test_custom_stat_sort_and_log_format(caplog):
    ex = _exe()
    mon = mx.mon.Monitor(1, stat_func=lambda x: mx.nd.max(x), sort=True)
    mon.install(ex)
    mon.tic()
    ex.forward()
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    names = [r.getMessage().split()[2] for r in caplog.records]
    assert names == sorted(names) and "fc_output" in names and "data" in names
    line = next(r.getMessage() for r in caplog.records if "fc_output" in r.getMessage())
    assert line.startswith("Batch:       1") and line.rstrip().endswith("12.5")
