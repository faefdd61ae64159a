#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the README's C++ example as an
# outside project against it, twice: with CMake (find_package(kiln CONFIG)) and with a
# one-line pkg-config build. Both programs must print what the in-tree build prints.
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1"); src=$(realpath "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/kiln/kiln.h include/kiln/op_list.def lib/libkiln.so lib/cmake/kiln/kilnConfig.cmake \
         lib/cmake/kiln/kilnConfigVersion.cmake lib/cmake/kiln/kilnTargets.cmake lib/pkgconfig/kiln.pc; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
version=$(cat "$src/VERSION")
[ -f "$prefix/lib/libkiln.so.$version" ] || fail "no lib/libkiln.so.$version"
soname=$(readelf -d "$prefix/lib/libkiln.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libkiln.so.${version%.*}" ] || fail "SONAME is '$soname', want libkiln.so.${version%.*}"

expected=$("$build/readme_example")

# 1. CMake: an outside copy of examples/consumer (nothing of the checkout is visible to it).
cp -r "$src/examples/consumer" "$tmp/consumer"
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
if grep -q "$src/" "$tmp/consumer/build/compile_commands.json"; then
  fail "the consumer build reads the checkout: $(grep -o "[^ ]*$src/[^ ]*" "$tmp/consumer/build/compile_commands.json" | head -1)"
fi
got=$("$tmp/consumer/build/readme_example")
[ "$got" = "$expected" ] || fail "find_package build printed:\n$got\nwant:\n$expected"

# A version the install does not satisfy is refused by kilnConfigVersion.cmake.
mkdir -p "$tmp/v"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(v LANGUAGES CXX)\nfind_package(kiln 99.0 CONFIG REQUIRED)\n' \
  > "$tmp/v/CMakeLists.txt"
if cmake -S "$tmp/v" -B "$tmp/v/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/v/log" 2>&1; then
  fail "find_package(kiln 99.0) accepted version $version"
fi
grep -q "$version" "$tmp/v/log" || fail "the version mismatch message does not name $version"

# 2. pkg-config, one line.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion kiln)" = "$version" ] || fail "pkg-config --modversion kiln"
c++ "$tmp/consumer/readme_example.cpp" -o "$tmp/pc_example" $(pkg-config --cflags --libs kiln)
got=$(LD_LIBRARY_PATH="$prefix/lib" "$tmp/pc_example")
[ "$got" = "$expected" ] || fail "pkg-config build printed:\n$got\nwant:\n$expected"
echo "consumer builds (find_package and pkg-config) against the installed kiln $version: ok"
