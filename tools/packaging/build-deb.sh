#!/usr/bin/env bash
# Build hpcsched's Debian binary packages from the working tree (make deb).
#
# The repository keeps no debian/ at its top: the tree's files (tracked, and
# untracked ones git does not ignore) are copied to OUT/src with
# tools/packaging/debian as OUT/src/debian, a changelog is written for this
# commit, and dpkg-buildpackage -b -us -uc builds there; the .deb files land
# in OUT (with the .buildinfo and .changes). No network is used.
#
# usage: build-deb.sh TOP OUT
#   TOP  the repository (a git work tree with tools/packaging/debian)
#   OUT  the output directory (e.g. build/deb), emptied of earlier packages
# Environment: JOBS (parallel jobs, default nproc), DEB_PROFILES (extra build
# profiles, comma-separated: pkg.hpcsched.nompich, pkg.hpcsched.noslurm),
# CCACHE=0 (compile without ccache).
set -euo pipefail
die() {
	echo "build-deb: $*" >&2
	exit 2
}
[ $# -eq 2 ] || die "usage: build-deb.sh TOP OUT"
top=$1 out=$2
[ -d "$top" ] || die "$top: no such directory"
top=$(cd "$top" && pwd)
[ -f "$top/CMakeLists.txt" ] && [ -d "$top/tools/packaging/debian" ] ||
	die "$top: not the hpcsched tree (no CMakeLists.txt or tools/packaging/debian)"
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || die "$top: not a git work tree (the file list and version come from git)"
[ ! -e "$top/debian" ] || die "$top/debian exists: the packaging lives in tools/packaging/debian only"
for t in dpkg-buildpackage dh git; do
	command -v "$t" >/dev/null || die "$t not found (make deps-deb installs the deb group)"
done
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac
[ "$out" != / ] && [ "$out" != "$top" ] || die "OUT must be a directory of its own, not $out"
mkdir -p "$out" || die "$out: cannot create"
src=$out/src

# The working tree's files, without build output (git ignores it).
rm -rf "$src" "$out"/*.deb "$out"/*.ddeb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	grep -zv '^debian/' | cpio -0 -pdm --quiet "$src") || die "copying the tree to $src failed"
cp -a "$top/tools/packaging/debian" "$src/debian"

# Version: 0.1~git<commit time>.<commit>, +dirty when the tree differs from it.
hash=$(git -C "$top" rev-parse --short HEAD)
when=$(git -C "$top" log -1 --format=%ct HEAD)
dirty=
git -C "$top" diff --quiet HEAD -- 2>/dev/null || dirty=+dirty
version=0.1~git$(date -u -d "@$when" +%Y%m%d%H%M%S).$hash$dirty
maint=$(sed -n 's/^Maintainer: //p' "$src/debian/control")
cat >"$src/debian/changelog" <<EOF
hpcsched ($version) unstable; urgency=medium

  * Built from commit $hash of the hpcsched tree by make deb.

 -- $maint  $(date -u -R -d "@$when")
EOF

# The Slurm plugin's package only when its CMake directory is in the build.
profiles=${DEB_PROFILES:-}
if [ ! -f "$src/tools/slurm/CMakeLists.txt" ] ||
	! grep -qE '^[[:space:]]*add_subdirectory\((tools/slurm)' "$src/CMakeLists.txt"; then
	echo "build-deb: no tools/slurm in the CMake build: no slurm-spank-hpcsched package"
	profiles=${profiles:+$profiles,}pkg.hpcsched.noslurm
fi

# Repeated builds through the caller's ccache (CCACHE=0: without).
if [ "${CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
	HPCSCHED_CCACHE_DIR=$(ccache -k cache_dir) && export HPCSCHED_CCACHE_DIR
fi

echo "build-deb: hpcsched $version in $src${profiles:+ (profiles $profiles)}"
cd "$src"
dpkg-buildpackage -b -us -uc -j"${JOBS:-$(nproc)}" ${profiles:+-P"$profiles"} ||
	die "dpkg-buildpackage failed (log above)"
echo "build-deb: packages in $out:"
ls -1 "$out"/*.deb
