#!/bin/sh
# mkdeb.sh BIN OUTDIR — builds OUTDIR/divan_VERSION_ARCH.deb (make deb)
# from the binary BIN, with dpkg-deb alone: no debhelper, no root, no
# fakeroot (--root-owner-group makes every file root's).
#
#   version       DIVAN_VERSION in src/main.c
#   Architecture  dpkg --print-architecture
#   Depends       dpkg-shlibdeps on the binary (the packages of the
#                 libraries it links), and procps for the unit's /bin/kill
#   files         packaging/install.sh with PREFIX=/usr, the binary's
#                 debug info stripped
#   control       packaging/control.in filled in; conffiles: local.ini;
#                 packaging/postinst, prerm, postrm
# The staging tree is OUTDIR/root; the path of the .deb is the last line
# of the output.
set -eu

[ $# -eq 2 ] || { echo "usage: mkdeb.sh BIN OUTDIR" >&2; exit 2; }
bin=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
command -v dpkg-shlibdeps >/dev/null || { echo "mkdeb: dpkg-shlibdeps missing (apt-get install dpkg-dev)" >&2; exit 1; }

version=$(sed -n 's/^#define DIVAN_VERSION "\(.*\)"$/\1/p' "$root/src/main.c")
[ -n "$version" ] || { echo "mkdeb: no DIVAN_VERSION in src/main.c" >&2; exit 1; }
arch=$(dpkg --print-architecture)
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/root
rm -rf "$stage" "$out/shlibs"
mkdir -p "$stage/DEBIAN" "$out/shlibs/debian"

BIN=$bin DESTDIR=$stage PREFIX=/usr SYSCONFDIR=/etc FAUXTON=${FAUXTON:-} sh "$root/packaging/install.sh"
objcopy --strip-debug "$stage/usr/bin/divan"

# dpkg-shlibdeps wants a debian/control of the source package to read
printf 'Source: divan\n\nPackage: divan\nArchitecture: any\n' >"$out/shlibs/debian/control"
shlibs=$(cd "$out/shlibs" && dpkg-shlibdeps -O -e"$stage/usr/bin/divan" 2>"$out/shlibs/warnings")
depends=${shlibs#shlibs:Depends=}
if [ -z "$depends" ] || [ "$depends" = "$shlibs" ]; then
  cat "$out/shlibs/warnings" >&2
  echo "mkdeb: dpkg-shlibdeps gave no Depends" >&2
  exit 1
fi
depends="$depends, procps"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
  "$root/packaging/control.in" >"$stage/DEBIAN/control"
echo /etc/divan/local.ini >"$stage/DEBIAN/conffiles"
for s in postinst prerm postrm; do install -m 0755 "$root/packaging/$s" "$stage/DEBIAN/$s"; done
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles"

deb=$out/divan_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
