#!/usr/bin/env bash
# RocksDB baseline for the Strata comparison workload (see rocksdb_baseline.c
# for the exact workload and every RocksDB setting used).
#
# Usage: Scripts/perf/rocksdb-baseline.sh [records=10000000] [gets=1000000]
#        STRATA_PERF_ORDER=seq writes the records in key order instead of hashed order.
#
# Compiles rocksdb_baseline.c into a temporary directory, runs it on a fresh
# temporary database directory (under $TMPDIR, default /tmp — make sure that
# is a real disk, not tmpfs, if the figures are to be compared with an engine
# writing to disk), prints the results and removes everything afterwards.
set -euo pipefail

RECORDS="${1:-10000000}"
GETS="${2:-1000000}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ ! -f /usr/include/rocksdb/c.h ]; then
    echo "rocksdb-baseline: /usr/include/rocksdb/c.h missing, installing librocksdb-dev" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update
    $SUDO apt-get install -y librocksdb-dev
fi

VERSION="$(dpkg-query -W -f='${Version}' librocksdb-dev 2>/dev/null || echo unknown)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/rocksdb-baseline.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
OUT="$WORK/rocksdb_baseline"
DB="$WORK/db"

(cd "$HERE" && cc -O2 -o "$OUT" rocksdb_baseline.c -lrocksdb)

echo "rocksdb version=$VERSION records=$RECORDS gets=$GETS order=${STRATA_PERF_ORDER:-random} db=$DB"
echo "rocksdb host: $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$OUT" "$DB" "$RECORDS" "$GETS" "$VERSION"
echo "rocksdb host after run: load average: $(cut -d' ' -f1-3 /proc/loadavg)"
