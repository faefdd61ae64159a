"""tf.io.gfile on local paths: every function, GFile's modes, seek/tell and lines, glob
patterns, walk orders and TensorFlow 2.21's error classes and texts (the expected
values were taken from TensorFlow 2.21 running the same calls)."""
import errno
import os
import pathlib
import re

import pytest

import kiln as tf
from kiln import _gfile

gfile = tf.io.gfile
E = tf.errors


@pytest.fixture
def tree(tmp_path):
    """tmp_path with dir/{sub/, in}, empty/, f ("F") and h ("H")."""
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    (tmp_path / "f").write_text("F")
    (tmp_path / "h").write_text("H")
    (tmp_path / "dir" / "in").write_text("I")
    return tmp_path


def raises(cls, message):
    """pytest.raises for a kiln error whose text is exactly `message`."""
    return pytest.raises(cls, match="^" + re.escape(message) + "$")


def test_gfile_is_kiln_io_gfile():
    assert gfile is _gfile
    assert issubclass(E.AlreadyExistsError, E.OpError)
    assert issubclass(E.PermissionDeniedError, E.OpError)


# ---- GFile ----

@pytest.mark.parametrize("mode,kind", [("r", str), ("rb", bytes), ("r+", str),
                                       ("rb+", bytes), ("r+b", bytes), ("w+", str),
                                       ("a+", str), ("ab+", bytes), ("br", bytes)])
def test_text_modes_read_str_binary_modes_bytes(tmp_path, mode, kind):
    p = tmp_path / "t"
    p.write_bytes("héllo\nworld".encode())
    f = gfile.GFile(str(p), mode)
    assert type(f.read()) is kind
    f.seek(0)
    assert type(f.readline()) is kind
    assert f.mode == mode
    f.close()


# (mode, file before (None: missing), writes, file after)
WRITES = [
    ("w", b"old", ["ab", b"cd"], b"abcd"),
    ("wb", b"old", ["é"], "é".encode()),
    ("a", b"old", ["ab"], b"oldab"),
    ("ab", None, [b"x", bytearray(b"y")], b"xy"),
    ("r+", b"old", ["Z"], b"Z"),  # TF: r+ truncates at the first write
    ("w+", None, ["new"], b"new"),
    ("a+", b"0", ["1"], b"01"),
]


@pytest.mark.parametrize("mode,before,writes,after", WRITES)
def test_write_modes(tmp_path, mode, before, writes, after):
    p = tmp_path / "w"
    if before is not None:
        p.write_bytes(before)
    with gfile.GFile(str(p), mode) as f:
        for w in writes:
            f.write(w)
    assert p.read_bytes() == after


def test_files_open_at_first_use(tmp_path):
    p = tmp_path / "lazy"
    gfile.GFile(str(p), "w").close()
    assert not p.exists()
    f = gfile.GFile(str(p))  # a missing file: the error comes with the first read
    with raises(E.NotFoundError, f"{p}; No such file or directory"):
        f.read()
    with raises(E.NotFoundError, f"{p}; No such file or directory"):
        f.size()
    assert gfile.GFile(str(p), "w").tell() == 0  # tell opens the writer
    assert p.exists()


def test_read_readline_readlines_tell(tmp_path):
    p = tmp_path / "t"
    p.write_bytes("héllo\nworld\nlast".encode())
    f = gfile.GFile(str(p))
    assert f.read(3) == "hé"  # n counts bytes
    assert f.tell() == 3
    assert f.readline() == "llo\n"
    assert f.tell() == 7
    assert f.readlines() == ["world\n", "last"]
    assert (f.readline(), f.read(), f.read(5)) == ("", "", "")
    assert f.read(0) == ""
    f.seek(0)
    assert f.read(100) == "héllo\nworld\nlast"
    with raises(E.InvalidArgumentError, "Can't read a negative number of bytes: -2"):
        f.read(-2)
    with pytest.raises(TypeError):
        f.read(2.0)
    with pytest.raises(UnicodeDecodeError):  # TF decodes the n bytes read
        f.seek(1)
        f.read(1)


