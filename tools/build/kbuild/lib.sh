# Common settings for tools/build/kbuild/* scripts (sourced, not executed).
# Paths are derived from this file's location, never hard-coded.

KB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$KB_DIR/../../.." && pwd)
# KARCH picks the test kernel: x86_64 (default; build-kernel/) or ppc64le
# (the POWER backend, cross-built; build-kernel/ppc64le/, its own tree).
KARCH=${KARCH:-x86_64}
case $KARCH in
x86_64)
	BK=${BK:-$TOP/build-kernel}          # all kernel build state lives here
	KMAKE_ARCH=()
	KCC=gcc ;;
ppc64le)
	BK=${BK:-$TOP/build-kernel/ppc64le}
	KMAKE_ARCH=(ARCH=powerpc CROSS_COMPILE=powerpc64le-linux-gnu-)
	KCC=powerpc64le-linux-gnu-gcc ;;
*)
	printf 'kbuild: ERROR: KARCH=%s: not x86_64 or ppc64le\n' "$KARCH" >&2
	exit 2 ;;
esac
TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
PATCHDIR=$TOP/patches
# Fixes to 6.12.y itself that the series does not need to be reviewed with
# (Cc: stable): a series of their own, applied first.
STABLEDIR=$PATCHDIR/stable
MIRROR=$TOP/kernel                           # repo kernel/ mirrors tree paths
# The policy core: the one source of the kernel class, scx_hpc and the tools.
# Its files are kernel/sched/<name> in the kernel tree (mirror_path).
CORE=$MIRROR/hpc-core
FRAGMENT=${KCONFIG_FRAGMENT:-$TOP/tests/guest/configs/$KARCH.config}
JOBS=${JOBS:-$(nproc)}

# Fixed identity for the commits we create, so that the pristine commit (and
# the series applied with --committer-date-is-author-date) hash the same in
# every clone.
KB_GIT=(git -c user.name=hpcsched-kbuild -c user.email=kbuild@hpcsched.invalid
        -c advice.detachedHead=false -c core.autocrlf=false -c gc.auto=0)

# Reproducible build identity and ccache settings that give cache hits from a
# fresh clone at another path (in-tree build => relative paths on the command
# line; NOHASHDIR => the cwd baked into DWARF comp_dir is not hashed).
export KBUILD_BUILD_TIMESTAMP=${KBUILD_BUILD_TIMESTAMP:-Thu Jan  1 00:00:00 UTC 2026}
export KBUILD_BUILD_USER=${KBUILD_BUILD_USER:-hpcsched}
export KBUILD_BUILD_HOST=${KBUILD_BUILD_HOST:-kbuild}
export KBUILD_BUILD_VERSION=${KBUILD_BUILD_VERSION:-1}
export LOCALVERSION=${LOCALVERSION-}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-include_file_mtime,include_file_ctime,time_macros,locale}

log()  { printf 'kbuild: %s\n' "$*" >&2; }
die()  { printf 'kbuild: ERROR: %s\n' "$*" >&2; exit 1; }

# The patches in the order they apply: patches/stable/ (fixes to 6.12.y),
# then patches/ (the SCHED_HPC series).
series_patches() {
	local f
	for f in "$STABLEDIR"/*.patch "$PATCHDIR"/*.patch; do
		[ -e "$f" ] && printf '%s\n' "$f"
	done
	return 0
}

# Hash identifying the patch series (names + contents); "none" when empty.
patches_hash() {
	local f found=0
	{
		while IFS= read -r f; do
			found=1
			printf '%s\n' "${f#"$PATCHDIR"/}"
			cat "$f"
		done < <(series_patches)
		[ "$found" = 1 ] || printf 'none\n'
	} | sha256sum | cut -c1-16
}

# Files of the repo kernel/ mirror, as their paths in the kernel tree: the
# mirror's own paths, and kernel/sched/<name> for the core's files.
mirror_files() {
	[ -d "$MIRROR" ] || return 0
	{
		(cd "$MIRROR" && find . -path ./hpc-core -prune -o -type f ! -name '.*' -printf '%P\n')
		[ -d "$CORE" ] && (cd "$CORE" && find . -maxdepth 1 -type f ! -name '.*' -printf 'kernel/sched/%P\n')
	} | LC_ALL=C sort
}

# The repo's file for tree path $1: the core's for kernel/sched/<a core file>.
mirror_path() {
	case $1 in
	kernel/sched/*) [ -e "$CORE/${1#kernel/sched/}" ] && { echo "$CORE/${1#kernel/sched/}"; return; } ;;
	esac
	echo "$MIRROR/$1"
}

# How a message names the repo's file for tree path $1.
mirror_name() {
	local p; p=$(mirror_path "$1")
	echo "${p#"$TOP"/}"
}
