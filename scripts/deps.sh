#!/usr/bin/env bash
# deps.sh — install everything divan needs on Debian 12, idempotently.
#
# Debian packages through apt-get (only when one is missing, so a second run
# takes well under a second), then Fauxton (share/fauxton, served at /_utils)
# and the npm test clients of test/node.
# Run as root, or with sudo available. Called by `make` when needed and by
# .ci/run; safe to run by hand at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential pkg-config clang libclang-rt-14-dev
      librocksdb-dev libmicrohttpd-dev libssl-dev zlib1g-dev libzstd-dev
      libcurl4-openssl-dev libicu-dev libmozjs-102-dev curl wrk nodejs npm
      systemd procps   # systemd-analyze verify and /bin/kill: the package test (test/pkg)
      chromium)        # the browser http_fauxton drives (test/node/http/fauxton.test.js)

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

# Fauxton, part of the product: the release build (static files) inside the
# npm package share/fauxton/package-lock.json pins, unpacked where npm would
# put it (share/fauxton/node_modules/fauxton; divan serves its dist/release).
# Only that package's tarball is fetched (npm pack, through npm's own
# registry settings and cache): `npm ci` would also install the 1,700
# packages that build Fauxton (480 MB, minutes), which serving it never
# uses. The tarball must have the lock's integrity.
FX=share/fauxton
if [ -f $FX/package-lock.json ] &&
   { [ ! -f $FX/node_modules/fauxton/dist/release/index.html ] || [ $FX/package-lock.json -nt $FX/node_modules/fauxton ]; }; then
  read -r fx_ver fx_sri < <(node -e 'const p = require("./share/fauxton/package-lock.json").packages["node_modules/fauxton"]; console.log(p.version, p.integrity)')
  echo "deps: fauxton $fx_ver into $FX/node_modules"
  fx_tmp=$(mktemp -d)
  (cd "$fx_tmp" && npm pack --silent --loglevel=error "fauxton@$fx_ver" >/dev/null)
  fx_got=$(node -e 'const c = require("crypto"), fs = require("fs"); console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$fx_tmp/fauxton-$fx_ver.tgz")
  if [ "$fx_got" != "$fx_sri" ]; then
    echo "deps: fauxton-$fx_ver.tgz has integrity $fx_got, $FX/package-lock.json says $fx_sri" >&2
    rm -rf "$fx_tmp"
    exit 1
  fi
  rm -rf $FX/node_modules/fauxton
  mkdir -p $FX/node_modules/fauxton
  tar xzf "$fx_tmp/fauxton-$fx_ver.tgz" -C $FX/node_modules/fauxton --strip-components=1 --no-same-owner
  rm -rf "$fx_tmp"
  touch $FX/node_modules/fauxton
fi

# npm test clients, pinned by test/node/package-lock.json.
if [ -f test/node/package.json ]; then
  if [ ! -d test/node/node_modules ] || [ test/node/package-lock.json -nt test/node/node_modules ]; then
    echo "deps: npm ci in test/node"
    (cd test/node && npm ci --no-audit --no-fund --loglevel=error)
    touch test/node/node_modules
  fi
fi
