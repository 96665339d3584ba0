"""symjit's convolution kernels beside oneDNN's, layer by layer, in one process: is calling oneDNN
worth it, and in which memory layout?

oneDNN (Intel's deep-learning primitives, what MXNet 1.9.1 and PyTorch run their CPU convolutions
on) has no maintained Python binding; its CPU-only builds on PyPI (``onednn-cpu-gomp``, the last
2023.2.0: oneDNN v3.2, GNU OpenMP) ship only ``libdnnl.so``. This script calls that library's C API
through ``ctypes`` (a few calls: memory descriptors, the three convolution primitives, reorders) and
times, per layer of ``bench_conv_vec.py``'s list, the forward and the backward (data and weight
gradients):

* ``symjit``: an executor of the layer alone (``Convolution``, no bias): the forward of an
  inference executor, and a training executor's ``backward`` (data and weight gradients), the
  kernels its compiler picks for the shape;
* ``blocked``: oneDNN's convolution with every tensor in the layout it picks (``format_tag_any``:
  channels in blocks of 8 on AVX2, 16 on AVX-512), the arrays already in that layout, as MXNet keeps
  its activations between oneDNN operators;
* ``blocked + reorders``: the same, plus the reorders from and to plain NCHW arrays around the
  call (what one oneDNN convolution among symjit's NCHW kernels would cost; forward and data
  gradient reorder their input and output, the weight gradient its two inputs and its output;
  the weight is taken as already reordered, as for inference);
* ``plain``: oneDNN's convolution on plain NCHW arrays (its GEMM-based kernels).

Peers and oneDNN are never dependencies of symjit or its tests: point ``--dnnl-lib`` at a
``libdnnl.so.3`` (``pip download onednn-cpu-gomp==2023.2.0`` and unzip it)::

    OMP_NUM_THREADS=2 python benchmarks/bench_onednn.py --dnnl-lib /path/to/libdnnl.so.3 \\
        [--batch 2] [--reps 5] [--layers s1,s2,s3,s4,...]

Best ms of each over ``--reps`` calls in three turns; every call waits for oneDNN's stream.
"""
from __future__ import annotations

import argparse
import ctypes as C
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")
from benchmarks.bench_conv_vec import LAYERS, _pair  # noqa: E402
from benchmarks.bench_winograd import best_of_turns  # noqa: E402

# The C API's constants (oneDNN v3: dnnl_types.h, dnnl_common_types.h)
F32, TAG_ANY, TAG_ABCD = 3, 1, 5
FORWARD_TRAINING, CONVOLUTION_DIRECT, CPU_ENGINE, STREAM_IN_ORDER = 64, 1, 1, 1
ARG = {"src": 1, "dst": 17, "weights": 33, "diff_src": 129, "diff_dst": 145, "diff_weights": 161}
QUERY_MD = {"src": 129, "diff_src": 130, "weights": 131, "diff_weights": 132, "dst": 133,
            "diff_dst": 134}
_P = C.c_void_p
_Dims = C.c_int64 * 12


class _ExecArg(C.Structure):
    _fields_ = [("arg", C.c_int), ("memory", _P)]


