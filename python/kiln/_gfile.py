"""tf.io.gfile: TensorFlow's file API for local paths, in pure Python.

Paths are str, bytes or os.PathLike; "file://host/path" names the local "/path".
Errors are kiln.errors classes with TensorFlow's texts ("<path>; <strerror>", the
class chosen from errno as TensorFlow does). Kept from TensorFlow 2.21 on purpose:
names are cleaned before use ("d/x/../f/" is "d/f", even when d/x is missing; errors
show the name as given); GFile opens lazily (GFile(p, "w").close() without a write
creates nothing; reading after close() starts again at 0); "w", "w+" and "r+"
truncate the file at the first write; readline() and iteration drop every "\\r";
text read(n) reads n bytes and decodes them (UnicodeDecodeError on a split
character); seek past the end is OutOfRangeError and leaves the position at the end;
mkdir of an existing path is a no-op; stat's mtime_nsec counts whole seconds;
listdir, glob and walk give the directory's own order (unsorted).

Deliberate differences from TensorFlow 2.21:
- Only local paths: get_registered_schemes() is ["file", ""]. Other schemes ("gs://",
  "s3://", "ram://") raise UnimplementedError naming the scheme, also from listdir
  (TF: NotFoundError) and walk (TF: yields nothing); isdir returns False, as TF.
- walk(top, onerror=f) on a missing top calls f and stops (TF 2.21 then raises
  UnboundLocalError); walk of a non-path raises TypeError (TF walks str(top)).
- glob takes a bytes or os.PathLike pattern too (TF: TypeError). TF lists directories
  in parallel; kiln's order is TF's sequential one.
- copy(p, p, overwrite=True) leaves p as it is (TF 2.21 empties the file); copy of a
  directory raises TF's InvalidArgumentError without creating or emptying dst.
- rmtree never follows symbolic links inside the tree, it removes them (TF follows a
  linked directory, deletes its target's files, then fails); a top that is a link to
  a directory is FailedPreconditionError, as TF, with nothing deleted.
- GFile checks the type of its name when made (TF: at the first read or write);
  read() reads to the end of the file (TF reads stat's size: a /proc file reads "").
- Messages show a bytes path decoded; seek(position=) logs no deprecation.
"""
import errno
import operator
import os
import posixpath
import re
import shutil
import stat as _stat
import string

from kiln import errors

__all__ = ["GFile", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
           "rename", "rmtree", "stat", "walk", "copy", "join", "get_registered_schemes"]

_MODE_ERROR = "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"
_READ_MODES = ("r", "r+", "w+", "a+")
_ALL_MODES = ("r", "w", "a", "r+", "w+", "a+")
_URI = re.compile(r"([A-Za-z][A-Za-z0-9.]*)://(.+)", re.S)


def _errno_table():
    """{errno: kiln error class}: TensorFlow's mapping of errno to status codes."""
    groups = {
        errors.InvalidArgumentError: "EINVAL ENAMETOOLONG E2BIG EDESTADDRREQ EDOM EFAULT "
                                     "EILSEQ ENOPROTOOPT ENOSTR ENOTSOCK ENOTTY EPROTOTYPE "
                                     "ESPIPE",
        errors.DeadlineExceededError: "ETIMEDOUT ETIME",
        errors.NotFoundError: "ENODEV ENOENT ENXIO ESRCH",
        errors.AlreadyExistsError: "EEXIST EADDRNOTAVAIL EALREADY",
        errors.PermissionDeniedError: "EPERM EACCES EROFS",
        errors.FailedPreconditionError: "ENOTEMPTY EISDIR ENOTDIR EADDRINUSE EBADF EBUSY "
                                        "ECHILD EISCONN ENOTBLK ENOTCONN EPIPE ESHUTDOWN "
                                        "ETXTBSY",
        errors.ResourceExhaustedError: "ENOSPC EDQUOT EMFILE EMLINK ENFILE ENOBUFS ENODATA "
                                       "ENOMEM ENOSR EUSERS",
        errors.OutOfRangeError: "EFBIG EOVERFLOW ERANGE",
        errors.UnimplementedError: "ENOSYS ENOTSUP EAFNOSUPPORT EPFNOSUPPORT "
                                   "EPROTONOSUPPORT ESOCKTNOSUPPORT EXDEV",
        errors.UnavailableError: "EAGAIN ECONNREFUSED ECONNABORTED ECONNRESET EINTR "
                                 "EHOSTDOWN EHOSTUNREACH ENETDOWN ENETRESET ENETUNREACH "
                                 "ENOLCK ENOLINK ENONET",
        errors.AbortedError: "EDEADLK ESTALE",
        errors.CancelledError: "ECANCELED",
    }
    return {getattr(errno, name): cls for cls, names in groups.items()
            for name in names.split() if hasattr(errno, name)}


