#!/bin/sh
# install.sh — lays divan out for a system service: `make install` and
# `make deb` (into its staging tree) both run it; `install.sh uninstall`
# takes it away again, leaving the config and the data.
#
# From the environment (make passes its variables of the same names):
#   BIN          the divan binary to install (required)
#   DESTDIR      staging root, prefixed to every path below (default none)
#   PREFIX       /usr/local
#   BINDIR       $PREFIX/bin
#   UNITDIR      $PREFIX/lib/systemd/system (systemd reads /usr/local/lib too)
#   SYSCONFDIR   /etc: the config is /etc/divan/local.ini whatever the prefix
#   DATAROOTDIR  $PREFIX/share: doc/divan, and divan/www for Fauxton
#   FAUXTON      Fauxton's release build (default share/fauxton/node_modules/
#                fauxton/dist/release in this tree), copied to
#                $DATAROOTDIR/divan/www when it exists
#
#   path                              installed          mode
#   $BINDIR/divan                     always             0755
#   $UNITDIR/divan.service            always, filled in  0644
#   $SYSCONFDIR/divan/local.ini       only if missing    0640
#   $DATAROOTDIR/doc/divan/README.md  always             0644
#   $DATAROOTDIR/divan/www/           if FAUXTON exists  0644 / 0755
#
# It does not create the user nor /var/lib/divan (the package's postinst
# does; after make install, README "Run it as a service" says how).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
SYSCONFDIR=${SYSCONFDIR:-/etc}
DATAROOTDIR=${DATAROOTDIR:-$PREFIX/share}
FAUXTON=${FAUXTON:-$root/share/fauxton/node_modules/fauxton/dist/release}
D=$DESTDIR

if [ "${1:-}" = uninstall ]; then
  rm -f "$D$BINDIR/divan" "$D$UNITDIR/divan.service" "$D$DATAROOTDIR/doc/divan/README.md"
  rm -rf "$D$DATAROOTDIR/divan/www"
  rmdir "$D$DATAROOTDIR/doc/divan" "$D$DATAROOTDIR/divan" 2>/dev/null || true
  echo "install: removed divan; kept $D$SYSCONFDIR/divan and /var/lib/divan (config and data)"
  exit 0
fi

if [ -z "${BIN:-}" ] || [ ! -x "$BIN" ]; then
  echo "install: BIN='${BIN:-}' is not an executable" >&2
  exit 1
fi

install -d "$D$BINDIR" "$D$UNITDIR" "$D$SYSCONFDIR/divan" "$D$DATAROOTDIR/doc/divan"
install -m 0755 "$BIN" "$D$BINDIR/divan"
sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" "$root/packaging/divan.service.in" >"$D$UNITDIR/divan.service.tmp"
chmod 0644 "$D$UNITDIR/divan.service.tmp"
mv "$D$UNITDIR/divan.service.tmp" "$D$UNITDIR/divan.service"
if [ -e "$D$SYSCONFDIR/divan/local.ini" ]; then
  echo "install: kept $D$SYSCONFDIR/divan/local.ini (yours)"
else
  install -m 0640 "$root/packaging/local.ini" "$D$SYSCONFDIR/divan/local.ini"
fi
install -m 0644 "$root/README.md" "$D$DATAROOTDIR/doc/divan/README.md"
if [ -d "$FAUXTON" ]; then
  rm -rf "$D$DATAROOTDIR/divan/www"
  install -d "$D$DATAROOTDIR/divan"
  cp -R "$FAUXTON" "$D$DATAROOTDIR/divan/www"
  chmod -R u=rwX,go=rX "$D$DATAROOTDIR/divan/www"
  echo "install: Fauxton from $FAUXTON in $D$DATAROOTDIR/divan/www"
else
  echo "install: no Fauxton build at $FAUXTON: skipped $D$DATAROOTDIR/divan/www"
fi
echo "install: divan in $D$BINDIR, divan.service in $D$UNITDIR, config $D$SYSCONFDIR/divan/local.ini"