def test_readline_drops_carriage_returns_and_iterates(tmp_path):
    p = tmp_path / "t"
    p.write_bytes(b"a\r\nb\rc\n\nd")
    assert gfile.GFile(str(p)).readlines() == ["a\n", "bc\n", "\n", "d"]
    assert list(gfile.GFile(str(p), "rb")) == [b"a\n", b"bc\n", b"\n", b"d"]
    assert gfile.GFile(str(p)).read() == "a\r\nb\rc\n\nd"
    f = gfile.GFile(str(p), "rb")
    assert (f.readline(), f.tell()) == (b"a\n", 3)
    assert next(f) == b"bc\n"
    assert f.next() == b"\n"
    assert iter(f) is f


# (seek args, seek kwargs, tell after or (error class, message)); the file has 23
# bytes and the position is 10 before each seek.
SEEKS = [
    ((0,), {}, 0),
    ((5,), {}, 5),
    ((), {"position": 2}, 2),
    ((), {"offset": 4}, 4),
    ((2, 1), {}, 12),
    ((-3, 1), {}, 7),
    ((-2, 2), {}, 21),
    ((0, 2), {}, 23),
    ((23,), {}, 23),
    ((24,), {}, (E.OutOfRangeError, "reached end of file", 23)),
    ((1000,), {}, (E.OutOfRangeError, "reached end of file", 23)),
    ((-5,), {}, (E.InvalidArgumentError, "Seeking to a negative position: -5", 10)),
    ((-11, 1), {}, (E.InvalidArgumentError, "Seeking to a negative position: -1", 10)),
    ((0, 3), {}, (E.InvalidArgumentError,
                  "Invalid whence argument: 3. Valid values are 0, 1, or 2.", 10)),
    ((), {}, (TypeError, "seek(): offset argument required", 10)),
    ((1,), {"position": 2},
     (TypeError, "seek(): offset and position may not be set simultaneously.", 10)),
]


@pytest.mark.parametrize("args,kwargs,want", SEEKS)
def test_seek_and_tell(tmp_path, args, kwargs, want):
    p = tmp_path / "t"
    p.write_bytes(b"0123456789abcdefghijklm")
    f = gfile.GFile(str(p), "rb")
    f.read(10)
    if isinstance(want, tuple):
        cls, message, where = want
        with raises(cls, message):
            f.seek(*args, **kwargs)
        assert f.tell() == where
    else:
        assert f.seek(*args, **kwargs) is None
        assert f.tell() == want
    assert f.seekable()


def test_tell_in_write_and_append_modes(tmp_path):
    p = tmp_path / "t"
    p.write_bytes(b"0123456789")
    f = gfile.GFile(str(p), "a")
    assert f.tell() == 10
    f.write("ab")
    assert f.tell() == 12
    f.close()
    f = gfile.GFile(str(p), "a+")  # readable: tell is the reading position
    f.write("cd")
    f.flush()
    assert (f.tell(), f.read(), f.tell()) == (0, "0123456789abcd", 14)
    f.close()


def test_size_flush_close_and_reopen(tmp_path):
    p = tmp_path / "t"
    f = gfile.GFile(str(p), "w+")
    f.write("abc")
    f.flush()
    assert p.read_bytes() == b"abc"
    assert f.size() == 3
    assert f.read() == "abc"
    f.close()
    f.close()
    f = gfile.GFile(str(p))
    assert f.read() == "abc"
    f.close()
    assert f.read() == "abc"  # read after close opens the file again, at 0


def test_context_manager_closes_on_error(tmp_path):
    p = tmp_path / "t"
    with pytest.raises(KeyError):
        with gfile.GFile(str(p), "w") as f:
            f.write("data")
            raise KeyError("k")
    assert p.read_text() == "data"


@pytest.mark.parametrize("name", [str, os.fsencode, pathlib.Path])
def test_gfile_names(tmp_path, name):
    p = tmp_path / "t"
    p.write_bytes(b"x")
    f = gfile.GFile(name(str(p)), "rb")
    assert f.name == name(str(p))
    assert (f.read(), f.size()) == (b"x", 1)


@pytest.mark.parametrize("mode,cls", [("x", E.InvalidArgumentError),
                                      ("rt", E.InvalidArgumentError),
                                      ("rw", E.InvalidArgumentError),
                                      ("+r", E.InvalidArgumentError),
                                      ("", E.InvalidArgumentError),
                                      (None, TypeError), (b"r", TypeError)])
