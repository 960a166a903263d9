"""The columnar forest: validation of numpy arrays (or tensors) and the .npz / Arrow encodings."""
from __future__ import annotations

import io
import json
import os
import struct
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from ._errors import TraceAllocError

ArrayLike = Any  # numpy arrays, sequences, or tensors (anything with .detach().cpu().numpy() or .numpy())


@dataclass(frozen=True)
class ForestArrays:
    """A checked columnar forest: one row per node over all trees, in tree order."""
    tree_offset: np.ndarray  # int64, T+1
    parent: np.ndarray  # int32, N (tree-local, -1 for roots)
    reward: np.ndarray  # float64, N
    visits: np.ndarray  # float64, N
    uncertainty: np.ndarray  # float64, N
    terminal: np.ndarray  # bool, N
    embedding: np.ndarray  # float32 or float64, N x D, C-contiguous
    tree_id: Optional[np.ndarray]  # unicode, T

    @property
    def trees(self) -> int:
        return int(self.tree_offset.shape[0] - 1)

    @property
    def nodes(self) -> int:
        return int(self.parent.shape[0])

    def columns(self) -> "dict[str, np.ndarray]":
        out = {"tree_offset": self.tree_offset, "parent": self.parent, "reward": self.reward, "visits": self.visits,
               "uncertainty": self.uncertainty, "terminal": self.terminal, "embedding": self.embedding}
        if self.tree_id is not None:
            out["tree_id"] = self.tree_id
        return out


