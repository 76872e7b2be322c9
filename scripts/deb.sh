#!/bin/sh
# `make deb`: builds the Debian package (debian/) out of the tree and checks
# it with lintian.
#
#   usage: scripts/deb.sh OUTDIR
#
# The sources (the files git knows, or the tree without its build
# directories when it is no git checkout) are copied to OUTDIR/src/taskfs,
# where `dpkg-buildpackage -us -uc -b` builds them, so that the tree's own
# build/ and debian/ stay as they are. The .deb, .buildinfo and .changes
# end up in OUTDIR; lintian's report in OUTDIR/lintian.txt. Fails when the
# build fails or lintian reports an error. Needs debhelper, dpkg-dev,
# fakeroot and lintian (apt-get install debhelper dpkg-dev fakeroot lintian).
set -eu
out=${1:?output directory}
top=$(pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src/taskfs
rm -rf "$out/src"
mkdir -p "$src"
rm -f "$out"/taskfs_*.deb "$out"/taskfs-dbgsym_*.deb "$out"/taskfs_*.buildinfo "$out"/taskfs_*.changes

if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked and new files, as they are in the tree now (a file deleted but
  # not yet committed is skipped).
  (cd "$top" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | (cd "$src" && tar -xf -)
else
  (cd "$top" && tar -cf - --exclude='./build' --exclude='./build-*' --exclude='./.git' \
    --exclude='node_modules' .) | (cd "$src" && tar -xf -)
fi

jobs=$(nproc 2>/dev/null || echo 2)
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
  tail -40 "$out/build.log"
  echo "deb.sh: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
mv "$out"/src/taskfs_*.deb "$out"/src/taskfs_*.buildinfo "$out"/src/taskfs_*.changes "$out"/
mv "$out"/src/taskfs-dbgsym_*.deb "$out"/ 2>/dev/null || true
deb=$(ls "$out"/taskfs_*.deb)
echo "deb.sh: built $deb"

# lintian: errors fail the build; warnings are explained in
# debian/README.source.
if lintian --fail-on error --info "$out"/taskfs_*.changes >"$out/lintian.txt" 2>&1; then
  echo "deb.sh: lintian: no errors ($(grep -c '^W:' "$out/lintian.txt" || true) warnings, see $out/lintian.txt)"
else
  cat "$out/lintian.txt"
  echo "deb.sh: lintian reported errors" >&2
  exit 1
fi
