#!/bin/sh
# layers.sh — the layering check of ../shared/DESIGN.md "Layers": every
# #include "dir/file.h" under src/ must name a layer the including file's
# layer may use. Prints each violation; exits 1 when there is one.
# Usage: scripts/layers.sh [ROOT] (default: this checkout).
#
#   layer   may include (besides itself)
allowed() {
  case "$1" in
  util)  echo "" ;;
  tuple) echo "util" ;;
  json)  echo "util" ;;
  kv)    echo "util" ;;
  store) echo "kv tuple json util" ;;
  index) echo "store kv tuple json util" ;;
  auth)  echo "store kv tuple json util" ;;
  http)  echo "json util" ;;
  api)   echo "index auth http repl store kv tuple json util" ;;
  repl)  echo "store kv tuple json util" ;;
  cli)   echo "api index auth http repl store kv tuple json util" ;;
  *)     echo "?" ;;
  esac
}
cd "${1:-$(dirname "$0")/..}" || exit 2
bad=0
n=0
for f in src/main.c src/*/*.c src/*/*.h src/*/*.cc; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  case "$f" in
  src/main.c) continue ;; # wires every layer
  esac
  layer=$(echo "$f" | cut -d/ -f2)
  ok=$(allowed "$layer")
  if [ "$ok" = "?" ]; then
    echo "layers: $f: folder $layer is not a layer of DESIGN.md"
    bad=1
    continue
  fi
  # quoted includes only: <...> are the system's and the engines'
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    to=$(echo "$inc" | cut -s -d/ -f1)
    if [ -z "$to" ]; then
      echo "layers: $f includes \"$inc\": name the layer (\"dir/file.h\")"
      bad=1
      continue
    fi
    [ "$to" = "$layer" ] && continue
    case " $ok " in
    *" $to "*) ;;
    *) echo "layers: $f ($layer/) includes \"$inc\": $to/ is not below $layer/"; bad=1; continue ;;
    esac
    # api/ uses the replicator's public header only
    if [ "$layer" = api ] && [ "$to" = repl ] && [ "$inc" != repl/repl.h ]; then
      echo "layers: $f includes \"$inc\": api/ may use repl/repl.h only"
      bad=1
    fi
  done
done
[ "$n" -gt 0 ] || { echo "layers: no files under src/: wrong directory?"; exit 2; }
[ "$bad" = 0 ] && echo "layers: $n files, every include goes down"
exit $bad