def test_bad_modes(tmp_path, mode, cls):
    with pytest.raises(cls):
        gfile.GFile(str(tmp_path / "t"), mode)
    if cls is E.InvalidArgumentError:
        with raises(cls, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"):
            gfile.GFile(str(tmp_path / "t"), mode)


def test_read_only_and_write_only_sides(tree):
    with raises(E.PermissionDeniedError, "File isn't open for writing"):
        gfile.GFile(str(tree / "f")).write("x")
    for mode in ("w", "a", "wb"):
        f = gfile.GFile(str(tree / "f"), mode)
        with raises(E.PermissionDeniedError, "File isn't open for reading"):
            f.read()
        with raises(E.PermissionDeniedError, "File isn't open for reading"):
            f.seek(0)


@pytest.mark.parametrize("value", [3, None, ["a"], memoryview(b"a"), 1.5])
def test_write_rejects_non_strings(tmp_path, value):
    with raises(TypeError, f"Expected binary or unicode string, got {value!r}"):
        gfile.GFile(str(tmp_path / "t"), "w").write(value)


def test_gfile_file_system_errors(tree):
    with raises(E.FailedPreconditionError, f"{tree}; Is a directory"):
        gfile.GFile(str(tree)).read()
    with raises(E.FailedPreconditionError, f"{tree}; Is a directory"):
        gfile.GFile(str(tree), "w").write("x")
    missing = tree / "no" / "x"
    with raises(E.NotFoundError, f"{missing}; No such file or directory"):
        gfile.GFile(str(missing), "w").write("x")
    with raises(E.NotFoundError, "; No such file or directory"):
        gfile.GFile("").read()


# ---- path functions ----

def test_exists_isdir(tree):
    cases = [("f", True, False), ("dir", True, True), ("dir/in", True, False),
             ("missing", False, False), ("f/x", False, False)]
    for rel, exists, isdir in cases:
        assert gfile.exists(str(tree / rel)) is exists, rel
        assert gfile.isdir(str(tree / rel)) is isdir, rel
    assert not gfile.exists("") and not gfile.isdir("")
    assert gfile.exists(os.fsencode(tree / "f")) and gfile.isdir(tree / "dir")


def test_stat(tree):
    os.utime(tree / "f", ns=(1, 1234567891234567891))
    s = gfile.stat(str(tree / "f"))
    assert (s.length, s.mtime_nsec, s.is_directory) == (1, 1234567891000000000, False)
    d = gfile.stat(tree / "dir")
    assert d.is_directory and d.length == os.stat(tree / "dir").st_size
    with pytest.raises(AttributeError):
        s.length = 3
    with raises(E.NotFoundError, f"{tree / 'm'}; No such file or directory"):
        gfile.stat(str(tree / "m"))
    with raises(E.FailedPreconditionError, f"{tree / 'f' / 'x'}; Not a directory"):
        gfile.stat(str(tree / "f" / "x"))


def test_listdir(tree):
    got = gfile.listdir(str(tree))
    assert got == os.listdir(tree)  # the directory's order, not sorted
    assert sorted(got) == ["dir", "empty", "f", "h"]
    assert gfile.listdir(str(tree) + "/") == got
    assert gfile.listdir(os.fsencode(tree)) == got == gfile.listdir(tree)
    assert gfile.listdir(str(tree / "empty")) == []
    for rel in ("m", "f"):
        with raises(E.NotFoundError, f"Could not find directory {tree / rel}"):
            gfile.listdir(str(tree / rel))
    with raises(E.NotFoundError, "Could not find directory "):
        gfile.listdir("")


# (function, path relative to the tree, error class or None, message)
DIR_CASES = [
    (gfile.mkdir, "new", None, None),
    (gfile.mkdir, "dir", None, None),  # TF: an existing path is no error
    (gfile.mkdir, "f", None, None),
    (gfile.mkdir, "x/y", E.NotFoundError, "{t}/x/y; No such file or directory"),
    (gfile.mkdir, "f/z", E.FailedPreconditionError, "{t}/f/z; Not a directory"),
    (gfile.makedirs, "a/b/c", None, None),
    (gfile.makedirs, "dir", None, None),
    (gfile.makedirs, "a/../b", None, None),
    (gfile.makedirs, "f", E.FailedPreconditionError, "{t}/f is not a directory"),
    (gfile.makedirs, "f/z/w", E.FailedPreconditionError, "{t}/f is not a directory"),
    (gfile.remove, "f", None, None),
    (gfile.remove, "empty", E.FailedPreconditionError, "{t}/empty; Is a directory"),
    (gfile.remove, "m", E.NotFoundError, "{t}/m; No such file or directory"),
    (gfile.remove, "f/x", E.FailedPreconditionError, "{t}/f/x; Not a directory"),
    (gfile.rmtree, "dir", None, None),
    (gfile.rmtree, "f", None, None),
    (gfile.rmtree, "m", E.NotFoundError, "{t}/m not found"),
    (gfile.rmtree, "f/x", E.NotFoundError, "{t}/f/x not found"),
]


@pytest.mark.parametrize("fn,rel,cls,message", DIR_CASES)
def test_mkdir_makedirs_remove_rmtree(tree, fn, rel, cls, message):
    path = str(tree / rel)
    if cls is not None:
        with raises(cls, message.format(t=tree)):
            fn(path)
        return
    assert fn(path) is None
    if fn in (gfile.mkdir, gfile.makedirs):
        assert os.path.isdir(os.path.normpath(path)) or os.path.isfile(path)
    else:
        assert not os.path.lexists(path)


def test_makedirs_details(tree, monkeypatch):
    gfile.makedirs(str(tree / "a" / ".." / "b"))
    assert (tree / "b").is_dir() and not (tree / "a").exists()
    gfile.makedirs(str(tree / "t1" / "t2") + "/")
    assert (tree / "t1" / "t2").is_dir()
    monkeypatch.chdir(tree)
    gfile.makedirs("r1/r2")
    assert (tree / "r1" / "r2").is_dir()
    with raises(E.FailedPreconditionError, "f is not a directory"):
        gfile.makedirs("f/r2")
    assert gfile.makedirs("") is None and gfile.mkdir("") is None


def test_names_are_cleaned_as_tensorflow_cleans_them(tree):
    """"d/x/../f/" is "d/f" even when d/x is missing; errors show the name as given."""
    via = str(tree / "nx") + "/../"
    assert gfile.exists(via + "f") and gfile.exists(str(tree / "f") + "/")
    assert gfile.isdir(via + "dir/.") and gfile.stat(via + "f/").length == 1
    assert gfile.GFile(via + "f").read() == "F"
    assert sorted(gfile.listdir(str(tree / "nx") + "/..")) == ["dir", "empty", "f", "h"]
    assert next(gfile.walk(via + "dir"))[0] == via + "dir"
    gfile.mkdir(via + "m")
    gfile.copy(via + "f", via + "c")
    gfile.rename(via + "c", via + "c2")
    assert (tree / "m").is_dir() and (tree / "c2").read_text() == "F"
    gfile.remove(via + "c2")
    gfile.rmtree(via + "m")
    assert not (tree / "c2").exists() and not (tree / "m").exists()
    with raises(E.NotFoundError, f"{via}missing/; No such file or directory"):
        gfile.stat(via + "missing/")
    with raises(E.NotFoundError, f"Could not find directory {via}missing/"):
        gfile.listdir(via + "missing/")
    for path, shown in [(via + "f/z", via + "f"), (str(tree / "f") + "/",
                                                   str(tree / "f") + "/")]:
        with raises(E.FailedPreconditionError, f"{shown} is not a directory"):
            gfile.makedirs(path)


def test_copy_of_a_directory_leaves_dst_alone(tree):
    for dst, overwrite in [("c", False), ("h", True)]:
        with raises(E.InvalidArgumentError, f"{tree / dst}; Invalid argument"):
            gfile.copy(str(tree / "dir"), str(tree / dst), overwrite=overwrite)
    assert not (tree / "c").exists() and (tree / "h").read_text() == "H"


def test_rmtree_does_not_follow_links(tree):
    (tree / "dir" / "sub" / "keep").write_text("k")
    os.symlink(tree / "dir" / "sub", tree / "empty" / "link")
    os.symlink(tree / "f", tree / "empty" / "flink")
    gfile.rmtree(str(tree / "empty"))
    assert not (tree / "empty").exists()
    assert (tree / "dir" / "sub" / "keep").exists() and (tree / "f").exists()
    os.symlink(tree / "dir", tree / "dlink")
    with raises(E.FailedPreconditionError, f"{tree / 'dlink'}; Not a directory"):
        gfile.rmtree(str(tree / "dlink"))
    assert (tree / "dir" / "in").exists()


# (src, dst, overwrite, error class or None, message): rename, then copy
RENAMES = [
    ("f", "q", False, None, None),
    ("f", "h", False, E.AlreadyExistsError, "file already exists"),
    ("f", "h", True, None, None),
    ("f", "f", False, E.AlreadyExistsError, "file already exists"),
    ("f", "f", True, None, None),
    ("m", "q", False, E.NotFoundError, "{t}/m; No such file or directory"),
    ("m", "h", False, E.AlreadyExistsError, "file already exists"),
    ("f", "dir", False, E.AlreadyExistsError, "file already exists"),
    ("f", "dir", True, E.FailedPreconditionError, "{t}/f; Is a directory"),
    ("dir", "d2", False, None, None),
    ("dir", "empty", True, None, None),
    ("empty", "dir", True, E.FailedPreconditionError, "{t}/empty; Directory not empty"),
    ("dir", "f", True, E.FailedPreconditionError, "{t}/dir; Not a directory"),
    ("f", "m/q", False, E.NotFoundError, "{t}/f; No such file or directory"),
    ("dir", "dir/sub/x", False, E.InvalidArgumentError, "{t}/dir; Invalid argument"),
]
COPIES = [
    ("f", "c", False, None, None),
    ("f", "h", False, E.AlreadyExistsError, "file already exists"),
    ("f", "h", True, None, None),
    ("f", "f", False, E.AlreadyExistsError, "file already exists"),
    ("f", "f", True, None, None),  # TF 2.21 empties the file here
    ("m", "c", False, E.NotFoundError, "{t}/m; No such file or directory"),
    ("m", "h", False, E.AlreadyExistsError, "file already exists"),
    ("dir", "c", False, E.InvalidArgumentError, "{t}/c; Invalid argument"),
    ("f", "dir", False, E.AlreadyExistsError, "file already exists"),
    ("f", "dir", True, E.FailedPreconditionError, "{t}/dir; Is a directory"),
    ("f", "m/c", False, E.NotFoundError, "{t}/m/c; No such file or directory"),
]


@pytest.mark.parametrize("fn,src,dst,overwrite,cls,message",
                         [(gfile.rename,) + c for c in RENAMES] +
                         [(gfile.copy,) + c for c in COPIES])
def test_rename_and_copy(tree, fn, src, dst, overwrite, cls, message):
    before = (tree / src).read_bytes() if (tree / src).is_file() else None
    if cls is not None:
        with raises(cls, message.format(t=tree)):
            fn(str(tree / src), str(tree / dst), overwrite=overwrite)
        return
    fn(str(tree / src), pathlib.Path(tree / dst), overwrite)
    if before is not None:
        assert (tree / dst).read_bytes() == before
    assert (tree / src).exists() == (fn is gfile.copy or src == dst)


def test_copy_keeps_permission_bits(tree):
    os.chmod(tree / "f", 0o751)
    gfile.copy(os.fsencode(tree / "f"), tree / "c")
    assert os.stat(tree / "c").st_mode & 0o777 == 0o751


@pytest.mark.parametrize("args,want", [
    (("a", "b", "/c", "d"), "/c/d"), (("a",), "a"), ((b"a", b"b"), b"a/b"),
    (("gs://bucket", "x", "y"), "gs://bucket/x/y"), (("gs://bucket/", "x/", "y"),
                                                     "gs://bucket/x/y"),
    (("gs://bucket", ""), "gs://bucket/"), ((pathlib.Path("a"), "b"), "a/b"),
    (("", "b"), "b"), (("a", ""), "a/"), (("file:///tmp", "b"), "file:///tmp/b"),
])
def test_join(args, want):
    assert gfile.join(*args) == want


def test_join_type_errors():
    with pytest.raises(TypeError):
        gfile.join("a", b"b")
    with pytest.raises(TypeError):
        gfile.join(3, "b")


# ---- walk ----

def _walk_tree(tmp_path):
    for rel in ("a/x/deep", "a/y", "b"):
        (tmp_path / rel).mkdir(parents=True)
    for rel in ("r.txt", "a/f1", "a/x/f2"):
        (tmp_path / rel).write_text(rel)
    return str(tmp_path)


def _in_dir_order(top, names):
    """names in the order os.listdir gives them in top."""
    order = os.listdir(top)
    return sorted(names, key=order.index)


def _expected_walk(top, topdown):
    subdirs = _in_dir_order(top, [n for n in os.listdir(top)
                                  if os.path.isdir(os.path.join(top, n))])
    files = _in_dir_order(top, [n for n in os.listdir(top)
                                if not os.path.isdir(os.path.join(top, n))])
    below = [w for s in subdirs for w in _expected_walk(os.path.join(top, s), topdown)]
    here = [(top, subdirs, files)]
    return here + below if topdown else below + here


@pytest.mark.parametrize("topdown", [True, False])
def test_walk_orders(tmp_path, topdown):
    top = _walk_tree(tmp_path)
    got = list(gfile.walk(top, topdown=topdown))
    assert got == _expected_walk(top, topdown)
    dirs = [d for d, _, _ in got]
    assert len(dirs) == 6
    a, ax = dirs.index(os.path.join(top, "a")), dirs.index(os.path.join(top, "a", "x"))
    assert (a < ax) == topdown and (dirs.index(top) == 0) == topdown


def test_walk_details(tmp_path, monkeypatch):
    top = _walk_tree(tmp_path)
    pruned = []
    for d, subdirs, _ in gfile.walk(top):
        pruned.append(d)
        if "a" in subdirs:
            subdirs.remove("a")
    assert sorted(pruned) == [top, os.path.join(top, "b")]
    assert next(gfile.walk(top + "/"))[0] == top + "/"
    assert next(gfile.walk(os.fsencode(top)))[0] == top
    assert next(gfile.walk(pathlib.Path(top)))[0] == top
    monkeypatch.chdir(top)
    assert next(gfile.walk("a"))[0] == "a" and next(gfile.walk("."))[0] == "."
    assert list(gfile.walk("")) == []


def test_walk_errors(tmp_path):
    missing = str(tmp_path / "m")
    assert list(gfile.walk(missing)) == []
    seen = []
    for top in (missing, str(_walk_tree(tmp_path) + "/r.txt")):
        assert list(gfile.walk(top, onerror=seen.append)) == []
    assert [type(e) for e in seen] == [E.NotFoundError] * 2
    assert str(seen[0]) == f"Could not find directory {missing}"
    with pytest.raises(TypeError):
        list(gfile.walk(3))


# ---- glob ----

GLOB_FILES = ["b.txt", "a.txt", "c.py", "a1.txt", "ab.txt", ".hidden", "sub/x.txt",
              "sub/y.py", "sub/deep/z.txt", "sub2/x.txt", "[x].txt", "a*b", "a?b", "a\\b",
              "x1", "x-", "xa", "xB", "a[.txt"]

# (pattern relative to the tree, matches relative to it, in any order)
GLOBS = [
    ("*", ["emptydir", "sub2", ".hidden", "ab.txt", "[x].txt", "b.txt", "a*b", "a1.txt",
           "sub", "a?b", "c.py", "a\\b", "a.txt", "x1", "x-", "xa", "xB", "a[.txt"]),
    ("*.txt", ["ab.txt", "[x].txt", "b.txt", "a1.txt", "a.txt", "a[.txt"]),
    ("a?.txt", ["ab.txt", "a1.txt", "a[.txt"]),
    ("[ab]*.txt", ["ab.txt", "b.txt", "a1.txt", "a.txt", "a[.txt"]),
    ("[^a-c]?", ["x1", "x-", "xa", "xB"]),
    ("[a-b].txt", ["b.txt", "a.txt"]),
    ("*/*.txt", ["sub2/x.txt", "sub/x.txt"]),
    ("*/*", ["sub2/x.txt", "sub/y.py", "sub/x.txt", "sub/deep"]),
    ("*/*/*", ["sub/deep/z.txt"]),
    ("**/*.txt", ["sub2/x.txt", "sub/x.txt"]),
    ("s*/x.txt", ["sub2/x.txt", "sub/x.txt"]),
    ("a.txt", ["a.txt"]),
    ("sub/deep/../x.txt", ["sub/deep/../x.txt"]),
    ("missing", []), ("missing/*", []), ("*.md", []), ("a.txt/*", []),
    ("\\[x].txt", ["[x].txt"]), ("[[]x].txt", ["[x].txt"]),
    ("a\\*b", ["a*b"]), ("a\\?b", ["a?b"]), ("a\\\\b", ["a\\b"]), ("a\\", []),
    ("a*b", ["a*b", "a?b", "a\\b"]),
    (".*", [".hidden"]), ("?", []),
    ("x[[:digit:]]", ["x1"]), ("x[[:alpha:]]", ["xa", "xB"]), ("x[[:upper:]]", ["xB"]),
    ("x[a-]", ["xa", "x-"]), ("x[-a]", ["xa", "x-"]), ("x[]-]", ["x-"]),
    ("x[z-a]", []), ("x[\\-]", ["x-"]), ("X*", []),
    ("a[.txt", ["a[.txt"]), ("a[.*", ["a[.txt"]),
    ("s*/", ["sub2", "sub"]),  # TF: a trailing "/" is dropped, files match too
    ("sub/*/", ["sub/y.py", "sub/x.txt", "sub/deep"]),
    ("s*//", []), ("*//*.txt", []),
    ("sub/", ["sub/"]),
    ("./a*.txt", ["./ab.txt", "./a1.txt", "./a.txt", "./a[.txt"]),
    ("sub/deep/../*.txt", ["sub/deep/../x.txt"]),
]


@pytest.fixture
def glob_tree(tmp_path):
    for rel in GLOB_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "emptydir").mkdir()
    return tmp_path


