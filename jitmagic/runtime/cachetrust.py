"""Who could have written what the disk cache would load, and the shared cache's signatures.

Loading a cache entry runs its machine code in the user's process, and an entry's SHA-256 only
shows that the file is whole: anyone who can write the cache directory can compute an entry's
key (from the IR, the versions and the CPU, all public) and plant code with a matching checksum.
So, as OpenSSH does with ~/.ssh (StrictModes), an entry is trusted only when nobody but the user
(and root) could have put it there:

- private cache (the default): the cache directory belongs to the user and is writable by
  nobody else; every directory above it, up to /, belongs to the user or root and is writable
  by nobody else unless sticky (/tmp: others may add names there, not rename or remove ours);
  each entry, checked on the open descriptor (O_NOFOLLOW: a symbolic link is refused), is a
  regular file that belongs to the user and is writable by nobody else.
- shared cache (`disk_cache_shared_key`): the file system no longer vouches for anything; every
  entry must carry an HMAC-SHA256, over all its bytes, made with the key in the user's key file
  (which is checked like an ssh private key). The directory and its parents may belong to
  teammates and be group-writable, but not writable by everyone (non-sticky), where anyone could
  replace the team's entries.

"Writable by nobody else" counts group write permission as harmless when the group's only
member is the file's owner (a user private group, as Debian's OpenSSH does): with umask 002,
the default for users on Debian and Ubuntu, ~/.cache is group-writable by such a group.
"""

from __future__ import annotations

import errno
import functools
import grp
import hashlib
import hmac
import os
import pwd
import stat

from jitmagic.core import forksafe

_NOFOLLOW_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not hang
SIGNATURE = b"jitmagic-hmac-sha256 "  # first line of a signed entry: this, key id, digest
_MIN_KEY_BYTES = 16


class Untrusted(Exception):
    """`what` may not be trusted; `fix` tells the user what to do about it."""

    def __init__(self, what: str, fix: str):
        super().__init__(what)
        self.what, self.fix = what, fix


# ---------------------------------------------------------------- modes and owners


@functools.cache
def _private_group(gid: int, uid: int) -> bool:
    """Group gid's only member (by primary group or listed) is user uid."""
    try:
        gr, me = grp.getgrgid(gid), pwd.getpwuid(uid).pw_name
    except KeyError:
        return False
    members = set(gr.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == gid}
    return members == {me}


def _writers(st, *, group_ok=False) -> str:
    """Who besides the owner may write: '' (nobody), 'its group', 'others' or both."""
    who = []
    if st.st_mode & stat.S_IWGRP and not group_ok and not _private_group(st.st_gid, st.st_uid):
        who.append("its group")
    if st.st_mode & stat.S_IWOTH:
        who.append("others")
    return " and ".join(who)


def _mode(st) -> str:
    return f"mode {stat.S_IMODE(st.st_mode):04o}"


def _owner(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def check_parents(path: str, *, shared=False):
    """Every directory above `path`, a resolved path, up to /: it belongs to the user or root
    and nobody else may write it, unless it is sticky. (Shared: any owner, group-writable
    allowed.) Whoever may rename a parent may put another tree in the cache's place."""
    euid = os.geteuid()
    p = path
    while True:
        parent = os.path.dirname(p)
        if parent == p:
            return
        p = parent
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode):  # a link put in since the path was resolved
            raise Untrusted(f"{p} is no longer a directory", f"Fix: check what replaced {p}.")
        if not shared and st.st_uid not in (euid, 0):
            raise Untrusted(
                f"parent directory {p} belongs to {_owner(st.st_uid)}, who could "
                f"replace what is below it",
                "Fix: set disk_cache_dir to a directory under your home.",
            )
        who = "" if st.st_mode & stat.S_ISVTX else _writers(st, group_ok=shared)
        if who:
            raise Untrusted(
                f"parent directory {p} is writable by {who} ({_mode(st)}), who "
                f"could replace what is below it",
                f"Fix: chmod {'o' if shared else 'go'}-w {p} (or +t), or set "
                f"disk_cache_dir to a directory under your home.",
            )


