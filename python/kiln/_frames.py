"""Where the code a stack frame runs comes from, for messages that point at the
user's line: library code (kiln, the standard library, installed packages),
which error locations skip, and code AutoGraph compiled from the user's source
(under the user's file name and line numbers).

The standard library only: kiln.errors (the bottom layer) and kiln.autograph
(its errors, transpiler and call policy) share it.
"""
import functools
import os
import sys
import sysconfig
import weakref

# Every code object compiled from converted source (filled by the transpiler).
_converted_codes = weakref.WeakSet()


def mark_converted(code):
    """Records a code object as compiled by AutoGraph (not its nested ones)."""
    _converted_codes.add(code)


def is_converted_code(code):
    """True for code objects produced by the AutoGraph converter (any nesting level)."""
    return code in _converted_codes


def _library_dirs():
    dirs = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(os.path.realpath(paths[key]))
    for p in (sys.base_prefix, sys.base_exec_prefix):
        dirs.add(os.path.realpath(os.path.join(p, "lib",
                                               f"python{sys.version_info[0]}."
                                               f"{sys.version_info[1]}")))
    return tuple(sorted(d + os.sep for d in dirs))


_LIBRARY_DIRS = _library_dirs()


@functools.lru_cache(maxsize=4096)
def library_file(filename):
    """True for a file of the standard library or of an installed package."""
    if not filename or filename.startswith("<"):
        return False
    if "site-packages" in filename or "dist-packages" in filename:
        return True
    real = os.path.realpath(filename)
    return any(real.startswith(d) for d in _LIBRARY_DIRS)