@pytest.mark.parametrize("pattern,want", GLOBS)
def test_glob_patterns(glob_tree, pattern, want):
    got = gfile.glob(str(glob_tree) + "/" + pattern)
    assert sorted(got) == sorted(str(glob_tree) + "/" + w for w in want)


def test_glob_bracket_negation(glob_tree):
    got = gfile.glob(str(glob_tree / "[!a-x.[]*"))
    assert sorted(os.path.basename(p) for p in got) == []
    got = gfile.glob(str(glob_tree / "[!a-r]*"))
    assert sorted(os.path.basename(p) for p in got) == sorted(
        ["sub", "sub2", "x1", "x-", "xa", "xB", ".hidden", "[x].txt"])


def test_glob_order_and_lists(glob_tree):
    top = str(glob_tree)
    assert gfile.glob(top + "/*") == [top + "/" + n for n in os.listdir(top)]
    assert gfile.glob([top + "/a.txt", top + "/c*", top + "/a.txt"]) == \
        [top + "/a.txt", top + "/c.py", top + "/a.txt"]
    assert gfile.glob(p for p in [top + "/c*"]) == [top + "/c.py"]
    assert gfile.glob(os.fsencode(top + "/c*")) == [top + "/c.py"]
    assert gfile.glob(pathlib.Path(top) / "c*") == [top + "/c.py"]
    assert gfile.glob("") == [] and gfile.glob([]) == []
    assert gfile.glob("file://" + top + "/x[0-9]") == ["file://" + top + "/x1"]


