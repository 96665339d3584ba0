"""The CUDA target against the CPU target, on numba's CUDA simulator (as CI runs GPU code)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.gpu

SCRIPT = r"""
import numpy as np, symjit as mx
from symjit.compiler.pipeline import compile_symbol
from symjit.compiler.binding import bind_phases, value_arrays
from symjit.config import Config
from symjit.compiler.codegen.generate import PROGRAM_CALLS_LIMIT
CFG = Config.from_env().replace(program_calls=PROGRAM_CALLS_LIMIT)   # phases called by name

def run(target, net, inputs):
    shapes = {k: v.shape for k, v in inputs.items()}
    c = compile_symbol(net, shapes, {k: v.dtype for k, v in inputs.items()}, {}, False,
                       CFG, target=target)
    g = c.graph
    out = np.zeros(g.values[g.outputs[0]].shape, g.values[g.outputs[0]].dtype)
    arena = np.zeros(max(c.plan.planned_bytes, 1), np.uint8)
    array = value_arrays(c, arena, lambda vid, v: inputs[v.ref] if v.kind == 'arg' else out)
    for seg, payload in bind_phases(c, array)['forward']:
        if seg.kind == 'calls':   # the CPU: a lone kernel, called from the host
            for fn, args in c.target.prepare_calls(c.module, seg.launches, dict(zip(seg.vids, payload))):
                fn(*args)
        else:
            getattr(c.module, seg.name)(*payload)
    return out, len(c.groups)

rng = np.random.default_rng(0)
x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
nets = {
    'chain': mx.sym.tanh(mx.sym.sigmoid(x * 2.0 + 1.0) - x / 3.0),
    'broadcast': mx.sym.exp(mx.sym.broadcast_mul(x, y) * 0.5) + x,
    'activation': (mx.sym.Activation(x - 0.25, act_type='softrelu')
                   * mx.sym.Activation(x, act_type='relu')),
}
inputs = {'x': rng.uniform(-2, 2, (5, 7)).astype(np.float32),
          'y': rng.uniform(-2, 2, (1, 7)).astype(np.float32)}
for name, net in nets.items():
    used = {k: v for k, v in inputs.items() if k in net.list_arguments()}
    cpu, _ = run('cpu', net, used)
    gpu, kernels = run('cuda', net, used)
    err = float(np.abs(cpu - gpu).max())
    assert err < 1e-5, (name, err)
    print(name, kernels, err)
fc_inputs = {'x': inputs['x'], 'fc_weight': rng.uniform(-1, 1, (3, 7)).astype(np.float32),
             'fc_bias': rng.uniform(-1, 1, 3).astype(np.float32)}
fc = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name='fc'), act_type='tanh')
cpu, _ = run('cpu', fc, fc_inputs)
gpu, kernels = run('cuda', fc, fc_inputs)
assert kernels == 1 and float(np.abs(cpu - gpu).max()) < 1e-5   # bias and tanh in the GEMM's loop
print('fc', kernels, float(np.abs(cpu - gpu).max()))
# take with mode='raise' checks its indices on the device (an error flag the host reads)
tk = mx.sym.take(x, y, mode='raise', name='tk')
idx = {'x': inputs['x'], 'y': np.array([4.0, 0.0], np.float32)}
cpu, _ = run('cpu', tk, idx)
gpu, _ = run('cuda', tk, idx)
assert np.array_equal(cpu, gpu)
print('take raise', float(np.abs(cpu - gpu).max()))
# the launch table: prepared once for the bound buffers, run as often as the program
from symjit.base import MXNetError
from symjit.lower.target import get_target
c = compile_symbol(mx.sym.exp(tk) * 2, {'x': (5, 7), 'y': (2,)}, {'x': np.float32, 'y': np.float32},
                   {}, False, CFG, target='cuda')
out = np.zeros((2, 7), np.float32)
array = value_arrays(c, np.zeros(max(c.plan.planned_bytes, 1), np.uint8),
                     lambda vid, v: idx[v.ref] if v.kind == 'arg' else out)
(seg, payload), = bind_phases(c, array)['forward']
table, checks = getattr(c.module, seg.name + '_launches')(*payload)
assert len(table) == len(c.program.kernels) and checks and any(hosts for _, _, hosts, _ in table)
run_once = get_target('cuda').prepare(c.module, seg.name, payload)
for _ in range(2):
    out[:] = 0
    run_once()
    assert np.allclose(out, np.exp(inputs['x'][[4, 0]]) * 2, rtol=1e-6)
idx['y'][0] = 9.0        # the same buffers, a bad index: the prepared run raises
try:
    run_once()
    raise AssertionError('no error for index 9')
except MXNetError as exc:
    assert 'take' in str(exc), exc
print('launch table', len(table))
"""


def test_cuda_simulator_matches_cpu(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SYMJIT_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "chain 1" in proc.stdout      # the whole elementwise chain is one kernel
    assert "fc 1" in proc.stdout         # FullyConnected + bias + tanh: one CUDA kernel
    assert "take raise" in proc.stdout   # a bounds-checked take (error flag) matches the CPU
    assert "launch table" in proc.stdout  # prepared once, run twice, its data checks still read


SHARED_SCRIPT = r"""
import sys, time
import numpy as np
from numba import cuda, float32
from numba.cuda.simulator import kernelapi
from symjit.kernels.cuda import guard_simulator

class SlowEmpty:   # the simulator's numpy, with np.empty giving up the GIL as a thread switch would
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(*args, **kwargs):
        time.sleep(0.002)
        return np.empty(*args, **kwargs)

kernelapi.np = SlowEmpty()
if sys.argv[1] == "guarded":
    assert guard_simulator()

@cuda.jit
def rotate(out):
    s = cuda.shared.array(8, float32)
    t = cuda.threadIdx.x
    s[t] = t + 1
    cuda.syncthreads()
    out[cuda.blockIdx.x * 8 + t] = s[(t + 1) % 8]

out = np.zeros(16, np.float32)
rotate[2, 8](out)
print(out.tolist())
"""


def test_a_block_shares_one_shared_array_on_the_simulator():
    """Every thread of a block sees one ``cuda.shared.array`` on the simulator once symjit has
    guarded its lookup (at its first launch shape), even when making the array gives up the GIL
    between the threads' lookups (unguarded, the threads then make arrays of their own and read
    slots nobody wrote: the script run with ``plain`` prints such values)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", SHARED_SCRIPT, "guarded"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[-2] == str([float((t + 1) % 8 + 1) for t in range(8)] * 2)
