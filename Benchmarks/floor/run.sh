#!/bin/sh
# Builds floor and counts its instructions per push (callgrind) for each phase and shape; see README.md.
#   HERALD_BIN=/tmp/hfinal11 Benchmarks/floor/run.sh OUTDIR [N] [K] [G...]     (G 0: no push phases)
#   NOTIFY_SHAPES="base lean" NOTIFY_GROUPS="2 8" Benchmarks/floor/run.sh OUTDIR N K 0
#   NOTIFY_GROUPS=0 …: the push phases only
#   FLOOR_PAGE_SIZE=2048 …: the databases made with that page size (Herald: 4096, SQLite's default)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1; n=${2:-20000}; k=${3:-1000}; shift 3 2>/dev/null || shift $#
groups=${*:-100}
mkdir -p "$out"
cc -O2 -Wall -o "$out/floor" "$here/floor.c" -lsqlite3
# Herald's schema, made by its own migrations (`herald migrate`) once, copied for each phase.
herald=${HERALD_BIN:?set HERALD_BIN to a herald binary: its migrate makes the schema}
rm -f "$out/template.db" "$out/template.db-wal" "$out/template.db-shm"
sqlite3 "$out/template.db" "PRAGMA page_size=${FLOOR_PAGE_SIZE:-4096}; VACUUM;"
HERALD_DATABASE="$out/template.db" "$herald" migrate >"$out/migrate.log" 2>&1 || { cat "$out/migrate.log" >&2; exit 1; }
sqlite3 "$out/template.db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
fresh() { rm -f "$1" "$1-wal" "$1-shm"; cp "$out/template.db" "$1"; }
for g in $groups; do
  [ "$g" = 0 ] && break  # G 0: the choke point only
  for shape in ${PUSH_SHAPES:-base lean}; do
    for phase in enqueue complete; do
      fresh "$out/db"
      ir=$(FLOOR_COLLECT=$phase valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/cg-$shape-$phase-g$g.out" \
             "$out/floor" push "$out/db" "$n" "$k" "$g" "$shape" 2>&1 | sed -n 's/.*Collected : //p')
      echo "$shape g=$g $phase: $((ir / n)) Ir/push"
    done
    fresh "$out/db"
    "$out/floor" push "$out/db" "$n" "$k" "$g" "$shape"
  done
done
# The choke point's notification (one iOS device): NOTIFY_GROUPS notifications a transaction, for
# each of NOTIFY_SHAPES (floor.c's SHAPE).
for shape in ${NOTIFY_SHAPES:-base}; do
  for g in ${NOTIFY_GROUPS:-1 2 4 8 16}; do
    [ "$g" = 0 ] && break  # NOTIFY_GROUPS=0: no notification phases
    fresh "$out/db"
    ir=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/cg-notify-$shape-g$g.out" \
           "$out/floor" notify "$out/db" "$n" "$g" "$shape" 2>&1 | sed -n 's/.*Collected : //p')
    echo "notify $shape g=$g: $((ir / n)) Ir/notification"
    fresh "$out/db"
    "$out/floor" notify "$out/db" "$n" "$g" "$shape"
  done
done