_ERRNO_CLASS = _errno_table()


def _os_error(err, shown):
    """The kiln error for OSError `err` on the path shown as `shown`."""
    cls = _ERRNO_CLASS.get(err.errno, errors.UnknownError)
    reason = err.strerror or (os.strerror(err.errno) if err.errno else str(err))
    return cls(f"{shown}; {reason}")


def _call(fn, local, shown, *args):
    """fn(local, *args), an OSError raised as its kiln error naming `shown`."""
    try:
        return fn(local, *args)
    except OSError as e:
        raise _os_error(e, shown) from e


def _path_str(path):
    """`path` (str, bytes, os.PathLike) as str; TypeError for anything else."""
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"Expected binary or unicode string, got {path!r}") from None
    return os.fsdecode(p) if isinstance(p, bytes) else p


def _split(path):
    """("file://host" or "", local path) of the str `path`; UnimplementedError for
    any scheme but file."""
    m = _URI.match(path)
    if not m:
        return "", path
    scheme, rest = m.groups()
    if scheme != "file":
        raise errors.UnimplementedError(
            f"File system scheme '{scheme}' not implemented (file: '{path}'); kiln's "
            f"gfile reads local paths and file:// only")
    cut = rest.find("/")
    cut = len(rest) if cut < 0 else cut
    return path[:len(path) - len(rest) + cut], rest[cut:]


def _clean(path):
    """`path` cleaned as TF cleans local names: no ".", "..", "//" or trailing "/"
    ("" stays "")."""
    if not path:
        return path
    cleaned = os.path.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _local(path):
    """(path as str, the local file name it cleans to)."""
    shown = _path_str(path)
    return shown, _clean(_split(shown)[1])


class FileStatistics:
    """What stat returns: length (bytes), mtime_nsec (whole seconds, in ns),
    is_directory. Read-only."""
    __slots__ = ("_length", "_mtime_nsec", "_is_directory")

    def __init__(self, length, mtime_nsec, is_directory):
        self._length, self._mtime_nsec = length, mtime_nsec
        self._is_directory = is_directory

    length = property(lambda self: self._length)
    mtime_nsec = property(lambda self: self._mtime_nsec)
    is_directory = property(lambda self: self._is_directory)

    def __repr__(self):
        return (f"FileStatistics(length={self._length}, mtime_nsec={self._mtime_nsec}, "
                f"is_directory={self._is_directory})")


def _to_bytes(value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"Expected binary or unicode string, got {value!r}")