def test_glob_relative_patterns(glob_tree, monkeypatch):
    monkeypatch.chdir(glob_tree)
    assert sorted(gfile.glob("a*.txt")) == ["./a.txt", "./a1.txt", "./a[.txt", "./ab.txt"]
    assert sorted(gfile.glob("*/x.txt")) == ["./sub/x.txt", "./sub2/x.txt"]
    assert sorted(gfile.glob("sub/*.py")) == ["sub/y.py"]
    assert gfile.glob("c.py") == ["c.py"]
    assert gfile.glob(".") == ["."]


# ---- schemes, types, errno ----

def test_registered_schemes_and_file_uris(tree):
    assert gfile.get_registered_schemes() == ["file", ""]
    uri = "file://" + str(tree)
    assert gfile.exists(uri + "/f") and gfile.isdir(uri + "/dir")
    assert gfile.GFile(uri + "/f").read() == "F"
    assert sorted(gfile.listdir(uri)) == ["dir", "empty", "f", "h"]
    assert gfile.stat(uri + "/f").length == 1
    assert next(gfile.walk(uri + "/dir"))[0] == uri + "/dir"
    assert gfile.exists("file://host" + str(tree / "f"))
    with raises(E.NotFoundError, f"{uri}/m; No such file or directory"):
        gfile.stat(uri + "/m")
    assert not gfile.exists("file:" + str(tree / "f"))  # not a URI: a relative name


