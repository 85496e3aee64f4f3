"""Seccomp filters: system calls a sandbox process may not make, refused by the kernel.

A filter is classic BPF over struct seccomp_data, installed for good (no_new_privs first) and
inherited by every process forked after; one a process installs stacks on those before. Used by
the keeper (`refuse_calls`: what would carry state past a question's process, such as kernel keys
and extended attributes) and by a capped question (stack_cap.py).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # the architectures the filters know

# classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]} (little-endian)
LOAD, JEQ, AND, RETURN = 0x20, 0x15, 0x54, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_ALU|AND|K, BPF_RET|K
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
NR, ARCH = 0, 4  # where seccomp_data keeps the call's number and architecture; args[i] at 16 + 8 * i

# System calls by name, per architecture (arch/x86/entry/syscalls/syscall_64.tbl; aarch64 uses
# the generic table, include/uapi/asm-generic/unistd.h); those added since 5.1 have one number on
# every architecture: io_uring's, and 6.13's and 6.17's *xattrat and file_setattr
_SINCE_5_1 = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
              "setxattrat": 463, "removexattrat": 466, "file_setattr": 469}
SYSCALLS = {
    "x86_64": {"ioctl": 16, "add_key": 248, "request_key": 249, "keyctl": 250, "setxattr": 188, "lsetxattr": 189,
               "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, **_SINCE_5_1},
    "aarch64": {"ioctl": 29, "add_key": 217, "request_key": 218, "keyctl": 219, "setxattr": 5, "lsetxattr": 6,
                "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, **_SINCE_5_1},
}
ARG1_LOW = 24  # the low word of args[1]: an ioctl's request, which the kernel reads as 32 bits


def op(code: int, value: int, true: int = 0, false: int = 0) -> bytes:
    """One BPF instruction; `true` and `false` count the instructions a jump skips."""
    return struct.pack("HBBI", code, true, false, value)


def install(program: bytes) -> str | None:
    """Install `program` on this process for good; None once done, else why it cannot be."""
    buffer = ctypes.create_string_buffer(program)
    fprog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buffer))  # struct sock_fprog
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0) != 0:
            return f"seccomp refused ({errno.errorcode.get(ctypes.get_errno(), '?')})"
    except (OSError, AttributeError) as error:
        return str(error)
    return None


def refuse_calls(names: tuple[str, ...], ioctls: tuple[int, ...] = (), error: int = errno.EPERM) -> str | None:
    """Make each of these system calls, and `ioctl` with each of these requests, fail with
    `error`, in this process and every one it forks; None once done, else why not (another
    architecture, no seccomp)."""
    machine = platform.machine()
    if machine not in SYSCALLS:
        return f"no seccomp filter for {machine or 'this machine'}"
    numbers = [SYSCALLS[machine][name] for name in names]
    # each test jumps to the last instruction (refuse) when it holds; the one before it allows
    calls = [op(JEQ, number, len(numbers) - index + 2 + len(ioctls), 0) for index, number in enumerate(numbers)]
    requests = [op(JEQ, request, len(ioctls) - index, 0) for index, request in enumerate(ioctls)]
    return install(b"".join([op(LOAD, ARCH), op(JEQ, AUDIT_ARCH[machine], 1, 0), op(RETURN, ALLOW),
                             op(LOAD, NR), *calls,
                             op(JEQ, SYSCALLS[machine]["ioctl"], 0, len(ioctls) + 1), op(LOAD, ARG1_LOW), *requests,
                             op(RETURN, ALLOW), op(RETURN, ERRNO | error)]))