class OneDNN:
    """The few oneDNN C calls a convolution needs, on one CPU engine and one in-order stream. Every
    buffer handed to a memory object is kept alive by the instance."""

    SIGNATURES = {
        "dnnl_engine_create": (C.c_int, [C.POINTER(_P), C.c_int, C.c_size_t]),
        "dnnl_stream_create": (C.c_int, [C.POINTER(_P), _P, C.c_uint]),
        "dnnl_memory_desc_create_with_tag": (C.c_int, [C.POINTER(_P), C.c_int, _Dims, C.c_int, C.c_int]),
        "dnnl_convolution_forward_primitive_desc_create": (
            C.c_int, [C.POINTER(_P), _P, C.c_int, C.c_int, _P, _P, _P, _P, _Dims, _Dims, _Dims, _Dims, _P]),
        "dnnl_convolution_backward_data_primitive_desc_create": (
            C.c_int, [C.POINTER(_P), _P, C.c_int, _P, _P, _P, _Dims, _Dims, _Dims, _Dims, _P, _P]),
        "dnnl_convolution_backward_weights_primitive_desc_create": (
            C.c_int, [C.POINTER(_P), _P, C.c_int, _P, _P, _P, _P, _Dims, _Dims, _Dims, _Dims, _P, _P]),
        "dnnl_primitive_desc_query_md": (_P, [_P, C.c_int, C.c_int]),
        "dnnl_primitive_create": (C.c_int, [C.POINTER(_P), _P]),
        "dnnl_memory_create": (C.c_int, [C.POINTER(_P), _P, _P, _P]),
        "dnnl_memory_desc_get_size": (C.c_size_t, [_P]),
        "dnnl_reorder_primitive_desc_create": (C.c_int, [C.POINTER(_P), _P, _P, _P, _P, _P]),
        "dnnl_primitive_execute": (C.c_int, [_P, _P, C.c_int, _P]),
        "dnnl_stream_wait": (C.c_int, [_P]),
    }

    def __init__(self, path: str):
        self.lib = C.CDLL(path)
        for name, (restype, argtypes) in self.SIGNATURES.items():
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        self.keep: list = []
        self.engine = self._make("dnnl_engine_create", CPU_ENGINE, 0)
        self.stream = self._make("dnnl_stream_create", self.engine, STREAM_IN_ORDER)

    def _make(self, fn: str, *args):
        handle = _P()
        status = getattr(self.lib, fn)(C.byref(handle), *args)
        if status != 0:
            raise RuntimeError(f"{fn} returned oneDNN status {status}")
        return handle

    @staticmethod
    def dims(*values: int):
        d = _Dims()
        d[:len(values)] = values
        return d

    def desc(self, shape: tuple, tag: int):
        return self._make("dnnl_memory_desc_create_with_tag", len(shape), self.dims(*shape), F32, tag)

    def memory(self, desc, array: np.ndarray | None = None):
        """A memory object over ``array`` (plain), or over a new zeroed buffer of ``desc``'s size."""
        if array is None:
            array = np.zeros(self.lib.dnnl_memory_desc_get_size(desc) // 4 + 16, np.float32)
        self.keep.append(array)
        return self._make("dnnl_memory_create", desc, self.engine, _P(array.ctypes.data))

    def query(self, pd, what: str):
        return self.lib.dnnl_primitive_desc_query_md(pd, QUERY_MD[what], 0)

    def call(self, pd, args: dict):
        """A function that runs ``pd``'s primitive on ``args`` (name -> memory) and waits."""
        prim = self._make("dnnl_primitive_create", pd)
        packed = (_ExecArg * len(args))(*[_ExecArg(ARG[k], m) for k, m in args.items()])
        self.keep.append(packed)
        lib, stream = self.lib, self.stream

        def run():
            lib.dnnl_primitive_execute(prim, stream, len(packed), packed)
            lib.dnnl_stream_wait(stream)
        return run

    def reorder(self, src_desc, dst_desc, src_mem, dst_mem):
        pd = self._make("dnnl_reorder_primitive_desc_create", src_desc, self.engine, dst_desc,
                        self.engine, None)
        return self.call(pd, {"src": src_mem, "dst": dst_mem})


def onednn_layer(d: OneDNN, x, w, dout, pad: tuple, blocked: bool) -> dict:
    """oneDNN's forward, data gradient and weight gradient of a stride-1 convolution of ``x`` by
    ``w`` (``dout``: the output gradient), each a function; with ``blocked`` also the
    ``<kind>+reorders`` forms. The forward's output is checked against a numpy convolution."""
    tag = TAG_ANY if blocked else TAG_ABCD
    geom = (d.dims(1, 1), d.dims(0, 0), d.dims(*pad), d.dims(*pad))
    arrays = {"x": x, "w": w, "y": dout}
    plain = {k: d.desc(a.shape, TAG_ABCD) for k, a in arrays.items()}
    plain_mem = {k: d.memory(plain[k], a) for k, a in arrays.items()}
    y = np.empty_like(dout)   # the forward's output, reordered back to NCHW
    fpd = d._make("dnnl_convolution_forward_primitive_desc_create", d.engine, FORWARD_TRAINING,
                  CONVOLUTION_DIRECT, d.desc(x.shape, tag), d.desc(w.shape, tag), None,
                  d.desc(dout.shape, tag), *geom, None)
    bpd = d._make("dnnl_convolution_backward_data_primitive_desc_create", d.engine, CONVOLUTION_DIRECT,
                  d.desc(x.shape, tag), d.desc(w.shape, tag), d.desc(dout.shape, tag), *geom, fpd, None)
    wpd = d._make("dnnl_convolution_backward_weights_primitive_desc_create", d.engine,
                  CONVOLUTION_DIRECT, d.desc(x.shape, tag), d.desc(w.shape, tag), None,
                  d.desc(dout.shape, tag), *geom, fpd, None)
    # each primitive's arguments: role -> (the plain array of its shape, whether it is an input)
    need = {"forward": {"src": ("x", True), "weights": ("w", True), "dst": ("y", False)},
            "backward_data": {"diff_dst": ("y", True), "weights": ("w", True), "diff_src": ("x", False)},
            "backward_weight": {"src": ("x", True), "diff_dst": ("y", True), "diff_weights": ("w", False)}}
    calls, moves = {}, {}
    for pd, kind in ((fpd, "forward"), (bpd, "backward_data"), (wpd, "backward_weight")):
        args, ins, outs = {}, [], []
        for role, (name, given) in need[kind].items():
            md = d.query(pd, role)
            mem = d.memory(md)
            args[role] = mem
            if given:                            # filled from the plain array
                move = d.reorder(plain[name], md, plain_mem[name], mem)
                move()
                if name != "w":
                    ins.append(move)
            else:
                out = y if role == "dst" else np.empty_like(arrays[name])
                outs.append(d.reorder(md, plain[name], mem, d.memory(plain[name], out)))
        calls[kind] = d.call(pd, args)
        moves[kind] = ins + outs
    calls["forward"]()
    moves["forward"][-1]()                       # its output into y
    _check(x, w, pad, y)
    if blocked:
        for kind in list(calls):
            steps = moves[kind][:-1] + [calls[kind]] + moves[kind][-1:]
            calls[kind + "+reorders"] = lambda steps=steps: [s() for s in steps]
    return calls


def _check(x, w, pad: tuple, y) -> None:
    """``y`` against a float64 numpy convolution of ``x`` by ``w``."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    ref = np.zeros(y.shape)
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            ref += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + y.shape[2], j:j + y.shape[3]], w[:, :, i, j])
    err = np.abs(ref - y).max() / max(1.0, np.abs(ref).max())
    if err > 1e-4:
        raise AssertionError(f"oneDNN's forward differs from numpy's by {err:.2e} of its magnitude")


def symjit_layer(x, w, dout, kernel: tuple, pad: tuple) -> dict:
    """symjit's forward (an inference executor) and backward (data and weight gradients, a training
    executor's ``backward`` after one forward) of the convolution: the kernels its compiler picks."""
    import symjit as mx
    data, weight = mx.sym.Variable("data"), mx.sym.Variable("weight")
    net = mx.sym.Convolution(data, weight, kernel=kernel, pad=pad, num_filter=w.shape[0], no_bias=True)
    infer = net.bind(mx.cpu(), {"data": mx.nd.array(x), "weight": mx.nd.array(w)}, grad_req="null")
    train = net.bind(mx.cpu(), {"data": mx.nd.array(x), "weight": mx.nd.array(w)},
                     args_grad={"data": mx.nd.zeros(x.shape), "weight": mx.nd.zeros(w.shape)})
    train.forward(is_train=True)
    head = mx.nd.array(dout)

    def forward():
        infer.forward(is_train=False)
        infer.outputs[0].wait_to_read()

    def backward():
        train.backward(head)
        train.grad_arrays[1].wait_to_read()
    return {"forward": forward, "backward": backward}


def table(d: OneDNN, names: list[str], batch: int, reps: int) -> None:
    rng = np.random.default_rng(0)
    print(f"batch {batch}, best ms: symjit (executor) / oneDNN blocked / blocked + reorders / oneDNN "
          "plain NCHW (symjit's time over oneDNN blocked); backward: data and weight gradients")
    print("| layer | forward | backward |")
    print("|---|---|---|")
    for name in names:
        c, f, h, k, p = LAYERS[name]
        (kh, kw), (ph, pw) = _pair(k), _pair(p)
        x = rng.random((batch, c, h, h), np.float32)
        w = rng.random((f, c, kh, kw), np.float32) - 0.5
        dout = rng.random((batch, f, h + 2 * ph - kh + 1, h + 2 * pw - kw + 1), np.float32) - 0.5
        ours = symjit_layer(x, w, dout, (kh, kw), (ph, pw))
        theirs = {"blocked": onednn_layer(d, x, w, dout, (ph, pw), True),
                  "plain": onednn_layer(d, x, w, dout, (ph, pw), False)}
        for form in ("blocked", "plain"):
            calls = theirs[form]
            for suffix in ("", "+reorders") if form == "blocked" else ("",):
                bd, bw = calls["backward_data" + suffix], calls["backward_weight" + suffix]
                calls["backward" + suffix] = lambda bd=bd, bw=bw: (bd(), bw())
        cells = []
        for kind in ("forward", "backward"):
            b = theirs["blocked"]
            t = best_of_turns([ours[kind], b[kind], b[kind + "+reorders"], theirs["plain"][kind]], reps)
            cells.append(" / ".join(f"{v * 1e3:.2f}" for v in t) + f" ({t[0] / t[1]:.2f}x)")
        print(f"| {name} {c}->{f} {h}x{h} {kh}x{kw} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dnnl-lib", required=True, help="path of libdnnl.so.3 (oneDNN v3, CPU runtime)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", default=",".join(LAYERS))
    a = ap.parse_args()
    table(OneDNN(a.dnnl_lib), a.layers.split(","), a.batch, a.reps)


if __name__ == "__main__":
    main()