class GFile:
    """A file (tf.io.gfile.GFile): mode r, w, a, r+, w+ or a+, with "b" for bytes
    (text modes read str, UTF-8). Reading and writing keep separate positions; each
    side opens at its first use. Iterating gives lines."""

    def __init__(self, name, mode="r"):
        if not isinstance(mode, str):
            raise TypeError(f"GFile mode must be a str, not {type(mode).__name__}")
        base = mode.replace("b", "")
        if base not in _ALL_MODES:
            raise errors.InvalidArgumentError(_MODE_ERROR)
        self._shown = _path_str(name)
        self._name, self._mode = name, mode
        self._binary = "b" in mode
        self._readable = base in _READ_MODES
        self._writable = base != "r"
        self._append = base.startswith("a")
        self._reader = self._writer = None

    @property
    def name(self):
        """The name given (str, bytes or os.PathLike)."""
        return self._name

    @property
    def mode(self):
        """The mode given."""
        return self._mode

    def _open(self, mode):
        return _call(open, _clean(_split(self._shown)[1]), self._shown, mode)

    def _read_side(self):
        if self._reader is None:
            if not self._readable:
                raise errors.PermissionDeniedError("File isn't open for reading")
            self._reader = self._open("rb")
        return self._reader

    def _write_side(self):
        if self._writer is None:
            if not self._writable:
                raise errors.PermissionDeniedError("File isn't open for writing")
            self._writer = self._open("ab" if self._append else "wb")
        return self._writer

    def _value(self, data):
        return data if self._binary else data.decode("utf-8")

    def _io(self, fn, *args):
        try:
            return fn(*args)
        except OSError as e:
            raise _os_error(e, self._shown) from e

    def size(self):
        """The file's size in bytes (stat's length)."""
        return stat(self._name).length

    def write(self, file_content):
        """Appends str (UTF-8) or bytes at the writing position."""
        f = self._write_side()
        self._io(f.write, _to_bytes(file_content))

    def read(self, n=-1):
        """n bytes from the reading position (-1: to the end), as str in text modes."""
        f = self._read_side()
        n = operator.index(n)
        if n < -1:
            raise errors.InvalidArgumentError(f"Can't read a negative number of bytes: {n}")
        return self._value(self._io(f.read) if n == -1 else self._io(f.read, n))

    def readline(self):
        """The next line with its "\\n" and without any "\\r"; "" at the end."""
        line = self._io(self._read_side().readline)
        return self._value(line.replace(b"\r", b""))

    def readlines(self):
        """The remaining lines, as readline gives them."""
        lines = []
        line = self.readline()
        while line:
            lines.append(line)
            line = self.readline()
        return lines

    def seek(self, offset=None, whence=0, position=None):
        """Moves the reading position: whence 0 from the start, 1 from the current
        position, 2 from the end. `position` is TF's old name for offset."""
        f = self._read_side()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        target = operator.index(offset if position is None else position)
        end = self._io(os.fstat, f.fileno()).st_size
        if whence == 1:
            target += f.tell()
        elif whence == 2:
            target += end
        elif whence != 0:
            raise errors.InvalidArgumentError(
                f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2.")
        if target < 0:
            raise errors.InvalidArgumentError(f"Seeking to a negative position: {target}")
        f.seek(min(target, end))
        if target > end:
            raise errors.OutOfRangeError("reached end of file")

    def tell(self):
        """The reading position (the writing one in w and a modes)."""
        if self._readable:
            return self._read_side().tell()
        return self._write_side().tell()

    def flush(self):
        """Passes written data to the operating system."""
        if self._writer is not None:
            self._io(self._writer.flush)

    def close(self):
        """Closes both sides; a later read opens the file again."""
        reader, writer = self._reader, self._writer
        self._reader = self._writer = None
        if reader is not None:
            reader.close()
        if writer is not None:
            self._io(writer.close)

    def seekable(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__


def exists(path):
    """Whether `path` names a file or directory."""
    return os.path.exists(_local(path)[1])


def isdir(path):
    """Whether `path` is a directory; False for a scheme kiln does not read."""
    try:
        return os.path.isdir(_local(path)[1])
    except errors.UnimplementedError:
        return False


def stat(path):
    """FileStatistics of `path` (symbolic links followed)."""
    shown, local = _local(path)
    st = _call(os.stat, local, shown)
    return FileStatistics(st.st_size, st.st_mtime_ns // 10**9 * 10**9,
                          _stat.S_ISDIR(st.st_mode))


def listdir(path):
    """The names in directory `path`, without "." and "..", in the directory's order."""
    shown, local = _local(path)
    if not os.path.isdir(local):
        raise errors.NotFoundError(f"Could not find directory {shown}")
    return _call(os.listdir, local, shown)


def mkdir(path):
    """Creates directory `path` (its parent must exist); a no-op when it exists."""
    shown, local = _local(path)
    if not local:
        return
    try:
        os.mkdir(local)
    except FileExistsError:
        pass
    except OSError as e:
        raise _os_error(e, shown) from e


def makedirs(path):
    """Creates directory `path` and its missing parents."""
    missing, found = [], _split(_path_str(path))[1]
    while found and not os.path.exists(_clean(found)):
        missing.append(found[found.rfind("/") + 1:])
        found = _dirname(found)
    if found and not os.path.isdir(_clean(found)):
        raise errors.FailedPreconditionError(f"{found} is not a directory")
    for name in reversed(missing):
        found = _join2(found, name)
        try:
            os.mkdir(_clean(found))
        except FileExistsError:
            pass
        except OSError as e:
            raise _os_error(e, found) from e


def remove(path):
    """Deletes the file `path` (not a directory)."""
    shown, local = _local(path)
    _call(os.unlink, local, shown)


def _remove_tree(local, shown):
    with _call(os.scandir, local, shown) as entries:
        children = [(e.path, os.path.join(shown, e.name), e.is_dir(follow_symlinks=False))
                    for e in entries]
    for child, child_shown, is_dir in children:
        if is_dir:
            _remove_tree(child, child_shown)
        else:
            _call(os.unlink, child, child_shown)
    _call(os.rmdir, local, shown)


def rmtree(path):
    """Deletes `path`: a directory with everything under it, or a file."""
    shown, local = _local(path)
    if not os.path.exists(local):
        raise errors.NotFoundError(f"{shown} not found")
    if not os.path.isdir(local):
        _call(os.unlink, local, shown)
    elif os.path.islink(local):
        raise errors.FailedPreconditionError(f"{shown}; Not a directory")
    else:
        _remove_tree(local, shown)


def rename(src, dst, overwrite=False):
    """Moves file or directory `src` to `dst`; AlreadyExistsError when `dst` exists
    and not `overwrite`."""
    src_shown, src_local = _local(src)
    dst_local = _local(dst)[1]
    if not overwrite and os.path.exists(dst_local):
        raise errors.AlreadyExistsError("file already exists")
    try:
        os.rename(src_local, dst_local)
    except OSError as e:
        raise _os_error(e, src_shown) from e


def copy(src, dst, overwrite=False):
    """Copies file `src` to `dst` (new files get src's permission bits);
    AlreadyExistsError when `dst` exists and not `overwrite`."""
    src_shown, src_local = _local(src)
    dst_shown, dst_local = _local(dst)
    if not overwrite and os.path.exists(dst_local):
        raise errors.AlreadyExistsError("file already exists")
    st = _call(os.stat, src_local, src_shown)
    if not _stat.S_ISREG(st.st_mode):
        raise errors.InvalidArgumentError(f"{dst_shown}; Invalid argument")
    if os.path.exists(dst_local) and os.path.samefile(src_local, dst_local):
        return
    with _call(open, src_local, src_shown, "rb") as fin:
        fd = _call(os.open, dst_local, dst_shown, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                   st.st_mode & 0o7777)
        with open(fd, "wb") as fout:
            try:
                shutil.copyfileobj(fin, fout)
            except OSError as e:
                raise _os_error(e, dst_shown) from e


def join(path, *paths):
    """Joins path components as os.path.join; URLs ("scheme://...") with "/"."""
    first = os.fsdecode(os.fspath(path))
    if "://" in first[1:]:
        return posixpath.join(path, *paths)
    return os.path.join(path, *paths)


def walk(top, topdown=True, onerror=None):
    """Yields (dirname, subdirs, files) for `top` and each directory below it, parents
    first (topdown) or last. A listing's NotFoundError goes to onerror, if given, and
    that branch is skipped. Removing names from subdirs (topdown) prunes the walk."""
    top = _path_str(top)
    try:
        names = listdir(top)
    except errors.NotFoundError as err:
        if onerror is not None:
            onerror(err)
        return
    subdirs, files = [], []
    for name in names:
        (subdirs if isdir(join(top, name)) else files).append(name)
    if topdown:
        yield top, subdirs, files
    for name in subdirs:
        yield from walk(join(top, name), topdown, onerror)
    if not topdown:
        yield top, subdirs, files


def get_registered_schemes():
    """The URI schemes gfile reads: "file" and "" (plain local paths)."""
    return ["file", ""]


# ---- glob: fnmatch(3) with FNM_PATHNAME, one directory level at a time ----

_CLASSES = {
    "alpha": string.ascii_letters, "digit": string.digits,
    "alnum": string.ascii_letters + string.digits, "upper": string.ascii_uppercase,
    "lower": string.ascii_lowercase, "space": " \t\n\r\x0b\x0c", "blank": " \t",
    "xdigit": string.hexdigits, "punct": string.punctuation,
    "cntrl": "".join(map(chr, range(32))) + "\x7f",
    "graph": string.ascii_letters + string.digits + string.punctuation,
    "print": string.ascii_letters + string.digits + string.punctuation + " ",
}


def _bracket(pattern, i):
    """(regex, index after) for the bracket expression at pattern[i] == "[", or None
    when it is not closed (then "[" is a plain character)."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    j += negate
    chars, first = [], True
    while j < len(pattern) and (pattern[j] != "]" or first):
        first = False
        if pattern.startswith("[:", j) and ":]" in pattern[j + 2:]:
            end = pattern.index(":]", j + 2)
            chars.extend((c, c) for c in _CLASSES.get(pattern[j + 2:end], ""))
            j = end + 2
            continue
        j += pattern[j] == "\\" and j + 1 < len(pattern)
        lo = pattern[j]
        j += 1
        hi = lo
        if j + 1 < len(pattern) and pattern[j] == "-" and pattern[j + 1] != "]":
            j += 1
            j += pattern[j] == "\\" and j + 1 < len(pattern)
            hi = pattern[j]
            j += 1
        chars.append((lo, hi))
    if j >= len(pattern):
        return None
    ranges = "".join(re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}"
                     for lo, hi in chars if lo <= hi)
    if negate:
        return f"[^/{ranges}]", j + 1
    return (f"(?!/)[{ranges}]" if ranges else "(?!)"), j + 1


def _glob_regex(pattern):
    """A compiled regex matching what the glob `pattern` matches."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\":
            if i + 1 == len(pattern):
                return re.compile("(?!)")
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[" and (bracket := _bracket(pattern, i)):
            out.append(bracket[0])
            i = bracket[1]
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def _dirname(path):
    """TF's io::Dirname: the part before the last "/" ("/" for a root child)."""
    cut = path.rfind("/")
    return "" if cut < 0 else path[:max(cut, 1)]


def _join2(a, b):
    """Joins two glob components with exactly one "/" (TF's io::JoinPath)."""
    if not a or not b:
        return a or b
    if a.endswith("/") and b.startswith("/"):
        return a + b[1:]
    if a.endswith("/") or b.startswith("/"):
        return a + b
    return f"{a}/{b}"


def _glob_levels(pattern, meta):
    """(top directory, the pattern cut at each deeper "/") of a wildcard pattern."""
    top = _dirname(pattern[:meta])
    if not top:
        top, pattern = ".", _join2(".", pattern)
    if pattern.endswith("/"):
        pattern = _dirname(pattern)
    levels = []
    while len(pattern) > len(top):
        levels.append(pattern)
        pattern = _dirname(pattern)
    return top, levels[::-1]


def _children(directory):
    try:
        return os.listdir(_clean(directory))
    except OSError:
        return []


def _glob_one(pattern):
    prefix, local = _split(pattern)
    meta = min((k for k in map(local.find, "*?[\\") if k >= 0), default=-1)
    if not local:
        return []
    if meta < 0:
        return [pattern] if os.path.exists(_clean(local)) else []
    top, levels = _glob_levels(local, meta)
    found = [top]
    for depth, level in enumerate(levels):
        regex, last = _glob_regex(level), depth == len(levels) - 1
        found = [child for parent in found for child in
                 (_join2(parent, name) for name in _children(parent))
                 if regex.fullmatch(child) and (last or os.path.isdir(_clean(child)))]
    return [prefix + p for p in found]


def glob(pattern):
    """The paths matching `pattern` (a pattern or an iterable of them): "*" any run of
    non-"/" characters, "?" one, "[...]" a set ("!" or "^" negates), "\\" escapes.
    Matches come in directory order, not sorted."""
    if isinstance(pattern, (str, bytes, os.PathLike)):
        return _glob_one(_path_str(pattern))
    return [match for p in pattern for match in _glob_one(_path_str(p))]
