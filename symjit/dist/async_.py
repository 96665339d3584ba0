"""``dist_async``: asynchronous training over MPI, with a parameter server thread on rank 0.

MXNet's ``dist_async`` applies each worker's push on the servers as it arrives, without waiting
for the other workers. symjit keeps that role and builds it on point-to-point MPI messages:

- rank 0 runs a *server thread* beside its worker. It owns the authoritative values and the
  updater (rank 0's ``set_optimizer``, as in MXNet where rank 0 sends the optimizer to the
  servers), and answers messages on a communicator of its own (``COMM_WORLD.Dup()``): a push
  (header, then the values of its keys packed in one buffer per dtype) is applied at once; a
  pull is answered with the current values. The thread polls with short sleeps, so an idle server
  costs no core.
- ``init`` is collective (every worker, same keys; rank 0's values win), as in ``dist_sync``;
  so is ``set_optimizer`` (a barrier follows it, so no worker pushes before the server has the
  updater: a push then would replace the value instead of updating it).
- ``push``/``pull`` involve only the calling worker and the server: a worker never waits for
  another worker. A pull issued after a push of the same worker sees that push applied (MPI keeps
  the order of messages between two ranks).
- Optimizer states live in the server: ``save_optimizer_states``/``load_optimizer_states`` work on
  rank 0 and are a clear error elsewhere.
- At exit each worker tells the server it has finished; rank 0 stops the thread when all have.
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError, write_atomic
from ..config import Config
from ..kvstore_local import Key, apply_update, pulled
from ..ndarray import NDArray
from . import mpi
from .sync import DistSyncKVStore, Layout, pack, unpack

__all__ = ["DistAsyncKVStore"]

TAG_HEADER, TAG_DATA, TAG_REPLY = 11, 12, 13
OP_PUSH, OP_PULL, OP_STOP = 1, 2, 3


class Server(threading.Thread):
    """The parameter server of a ``dist_async`` job (a daemon thread of rank 0)."""

    def __init__(self, comm: Any, workers: int, bucket_bytes: int):
        super().__init__(name="symjit-kvstore-server", daemon=True)
        self.comm, self.workers, self.bucket_bytes = comm, workers, bucket_bytes
        self.values: dict[int, NDArray] = {}          # key index -> value
        self.grads: dict[int, NDArray] = {}           # key index -> receive buffer of a push
        self.keys: dict[int, Key] = {}                # key index -> the key the updater is given
        self.updater: Any = None
        self.lock = threading.Lock()
        self._layouts: dict[tuple, Layout] = {}

    def add(self, index: int, key: Key, value: NDArray) -> None:
        with self.lock:
            self.keys[index] = key
            self.values[index] = value.copy()
            self.grads[index] = value.copy()

    def _layout(self, idx: tuple[int, ...]) -> Layout:
        return Layout.cached(self._layouts, idx, [self.values[i] for i in idx])

    def run(self) -> None:
        try:
            self._serve()
        except BaseException:   # an error here would leave every worker waiting: stop the job
            sys.stderr.write("[rank 0] symjit dist_async server failed:\n" + traceback.format_exc())
            sys.stderr.flush()
            self.comm.Abort(1)

    def _serve(self) -> None:
        MPI = mpi._mpi()
        status, stopped, pause = MPI.Status(), 0, 0.0
        while stopped < self.workers:
            if not self.comm.Iprobe(MPI.ANY_SOURCE, TAG_HEADER, status):
                pause = min(max(pause * 2, 2e-5), 5e-4)
                time.sleep(pause)
                continue
            pause = 0.0
            src = status.Get_source()
            header = np.empty(status.Get_count(MPI.INT64_T), dtype=np.int64)
            self.comm.Recv(header, src, TAG_HEADER)
            op, idx = int(header[0]), tuple(int(i) for i in header[1:])
            if op == OP_STOP:
                stopped += 1
            elif op == OP_PUSH:
                self._push(src, idx)
            elif op == OP_PULL:
                self._pull(src, idx)
            else:
                raise MXNetError(f"dist_async server: unknown message {op} from rank {src}")

    def _push(self, src: int, idx: tuple[int, ...]) -> None:
        layout = self._layout(idx)
        for chunk in layout.chunks(self.bucket_bytes):
            self.comm.Recv(chunk, src, TAG_DATA)
        where = f"dist_async server (push from rank {src})"
        with self.lock:
            grads = [self.grads[i] for i in idx]
            for flat, g in zip(layout.views(), grads):
                unpack(flat, g, where)
            apply_update(self.updater, [self.keys[i] for i in idx], grads, [self.values[i] for i in idx])

    def _pull(self, src: int, idx: tuple[int, ...]) -> None:
        layout = self._layout(idx)
        with self.lock:
            for flat, i in zip(layout.views(), idx):
                pack(self.values[i], flat)
        for chunk in layout.chunks(self.bucket_bytes):
            self.comm.Send(chunk, src, TAG_REPLY)


class DistAsyncKVStore(DistSyncKVStore):
    """An asynchronous distributed store (create with ``mx.kv.create('dist_async')``)."""

    def __init__(self, kv_type: str = "dist_async", config: Config | None = None):
        super().__init__(kv_type, config)
        self._scomm = self._comm.Dup()                # server traffic apart from the workers' own
        self._index: dict[Key, int] = {}              # key -> index, in init order (same on all ranks)
        self._server: Server | None = None
        self._closed = False
        if self._rank == 0:
            self._server = Server(self._scomm, self._size, self._config.dist_bucket_bytes)
            self._server.start()
        atexit.register(self.close)

    # -- collectives --------------------------------------------------------------------------
    def _registered(self, keys: list[Key]) -> None:
        """Number new keys in init order (the same on every rank); rank 0's server takes their
        values before they are broadcast, so it holds them before any worker can push."""
        for k in keys:
            self._index[k] = len(self._index)
            if self._server is not None:
                self._server.add(self._index[k], k, self._store[k])

    # -- worker <-> server --------------------------------------------------------------------
    def _send(self, op: int, keys: list[Key], where: str, data: Layout | None = None) -> None:
        header = np.array([op] + [self._index[k] for k in keys], dtype=np.int64)
        requests = [self._scomm.Isend(header, 0, TAG_HEADER)]
        if data is not None:
            chunks = data.chunks(self._config.dist_bucket_bytes)
            requests += [self._scomm.Isend(c, 0, TAG_DATA) for c in chunks]
        self._wait_all(requests, where)

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Send this worker's sum of ``value`` per key to the server, which applies it at once."""
        self._open("push")
        where = self._where("push")
        grouped = self._check_push(key, value, where)
        keys = sorted(grouped)  # type: ignore[type-var]  # one key type per call
        totals = self._sum_all(keys, grouped)
        layout = self._layout("push", keys, totals)
        for arr, flat in zip(totals, layout.views()):
            pack(arr, flat)
        self._send(OP_PUSH, keys, where, layout)

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Fetch the server's current value of each key into ``out``."""
        self._open("pull")
        where = self._where("pull")
        if out is None:
            raise ParamError(f"{where}: out is required (an NDArray or a list of NDArrays)")
        pairs = self._pairs(key, out, where, "out")
        for k, outs in pairs:
            self._check_shapes(k, outs, where, "out")
        keys = list(dict.fromkeys(k for k, _ in pairs))
        layout = self._layout("pull", keys, [self._store[k] for k in keys])
        requests = [self._scomm.Irecv(c, 0, TAG_REPLY) for c in layout.chunks(self._config.dist_bucket_bytes)]
        self._send(OP_PULL, keys, where)
        self._wait_all(requests, where)
        for k, flat in zip(keys, layout.views()):
            unpack(flat, self._store[k], where)
        for k, outs in pulled(pairs, ignore_sparse):
            for o in outs:
                self._store[k].copyto(o)

    def _open(self, op: str) -> None:
        if self._closed:
            raise MXNetError(f"{self._where(op)}: the store is closed")

    def close(self) -> None:
        """Tell the server this worker has finished (called at exit); rank 0 then waits for the
        other workers to finish before its server stops."""
        if self._closed:
            return
        self._closed = True
        self._send(OP_STOP, [], self._where("close"))
        if self._server is not None:
            self._server.join()

    # -- updater and states: the server's --------------------------------------------------------
    def _set_updater(self, updater: Any) -> None:
        """On rank 0 the server applies ``updater`` to every push; other ranks' updaters are unused.
        Collective (every worker calls it, as ``Module`` does): the barrier after it keeps a fast
        worker's first push from reaching the server before rank 0 has given it the updater."""
        super()._set_updater(updater)
        if self._server is not None:
            with self._server.lock:
                self._server.updater = updater
        self.barrier()

    set_updater = _set_updater

    def _server_states(self, op: str) -> Server:
        if self._server is None:
            raise MXNetError(f"{self._where(op)}: in dist_async the optimizer states live in the server "
                             "on rank 0; save or load them there")
        return self._server

    def save_optimizer_states(self, fname: Any, dump_optimizer: bool = False) -> None:
        """Write the server's optimizer states (rank 0 only)."""
        server = self._server_states("save_optimizer_states")
        get_states = self._updater_states(self._where("save_optimizer_states"), "get_states")
        with server.lock:
            data = get_states(dump_optimizer)
        write_atomic(fname, data)

    def load_optimizer_states(self, fname: Any) -> None:
        """Read states written by :meth:`save_optimizer_states` into the server (rank 0 only)."""
        server = self._server_states("load_optimizer_states")
        with server.lock:
            super().load_optimizer_states(fname)