@pytest.mark.parametrize("uri", ["gs://bucket/x", "s3://bucket/x", "hdfs://host/x",
                                 "ram://x", "GS://b"])
def test_other_schemes_are_unimplemented(tree, uri):
    scheme = uri.split("://")[0]
    calls = [lambda: gfile.exists(uri), lambda: gfile.listdir(uri),
             lambda: gfile.stat(uri), lambda: gfile.mkdir(uri),
             lambda: gfile.makedirs(uri), lambda: gfile.remove(uri),
             lambda: gfile.rmtree(uri), lambda: gfile.glob(uri + "/*"),
             lambda: gfile.rename(str(tree / "f"), uri),
             lambda: gfile.copy(uri, str(tree / "c")),
             lambda: list(gfile.walk(uri)), lambda: gfile.GFile(uri).read(),
             lambda: gfile.GFile(uri, "w").write("x")]
    for call in calls:
        with pytest.raises(E.UnimplementedError,
                           match=f"^File system scheme '{scheme}' not implemented"):
            call()
    assert gfile.isdir(uri) is False
    gfile.GFile(uri, "w").close()  # nothing opened, nothing raised (as TF)


@pytest.mark.parametrize("fn", [gfile.exists, gfile.isdir, gfile.stat, gfile.listdir,
                                gfile.remove, gfile.mkdir, gfile.makedirs, gfile.rmtree,
                                gfile.GFile])
