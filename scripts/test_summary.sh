#!/usr/bin/env bash
# Prints the closing summary line of a test run from ctest's last log.
set -euo pipefail
log="${1:-build}/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "no test log at $log"; exit 1; }
passed=$(grep -c '^Test Passed\.' "$log" || true)
failed=$(grep -c '^Test Failed\.' "$log" || true)
echo "C++ tests: ${passed} passed, ${failed} failed"
