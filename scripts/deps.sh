#!/usr/bin/env bash
# deps.sh — install everything divan needs on Debian 12, idempotently.
#
# Debian packages through apt-get (only when one is missing, so a second run
# takes well under a second), then the npm test clients of test/node.
# Run as root, or with sudo available. Called by `make` when needed and by
# .ci/run; safe to run by hand at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential pkg-config clang libclang-rt-14-dev
      librocksdb-dev libmicrohttpd-dev libssl-dev zlib1g-dev libzstd-dev
      libcurl4-openssl-dev libicu-dev libmozjs-102-dev curl wrk nodejs npm
      systemd procps)  # systemd-analyze verify and /bin/kill: the package test (test/pkg)

missing=()
for p in "${PKGS[@]}"; do
  # nodejs/npm may come from elsewhere (a newer node on the image): accept the commands.
  case "$p" in
    nodejs) command -v node >/dev/null && continue ;;
    npm) command -v npm >/dev/null && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm test clients, pinned by test/node/package-lock.json.
if [ -f test/node/package.json ]; then
  if [ ! -d test/node/node_modules ] || [ test/node/package-lock.json -nt test/node/node_modules ]; then
    echo "deps: npm ci in test/node"
    (cd test/node && npm ci --no-audit --no-fund --loglevel=error)
    touch test/node/node_modules
  fi
fi
