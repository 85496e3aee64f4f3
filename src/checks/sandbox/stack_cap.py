"""Hold how deep a question's code may call with the kernel, not with the interpreter's own count.

A backward that recurses once per node gets through a 1,500-op chain at any recursion limit it
raises itself, by some route no guard in its own process can hold (a reference kept at import,
ctypes): the limit and the frames both live there. What lives outside is memory. CPython keeps
Python frames on a "data stack" of chunks it maps as it needs them (16 KiB, or a power-of-two
multiple for a larger frame), and a generator resumed inside another grows the C stack. So a
capped question process runs its requests in a frame at the start of a chunk of its own, with
HEADROOM bytes free after it (in_own_chunk), and once capped (`cap`) it may map no new chunk
(a seccomp filter answers any such mmap with ENOMEM), start no thread (whose frames would need
one), nor reach more than C_HEADROOM below where its C stack stands (RLIMIT_STACK, lowered for
good). Code that loops stays far inside both; recursion in Python a few hundred calls deep fails,
whatever the recursion limit says, and so does recursion in C code alone some 1,300 levels deep
(iterators nested once per item, 32 bytes a level: C_HEADROOM is what native libraries need, and
no more). Not held: native code, which can rewrite anything in its own process (ctypes swapping
the interpreter's allocator, or its stack's bounds).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import resource
import struct
from typing import Any, Callable

from checks.sandbox import seccomp
from checks.sandbox.seccomp import ALLOW, AND, ERRNO, JEQ, LOAD, RETURN, op

CHUNK = 256 << 10  # the data-stack chunk in_own_chunk's frame takes
HEADROOM = 64 << 10  # what that chunk keeps free for the frames called from it
# How far below its pointer at the cap the C stack may reach. Measured under the cap on CPython
# 3.11 (02's deep chain, an engine calling each library in backward): NumPy's BLAS (a 800 x 900
# by 900 x 700 product) needs under 24 KiB, LAPACK (solve, SVD, eigh) under 32, einsum, sort,
# FFT and norm under 28; a depth-first sort of the 1,500-op chain in iterators nested once per
# node (one itertools.chain a level, some 32 bytes, the fewest any C iterator takes) over 44.
C_HEADROOM = 40 << 10
PAGE = resource.getpagesize()
# the sizes of the chunks CPython maps for its data stack: DATA_STACK_CHUNK_SIZE, doubled until a
# frame fits (a function with 66,000 locals gets a chunk of 1 MiB, with room for 1,500 small frames
# after its own). Anonymous mmaps of exactly these sizes are refused once capped; what else makes
# them: pymalloc's 1 MiB arenas (_keep_room_for_small_objects), and malloc's large blocks, a page
# above the request, which fall back on the heap where one fails.
CHUNK_SIZES = tuple(16 << 10 << shift for shift in range(18))  # 16 KiB to 2 GiB

_SLOTS = (CHUNK - HEADROOM) // 8  # the frame's size, in pointers: more than half the chunk, so it takes one alone


def in_own_chunk(function: Callable[..., Any], *args: Any) -> Any:
    """function(*args), called from a frame so large that it starts a data-stack chunk of CHUNK
    bytes, HEADROOM of them free for what runs inside."""
    return function(*args)


in_own_chunk.__code__ = in_own_chunk.__code__.replace(co_stacksize=_SLOTS)  # the frame's size, never used


# ---------------------------------------------------------------- the cap

MAP_ANONYMOUS, CLONE_THREAD = 0x20, 0x10000
# the architectures the filter knows: their audit id and the numbers of mmap, clone and clone3
_ARCHITECTURES = {machine: (seccomp.AUDIT_ARCH[machine], *numbers)
                  for machine, numbers in {"x86_64": (9, 56, 435), "aarch64": (222, 220, 435)}.items()}
# the words of seccomp_data's arguments that matter: clone's flags (args[0]), mmap's length
# (args[1], both halves) and flags (args[3])
_CLONE_FLAGS, _LENGTH_LOW, _LENGTH_HIGH, _MMAP_FLAGS = 16, 24, 28, 40


def cap() -> str | None:
    """Cap this process's stack for good (see the module's docstring); None once done, else why
    it cannot be (another architecture, no seccomp), the stack then left as it was."""
    machine = platform.machine()
    if machine not in _ARCHITECTURES:
        return f"no stack cap on {machine or 'this machine'}"
    _keep_room_for_small_objects()
    refused = seccomp.install(_filter(*_ARCHITECTURES[machine]))
    if refused is not None:
        return f"no stack cap: {refused}"
    _cap_c_stack(ctypes.CDLL(None, use_errno=True))
    return None


def _keep_room_for_small_objects() -> None:
    """Leave SMALL_OBJECT_ROOM of pymalloc's pools free for the capped code. Its arenas are 1 MiB,
    a size the filter refuses (a data-stack chunk may have it): without them every allocation that
    needs a new pool would first try, and fail, to map one (a system call each: a deep chain took a
    third longer). So fill that many arenas now and free all but a few blocks in each: an arena
    with a block in use is kept, its other pools free for any size of object."""
    filler = [bytes(_BYTES) for _ in range(SMALL_OBJECT_ROOM // _BLOCK)]
    _KEPT.extend(filler[::_KEEP_EVERY])


SMALL_OBJECT_ROOM = 2 << 20  # a deep chain of 1,500 ops needs about one arena more
_BLOCK, _BYTES = 512, 463  # pymalloc's largest block, and a bytes object that takes one (496 bytes)
_KEEP_EVERY = 512  # blocks: one kept in every 256 KiB
_KEPT: list[bytes] = []


def _cap_c_stack(libc: ctypes.CDLL) -> None:
    """Leave the C stack C_HEADROOM below where it is now, for good: the part of its mapping below
    that (grown by earlier, deeper calls: a worker's imports) is unmapped, and RLIMIT_STACK lets
    it grow no further. Where its pointer cannot be found, it may grow C_HEADROOM past its mapping."""
    found = _c_stack(libc)
    if found is None:
        return
    (start, end), pointer = found
    keep_from = start if pointer is None else max(start, (pointer - C_HEADROOM) & ~(PAGE - 1))
    if keep_from > start:
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        if libc.munmap(start, keep_from - start) != 0:
            keep_from = start
    limit = end - keep_from + (C_HEADROOM if pointer is None else 0)
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_STACK, (limit, limit))


def _filter(arch: int, mmap: int, clone: int, clone3: int) -> bytes:
    """Refuse an anonymous mmap of any of CHUNK_SIZES (ENOMEM) and a new thread (clone3: ENOSYS,
    which sends glibc back to clone; clone with CLONE_THREAD: EAGAIN, "can't start new thread"):
    a thread's Python frames would need a chunk of their own, and its start waits for them
    forever. Allow everything else."""
    sizes = [op(JEQ, size, len(CHUNK_SIZES) - index, 0) for index, size in enumerate(CHUNK_SIZES)]
    return b"".join([
        op(LOAD, seccomp.ARCH), op(JEQ, arch, 1, 0), op(RETURN, ALLOW),
        op(LOAD, seccomp.NR), op(JEQ, clone3, 0, 1), op(RETURN, ERRNO | errno.ENOSYS),
        op(JEQ, clone, 0, 5),
        op(LOAD, _CLONE_FLAGS), op(AND, CLONE_THREAD), op(JEQ, CLONE_THREAD, 0, 1),
        op(RETURN, ERRNO | errno.EAGAIN), op(RETURN, ALLOW),
        op(JEQ, mmap, 1, 0), op(RETURN, ALLOW),
        op(LOAD, _LENGTH_HIGH), op(JEQ, 0, 1, 0), op(RETURN, ALLOW),
        op(LOAD, _MMAP_FLAGS), op(AND, MAP_ANONYMOUS), op(JEQ, MAP_ANONYMOUS, 1, 0), op(RETURN, ALLOW),
        op(LOAD, _LENGTH_LOW), *sizes, op(RETURN, ALLOW), op(RETURN, ERRNO | errno.ENOMEM)])


def _c_stack(libc: ctypes.CDLL) -> tuple[tuple[int, int], int | None] | None:
    """The main thread's stack mapping (/proc/self/maps), and about where its pointer is now: the
    lowest address inside it among the registers getcontext saves (the stack pointer's, unless
    some register still holds one below it, which only leaves more room). None where unreadable."""
    try:
        with open("/proc/self/maps") as maps:
            bounds = next((line.split()[0] for line in maps if line.rstrip().endswith("[stack]")), None)
    except OSError:
        return None
    if bounds is None:
        return None
    start, end = (int(bound, 16) for bound in bounds.split("-"))
    context = ctypes.create_string_buffer(_CONTEXT_BYTES)  # a ucontext_t, with room to spare
    try:
        saved = libc.getcontext(context) == 0
    except AttributeError:
        saved = False
    words = struct.unpack(f"{_CONTEXT_BYTES // 8}Q", context.raw) if saved else ()
    inside = [word for word in words if start <= word < end]
    return (start, end), (min(inside) if inside else None)


_CONTEXT_BYTES = 8192