@pytest.mark.parametrize("bad", [3, None])
def test_paths_must_be_strings(fn, bad):
    with raises(TypeError, f"Expected binary or unicode string, got {bad!r}"):
        fn(bad)


@pytest.mark.parametrize("code,cls", [
    ("ENOENT", E.NotFoundError), ("EACCES", E.PermissionDeniedError),
    ("EPERM", E.PermissionDeniedError), ("EROFS", E.PermissionDeniedError),
    ("EEXIST", E.AlreadyExistsError), ("ENOTDIR", E.FailedPreconditionError),
    ("EISDIR", E.FailedPreconditionError), ("ENOTEMPTY", E.FailedPreconditionError),
    ("EINVAL", E.InvalidArgumentError), ("ENAMETOOLONG", E.InvalidArgumentError),
    ("ENOSPC", E.ResourceExhaustedError), ("EMFILE", E.ResourceExhaustedError),
    ("EFBIG", E.OutOfRangeError), ("EXDEV", E.UnimplementedError),
    ("EAGAIN", E.UnavailableError), ("ETIMEDOUT", E.DeadlineExceededError),
    ("EDEADLK", E.AbortedError), ("ECANCELED", E.CancelledError),
    ("EIO", E.UnknownError), ("ELOOP", E.UnknownError),
])
def test_errno_to_error_class(code, cls):
    number = getattr(errno, code)
    err = _gfile._os_error(OSError(number, os.strerror(number)), "/p")
    assert type(err) is cls
    assert str(err) == f"/p; {os.strerror(number)}"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads any file")
def test_permission_denied(tmp_path):
    p = tmp_path / "locked"
    p.write_text("x")
    os.chmod(p, 0)
    try:
        with raises(E.PermissionDeniedError, f"{p}; Permission denied"):
            gfile.GFile(str(p)).read()
    finally:
        os.chmod(p, 0o644)
