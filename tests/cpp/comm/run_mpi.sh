#!/usr/bin/env bash
# Runs a two-process scenario of comm_mpi_check under mpirun (bounded by a
# timeout) and passes when both workers printed "rank R: <scenario> ok".
# Usage: run_mpi.sh MPIRUN BINARY SCENARIO
set -u
mpirun=$1 bin=$2 scenario=$3
out=$(timeout 120 "$mpirun" -np 2 --oversubscribe --allow-run-as-root --bind-to none \
  "$bin" "$scenario" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 124 ] || { echo "run_mpi.sh: $scenario did not end within 120 s"; exit 1; }
for r in 0 1; do
  grep -q "rank $r: $scenario ok" <<<"$out" || { echo "run_mpi.sh: rank $r did not pass $scenario"; exit 1; }
done