def check_directory(path: str, *, shared=False):
    """The cache directory (resolved) and its parents; returns its lstat."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise Untrusted(
            f"cache directory {path} is not a directory", "Fix: set disk_cache_dir to a directory."
        )
    if not shared and st.st_uid != os.geteuid():
        raise Untrusted(
            f"cache directory {path} belongs to {_owner(st.st_uid)}, not to you "
            f"({_owner(os.geteuid())})",
            "Fix: set disk_cache_dir to a directory of your own (a team's "
            "directory needs disk_cache_shared_key).",
        )
    who = _writers(st, group_ok=shared)
    if who:
        fix = (
            f"Fix: chmod o-w {path}."
            if shared
            else f"Fix: chmod 700 {path}, or set disk_cache_dir to a private directory (a "
            f"team's directory needs disk_cache_shared_key)."
        )
        raise Untrusted(f"cache directory {path} is writable by {who} ({_mode(st)})", fix)
    check_parents(path, shared=shared)
    return st


def open_entry(name: str, dir_fd: int, path: str):
    """A descriptor of entry `name` in the directory open as dir_fd, without following a
    symbolic link, and its fstat (the file that will be read, not the path)."""
    try:
        fd = os.open(name, _NOFOLLOW_READ, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: the BSDs' O_NOFOLLOW error
            raise Untrusted(
                f"cache entry {path} is a symbolic link",
                "It is replaced by this process's own entry; if one comes back, "
                "find out what puts it there.",
            ) from None
        raise
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


def check_entry(st, path: str, *, shared=False):
    if not stat.S_ISREG(st.st_mode):
        raise Untrusted(f"cache entry {path} is not a regular file", f"Fix: rm {path}.")
    if shared:
        return  # its signature decides
    if st.st_uid != os.geteuid():
        raise Untrusted(
            f"cache entry {path} belongs to {_owner(st.st_uid)}, not to you",
            f"It is replaced by this process's own entry; if one comes back, "
            f"find out what else writes into {os.path.dirname(path)}.",
        )
    who = _writers(st)
    if who:
        raise Untrusted(
            f"cache entry {path} is writable by {who} ({_mode(st)})",
            "It is replaced by this process's own entry (mode 0600).",
        )


def read_all(fd: int, size: int) -> bytes:
    chunks, n = [], 0
    while True:
        b = os.read(fd, max(size - n, 0) + 65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        n += len(b)


# ---------------------------------------------------------------- the shared cache's key


def read_key(path: str) -> bytes:
    """The HMAC key in `path`, which must be as private as an ssh private key: a regular file
    of the user's, readable and writable by nobody else, in directories nobody else may
    rename (whoever can replace the key file can sign code)."""
    real = os.path.realpath(os.path.expanduser(path))
    new_key = (
        f"Fix: python -c 'import secrets; print(secrets.token_hex(32))' > {path}; "
        f"chmod 600 {path} (each teammate keeps a copy of the team's key)."
    )
    try:
        check_parents(real)
        fd = os.open(real, _NOFOLLOW_READ)
    except FileNotFoundError:
        raise Untrusted(f"disk_cache_shared_key {path} does not exist", new_key) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"disk_cache_shared_key {path} is not a regular file", new_key)
        if st.st_uid != os.geteuid():
            raise Untrusted(
                f"disk_cache_shared_key {path} belongs to {_owner(st.st_uid)}, not to you",
                "Fix: keep your own copy of the key (chmod 600).",
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise Untrusted(
                f"disk_cache_shared_key {path} is accessible by others "
                f"({_mode(st)}): the key must be secret",
                f"Fix: chmod 600 {path}.",
            )
        key = read_all(fd, st.st_size).strip()
    finally:
        os.close(fd)
    if len(key) < _MIN_KEY_BYTES:
        raise Untrusted(
            f"disk_cache_shared_key {path} holds {len(key)} bytes, too few for "
            f"a secret (at least {_MIN_KEY_BYTES})",
            new_key,
        )
    return key


def key_id(key: bytes) -> str:
    """Names a key in a signature line without revealing it: tells 'signed with another
    key' from 'altered after signing'."""
    return hmac.new(key, b"jitmagic disk cache key id", hashlib.sha256).hexdigest()[:16]


def _digest(key: bytes, body: bytes) -> str:
    return hmac.new(key, b"jitmagic disk cache entry\0" + body, hashlib.sha256).hexdigest()


def sign(key: bytes, body: bytes) -> bytes:
    """The signed entry: a signature line over all of body, which is the metadata line (which
    names the entry's key, so a signed entry renamed into another key's place is refused)
    followed by the object code."""
    return SIGNATURE + f"{key_id(key)} {_digest(key, body)}\n".encode() + body


def unsigned_body(data: bytes) -> bytes:
    """The entry without its signature line, when it has one (a private cache does not check
    signatures: the file's owner and modes vouch for it)."""
    return data.partition(b"\n")[2] if data.startswith(SIGNATURE) else data


def verify(key: bytes, data: bytes, path: str) -> bytes:
    """The body of a correctly signed entry; Untrusted otherwise."""
    fix = "It is replaced by this process's own signed entry."
    if not data.startswith(SIGNATURE):
        raise Untrusted(f"cache entry {path} is not signed (disk_cache_shared_key is set)", fix)
    line, _, body = data.partition(b"\n")
    fields = line[len(SIGNATURE) :].split(b" ")
    if len(fields) != 2:
        raise Untrusted(f"cache entry {path} has a malformed signature line", fix)
    kid, digest = (f.decode("ascii", "replace") for f in fields)
    if not hmac.compare_digest(digest.encode(), _digest(key, body).encode()):
        if kid != key_id(key):
            raise Untrusted(
                f"cache entry {path} is signed with another key (id {kid}; yours is {key_id(key)})",
                f"{fix} Check that the team uses one disk_cache_shared_key.",
            )
        raise Untrusted(f"cache entry {path} has a bad signature: altered after signing", fix)
    return body


# ---------------------------------------------------------------- one warning per directory

_warned: set = set()
_warned_lock = forksafe.lock()


def first_warning(directory: str) -> bool:
    """True the first time in this process that something in `directory` is refused."""
    with _warned_lock:
        if directory in _warned:
            return False
        _warned.add(directory)
        return True