def to_numpy(value: ArrayLike, name: str) -> np.ndarray:
    """numpy arrays as they are; torch tensors (duck-typed, no torch import) through .numpy()."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu()
    if hasattr(value, "numpy") and not isinstance(value, (list, tuple)):
        try:
            return np.asarray(value.numpy())
        except Exception as err:  # e.g. a tensor type numpy cannot represent
            raise TraceAllocError("invalid_value", "cannot convert to a numpy array: %s" % err, field=name) from None
    try:
        return np.asarray(value)
    except Exception as err:
        raise TraceAllocError("invalid_value", "cannot convert to a numpy array: %s" % err, field=name) from None


def _fail(name: str, message: str, offsets: Optional[np.ndarray] = None, row: Optional[int] = None,
          tree_ids: Optional[np.ndarray] = None) -> TraceAllocError:
    tree = node = None
    where = ""
    if offsets is not None and row is not None:
        t = int(np.searchsorted(offsets, row, side="right") - 1)
        node = int(row - offsets[t])
        tree = str(tree_ids[t]) if tree_ids is not None else str(t)
        where = "tree %s (#%d), node %d, " % (json.dumps(tree), t, node)
    return TraceAllocError("invalid_value", '%sfield "%s": %s' % (where, name, message), tree=tree, node=node, field=name)


def _integers(a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise _fail(name, "must be integers, got dtype %s" % a.dtype)
    return a


def _vector(a: np.ndarray, name: str, n: Optional[int]) -> np.ndarray:
    if a.ndim != 1:
        raise _fail(name, "must be 1-D, got shape %s" % (a.shape,))
    if n is not None and a.shape[0] != n:
        raise _fail(name, "has %d entries, expected %d (one per node)" % (a.shape[0], n))
    return a


def _finite(a: np.ndarray, name: str, offsets: np.ndarray, tree_ids: Optional[np.ndarray], what: str) -> None:
    if _all_finite(a):
        return
    bad = ~np.isfinite(a)
    if bad.any():
        flat = int(np.flatnonzero(bad.reshape(-1))[0])
        row, col = (flat // a.shape[1], flat % a.shape[1]) if a.ndim == 2 else (flat, None)
        field = name if col is None else "%s[%d]" % (name, col)
        raise _fail(field, "must be %s, got %s" % (what, a.reshape(-1)[flat]), offsets, row, tree_ids)


def check_forest(tree_offset: ArrayLike, parent: ArrayLike, reward: ArrayLike, visits: ArrayLike,
                 uncertainty: ArrayLike, terminal: ArrayLike, embedding: ArrayLike,
                 tree_id: Optional[Sequence[str]] = None) -> ForestArrays:
    """Checks dtypes, shapes and finiteness on the Python side (TraceAllocError naming the field,
    and the tree and node for a bad value); the service checks the rest (parents, visit counts)
    with the same kind of message."""
    offsets = _vector(_integers(to_numpy(tree_offset, "tree_offset"), "tree_offset"), "tree_offset", None)
    if offsets.shape[0] < 1 or offsets[0] != 0:
        raise _fail("tree_offset", "must have T+1 entries starting at 0")
    if offsets.shape[0] > 1 and (np.diff(offsets) < 1).any():
        t = int(np.flatnonzero(np.diff(offsets) < 1)[0])
        raise _fail("tree_offset", "tree #%d has no nodes: offsets must increase (every tree needs a root)" % t)
    offsets = offsets.astype(np.int64, copy=False)
    n = int(offsets[-1])
    ids = None
    if tree_id is not None:
        ids = np.asarray([str(x) for x in tree_id]) if not isinstance(tree_id, np.ndarray) else tree_id
        if ids.ndim != 1 or ids.shape[0] != offsets.shape[0] - 1:
            raise _fail("tree_id", "must have one id per tree (%d), got shape %s" % (offsets.shape[0] - 1, ids.shape))
        if ids.dtype.kind not in "US":
            ids = ids.astype(str)
        if ids.shape[0] == 0:
            ids = np.zeros(0, dtype="<U1")
    par = _vector(_integers(to_numpy(parent, "parent"), "parent"), "parent", n)
    if par.dtype != np.int32:
        if par.size and (par.min() < -1 or par.max() > np.iinfo(np.int32).max):
            row = int(np.flatnonzero((par < -1) | (par > np.iinfo(np.int32).max))[0])
            raise _fail("parent", "must be a node index before this node, got %d" % par[row], offsets, row, ids)
        par = par.astype(np.int32)
    cols = {}
    for name, value in (("reward", reward), ("visits", visits), ("uncertainty", uncertainty)):
        a = _vector(to_numpy(value, name), name, n)
        if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
            raise _fail(name, "must be numbers, got dtype %s" % a.dtype)
        a = a.astype(np.float64, copy=False)
        _finite(a, name, offsets, ids, "a finite number")
        cols[name] = a
    term = _vector(to_numpy(terminal, "terminal"), "terminal", n)
    if term.dtype != np.bool_:
        if not np.issubdtype(term.dtype, np.integer):
            raise _fail("terminal", "must be booleans or 0/1 integers, got dtype %s" % term.dtype)
        wrong = (term != 0) & (term != 1)
        if wrong.any():
            row = int(np.flatnonzero(wrong)[0])
            raise _fail("terminal", "must be 0 or 1, got %d" % term[row], offsets, row, ids)
        term = term.astype(np.bool_)
    emb = to_numpy(embedding, "embedding")
    if emb.dtype not in (np.float32, np.float64):
        raise _fail("embedding", "must be float32 or float64, got dtype %s" % emb.dtype)
    if emb.ndim != 2:
        raise _fail("embedding", "must be 2-D (nodes x dim), got shape %s" % (emb.shape,))
    if emb.shape[0] != n:
        raise _fail("embedding", "has %d rows, expected %d (one per node)" % (emb.shape[0], n))
    _finite(emb, "embedding", offsets, ids, "a finite number")
    emb = np.ascontiguousarray(emb)
    return ForestArrays(offsets, np.ascontiguousarray(par), np.ascontiguousarray(cols["reward"]),
                        np.ascontiguousarray(cols["visits"]), np.ascontiguousarray(cols["uncertainty"]),
                        np.ascontiguousarray(term), emb, ids)


@dataclass(frozen=True)
class NodeRows:
    """Checked new nodes for existing trees (`Service.extend`): one row per node, each naming its tree."""
    tree_id: np.ndarray  # unicode, N (the tree each node joins)
    parent: np.ndarray  # int32, N (tree-local index: an existing node, or a new one earlier in this tree's rows)
    reward: np.ndarray  # float64, N
    visits: np.ndarray  # float64, N
    uncertainty: np.ndarray  # float64, N
    terminal: np.ndarray  # bool, N
    embedding: np.ndarray  # float32 or float64, N x D, C-contiguous

    def columns(self) -> "dict[str, np.ndarray]":
        return {"tree_id": self.tree_id, "parent": self.parent, "reward": self.reward, "visits": self.visits,
                "uncertainty": self.uncertainty, "terminal": self.terminal, "embedding": self.embedding}


def check_rows(tree_id: Any, parent: ArrayLike, embedding: ArrayLike, reward: Optional[ArrayLike] = None,
               visits: Optional[ArrayLike] = None, uncertainty: Optional[ArrayLike] = None,
               terminal: Optional[ArrayLike] = None) -> NodeRows:
    """Checks the columns of new nodes (dtypes, shapes, finite values; the row named in errors);
    the service checks parents, visit counts and group sizes against the live trees."""
    ids = tree_id if isinstance(tree_id, np.ndarray) else np.asarray([str(x) for x in tree_id])
    if ids.ndim != 1:
        raise _fail("tree_id", "must be 1-D (one tree id per new node), got shape %s" % (ids.shape,))
    if ids.dtype.kind not in "US":
        ids = ids.astype(str)
    n = int(ids.shape[0])
    if n == 0:
        ids = np.zeros(0, dtype="<U1")
    par = _vector(_integers(to_numpy(parent, "parent"), "parent"), "parent", n)
    if par.size and (par.min() < 0 or par.max() > np.iinfo(np.int32).max):
        row = int(np.flatnonzero((par < 0) | (par > np.iinfo(np.int32).max))[0])
        raise _fail("parent", "row %d: must be a node index of its tree, got %d" % (row, par[row]))
    cols = {}
    for name, value, default in (("reward", reward, 0.0), ("visits", visits, 0.0), ("uncertainty", uncertainty, 0.0)):
        a = np.full(n, default) if value is None else _vector(to_numpy(value, name), name, n)
        if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
            raise _fail(name, "must be numbers, got dtype %s" % a.dtype)
        a = a.astype(np.float64, copy=False)
        _finite_rows(a, name)
        cols[name] = np.ascontiguousarray(a)
    term = np.zeros(n, dtype=np.bool_) if terminal is None else _vector(to_numpy(terminal, "terminal"), "terminal", n)
    if term.dtype != np.bool_:
        if not np.issubdtype(term.dtype, np.integer) or ((term != 0) & (term != 1)).any():
            raise _fail("terminal", "must be booleans or 0/1 integers")
        term = term.astype(np.bool_)
    emb = to_numpy(embedding, "embedding")
    if emb.dtype not in (np.float32, np.float64):
        raise _fail("embedding", "must be float32 or float64, got dtype %s" % emb.dtype)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise _fail("embedding", "must be 2-D with one row per new node (%d), got shape %s" % (n, emb.shape))
    _finite_rows(emb, "embedding")
    return NodeRows(ids, np.ascontiguousarray(par.astype(np.int32, copy=False)), cols["reward"], cols["visits"],
                    cols["uncertainty"], np.ascontiguousarray(term), np.ascontiguousarray(emb))


def _finite_rows(a: np.ndarray, name: str) -> None:
    if not _all_finite(a):
        flat = int(np.flatnonzero(~np.isfinite(a.reshape(-1)))[0])
        row, col = (flat // a.shape[1], flat % a.shape[1]) if a.ndim == 2 else (flat, None)
        raise _fail(name if col is None else "%s[%d]" % (name, col), "row %d: must be a finite number, got %s" % (row, a.reshape(-1)[flat]))


def rows_npz_bytes(rows: NodeRows) -> Any:
    """The new nodes as an uncompressed .npz."""
    buf = io.BytesIO()
    np.savez(buf, **rows.columns())
    return buf.getbuffer()


def rows_arrow_stream(rows: NodeRows) -> Any:
    """The new nodes as an Arrow IPC stream (a pyarrow Buffer); needs pyarrow."""
    import pyarrow as pa  # optional dependency

    n, dim = rows.embedding.shape
    table = pa.table({"tree_id": pa.array(rows.tree_id.tolist(), pa.string()), "parent": pa.array(rows.parent),
                      "reward": pa.array(rows.reward), "visits": pa.array(rows.visits),
                      "uncertainty": pa.array(rows.uncertainty), "terminal": pa.array(rows.terminal),
                      "embedding": pa.FixedSizeListArray.from_arrays(pa.array(rows.embedding.reshape(-1)), dim)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _all_finite(a: np.ndarray) -> bool:
    """Whether every value is finite, without a boolean temporary the size of the array: a NaN or
    an infinity makes the float64 sum non-finite (float32 values cannot overflow it), and only a
    sum that overflows from finite float64 values needs the exact, allocating check."""
    if a.size == 0:
        return True
    if np.isfinite(a.sum(dtype=np.float64)):
        return True
    return bool(np.isfinite(a).all())


def npz_bytes(forest: ForestArrays) -> Any:
    """The forest as an uncompressed .npz (what numpy.savez writes)."""
    buf = io.BytesIO()
    np.savez(buf, **forest.columns())
    return buf.getbuffer()  # a view: getvalue() would copy the whole archive once more


def arrow_table(forest: ForestArrays) -> Any:
    """The forest as a pyarrow Table (the arrays are not copied); needs pyarrow."""
    import pyarrow as pa  # optional dependency

    n, dim = forest.embedding.shape
    values = pa.array(forest.embedding.reshape(-1))
    tree = np.repeat(np.arange(forest.trees, dtype=np.int32), np.diff(forest.tree_offset))
    columns = {"tree": pa.array(tree), "parent": pa.array(forest.parent), "reward": pa.array(forest.reward),
               "visits": pa.array(forest.visits), "uncertainty": pa.array(forest.uncertainty),
               "terminal": pa.array(forest.terminal),
               "embedding": pa.FixedSizeListArray.from_arrays(values, dim)}
    if forest.tree_id is not None:
        columns["tree_id"] = pa.DictionaryArray.from_arrays(pa.array(tree), pa.array(forest.tree_id.tolist(), pa.string()))
    return pa.table(columns)


def arrow_stream(forest: ForestArrays) -> Any:
    """The forest as an Arrow IPC stream (a pyarrow Buffer); needs pyarrow."""
    import pyarrow as pa  # optional dependency

    table = arrow_table(forest)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


class StreamedPayload:
    """A binary payload written straight from the arrays into the service's input: its length is
    known first (`nbytes`), and no copy of the whole payload is ever held in memory — for W1
    that is 188 MB a step that would be written, and on a fresh page touched, for nothing."""

    def __init__(self, table: Any) -> None:
        import pyarrow as pa  # optional dependency

        self._table = table
        counter = pa.MockOutputStream()
        with pa.ipc.new_stream(counter, table.schema) as writer:
            writer.write_table(table)
        self.nbytes = int(counter.size())

    def write_into(self, write: Any) -> None:
        """Writes the payload through `write` (a function taking bytes-like objects)."""
        import pyarrow as pa  # optional dependency

        with pa.ipc.new_stream(pa.PythonFile(_Sink(write), mode="w"), self._table.schema) as writer:
            writer.write_table(self._table)


class NpzPayload:
    """An uncompressed .npz (what `numpy.savez` writes, read by `numpy.load`) written straight
    from the arrays into the service's input, like `StreamedPayload`: the zip headers are built
    first (CRC-32 of each array computed over its memory), then headers and array memory go out
    without being copied into one archive. `numpy.savez` into a BytesIO would build 188 MB for
    W1 and copy it again, every step. Entries and offsets past 4 GiB get zip64 records."""

    #: Sizes and offsets from which zip64 records are written (lower only to test them).
    zip64_from = 0xFFFFFFFF

    def __init__(self, columns: "dict[str, np.ndarray]") -> None:
        import zlib
        from numpy.lib import format as npy_format

        self._parts: List[Any] = []
        central: List[bytes] = []
        offset = 0
        for name, array in columns.items():
            array = np.ascontiguousarray(array)
            head = io.BytesIO()
            npy_format.write_array_header_1_0(head, npy_format.header_data_from_array_1_0(array))
            header = head.getvalue()
            data = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
            size = len(header) + data.nbytes
            crc = zlib.crc32(data, zlib.crc32(header)) & 0xFFFFFFFF
            fname = (name + ".npy").encode()
            wide = size >= self.zip64_from or offset >= self.zip64_from
            local_extra = struct.pack("<HHQQ", 1, 16, size, size) if wide else b""
            small = 0xFFFFFFFF if wide else size
            local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if wide else 20, 0, 0, 0, 0x21, crc, small, small, len(fname), len(local_extra))
            self._parts += [local + fname + local_extra + header, data]
            central_extra = struct.pack("<HHQQQ", 1, 24, size, size, offset) if wide else b""
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45 if wide else 20, 45 if wide else 20, 0, 0, 0, 0x21, crc,
                                       small, small, len(fname), len(central_extra), 0, 0, 0, 0, 0xFFFFFFFF if wide else offset)
                           + fname + central_extra)
            offset += len(local) + len(fname) + len(local_extra) + size
        directory = b"".join(central)
        count = len(central)
        tail = b""
        if offset >= self.zip64_from or len(directory) >= self.zip64_from or count >= 0xFFFF:
            end64 = offset + len(directory)
            tail = (struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(directory), offset)
                    + struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
            tail += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
        else:
            tail = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(directory), offset, 0)
        self._parts += [directory + tail]
        self.nbytes = sum(memoryview(p).nbytes for p in self._parts)

    def write_into(self, write: Any) -> None:
        """Writes the archive through `write` (a function taking bytes-like objects)."""
        for part in self._parts:
            write(part)


class _Sink:
    """The file object pyarrow writes to: every write goes to `write`; closing it closes nothing."""

    closed = False

    def __init__(self, write: Any) -> None:
        self._write = write

    def write(self, data: Any) -> int:
        self._write(data)
        return memoryview(data).nbytes

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def save_npz(path: Union[str, "os.PathLike[str]"], tree_offset: ArrayLike, parent: ArrayLike, reward: ArrayLike,
             visits: ArrayLike, uncertainty: ArrayLike, terminal: ArrayLike, embedding: ArrayLike,
             tree_id: Optional[Sequence[str]] = None, compressed: bool = False) -> ForestArrays:
    """Checks the arrays and writes them as an .npz that `trace-alloc score FILE.npz` reads."""
    forest = check_forest(tree_offset, parent, reward, visits, uncertainty, terminal, embedding, tree_id)
    (np.savez_compressed if compressed else np.savez)(path, **forest.columns())
    return forest
