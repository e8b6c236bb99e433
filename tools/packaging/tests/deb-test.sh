#!/usr/bin/env bash
# The Debian packages make deb built: what each holds (dpkg-deb), their
# control fields, then the packages installed with dpkg -i into a clean root
# (an overlay whose lower layer is the host's / and whose upper layer is an
# empty tmpfs, in a mount namespace of its own) and used there: versions,
# hpcmon-lib, a program built against libhpclb-dev through pkg-config, the
# systemd unit checked by systemd-analyze verify, the Slurm plugin, purge.
# The host's dpkg database and files are checked to be untouched. Then
# build-deb.sh's refusals. TAP output.
# usage: deb-test.sh TOP DEB_DIR   (root: mount, chroot)
set -u
top=${1:?usage: deb-test.sh TOP DEB_DIR}
debs=${2:?usage: deb-test.sh TOP DEB_DIR}
# shellcheck source=../../../tests/tap.sh
. "$top/tests/tap.sh"
work=$(mktemp -d /tmp/hpcsched-deb.XXXXXX)
trap tap_cleanup EXIT

deb_of() { compgen -G "$debs/$1_*.deb" | head -1; }
contents() { dpkg-deb -c "$1" | awk '{ p = $6; sub(/^\./, "", p); print p ($7 == "->" ? " -> " $8 : "") }'; }
field() { dpkg-deb -f "$1" "$2"; }

# 1. The packages and their contents.
declare -A pkg
for p in hpcsched-tools libhpcmon libhpclb libhpclb-dev slurm-spank-hpcsched; do
	pkg[$p]=$(deb_of "$p")
done
for p in hpcsched-tools libhpcmon libhpclb libhpclb-dev; do
	check "make deb built $p (${pkg[$p]##*/})" test -n "${pkg[$p]}"
done
slurm=0
if [ -n "${pkg[slurm-spank-hpcsched]}" ]; then
	slurm=1
	ok "make deb built slurm-spank-hpcsched (${pkg[slurm-spank-hpcsched]##*/})"
elif [ -f "$top/tools/slurm/CMakeLists.txt" ]; then
	nok "make deb built slurm-spank-hpcsched" "tools/slurm exists but no package was built"
else
	skip "make deb built slurm-spank-hpcsched" "the tree has no tools/slurm"
fi
check "the repository's top has no debian/ directory" test ! -e "$top/debian"

ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has() { # has PACKAGE PATH...: every PATH in the package
	local c miss=
	c=$(contents "${pkg[$1]}")
	shift
	for f in "$@"; do grep -qxF -- "$f" <<<"$c" || miss="$miss $f"; done
	[ -z "$miss" ] || { echo "#   missing:$miss"; return 1; }
}
hasnt() { # hasnt PACKAGE REGEX: no path matches
	local c
	c=$(contents "${pkg[$1]}")
	! grep -qE -- "$2" <<<"$c" || { grep -E -- "$2" <<<"$c" | sed 's/^/#   unexpected: /'; return 1; }
}
if [ -n "${pkg[hpcsched-tools]}" ]; then
	check "hpcsched-tools: hpcctl, hpcd, report.py, man pages, hpcd.service" has hpcsched-tools \
		/usr/bin/hpcctl /usr/sbin/hpcd /usr/share/hpcsched/report.py \
		/usr/share/man/man1/hpcctl.1.gz /usr/share/man/man8/hpcd.8.gz /lib/systemd/system/hpcd.service
	check "hpcsched-tools: no library, header or test program" hasnt hpcsched-tools \
		'libhpc|/include/|hpcd-tests|hpcd-spin|hpcsim|metbench|scx_hpc'
	dep=$(field "${pkg[hpcsched-tools]}" Depends)
	check "hpcsched-tools Depends: the libraries hpcd links (libbpf1, libhwloc15, libnuma1) ($dep)" \
		bash -c "grep -q libbpf1 <<<'$dep' && grep -q libhwloc15 <<<'$dep' && grep -q libnuma1 <<<'$dep'"
fi
if [ -n "${pkg[libhpcmon]}" ]; then
	check "libhpcmon: libhpcmon.so (Open MPI), its -openmpi link, hpcmon-lib" has libhpcmon \
		/usr/lib/hpcsched/libhpcmon.so "/usr/lib/hpcsched/libhpcmon-openmpi.so -> libhpcmon.so" \
		/usr/bin/hpcmon-lib
	if contents "${pkg[libhpcmon]}" | grep -qx /usr/lib/hpcsched/libhpcmon-mpich.so; then
		ok "libhpcmon: libhpcmon-mpich.so (MPICH)"
		sug=$(field "${pkg[libhpcmon]}" Suggests) dep=$(field "${pkg[libhpcmon]}" Depends)
		check "libhpcmon: MPICH's runtime suggested, not required ($sug)" bash -c \
			"grep -q libmpich12 <<<'$sug' && ! grep -q libmpich <<<'$dep'"
	else
		skip "libhpcmon: libhpcmon-mpich.so (MPICH)" "built with pkg.hpcsched.nompich"
	fi
	dep=$(field "${pkg[libhpcmon]}" Depends)
	check "libhpcmon Depends: Open MPI's libopenmpi3 ($dep)" grep -q libopenmpi3 <<<"$dep"
	check "libhpcmon: no hpcd, hpcctl or header" hasnt libhpcmon 'bin/hpcctl|sbin/hpcd|/include/'
fi
if [ -n "${pkg[libhpclb]}" ]; then
	check "libhpclb: libhpclb.so.0 and .so.0.1 in /usr/lib/$ma" has libhpclb \
		"/usr/lib/$ma/libhpclb.so.0 -> libhpclb.so.0.1" "/usr/lib/$ma/libhpclb.so.0.1"
	check "libhpclb: no header, .pc or .so link (libhpclb-dev's)" hasnt libhpclb '/include/|\.pc$|libhpclb\.so( |$)'
fi
if [ -n "${pkg[libhpclb-dev]}" ]; then
	check "libhpclb-dev: the three headers, libhpclb.so, hpclb.pc" has libhpclb-dev \
		/usr/include/hpclb/hpclb.h /usr/include/hpclb/hpclb.hpp /usr/include/hpclb/hpclb_mpi.h \
		"/usr/lib/$ma/libhpclb.so -> libhpclb.so.0" "/usr/lib/$ma/pkgconfig/hpclb.pc"
	v=$(field "${pkg[libhpclb]}" Version)
	dep=$(field "${pkg[libhpclb-dev]}" Depends)
	check "libhpclb-dev Depends: libhpclb (= $v) and the .pc's requirements ($dep)" bash -c \
		"grep -qF 'libhpclb (= $v)' <<<'$dep' && grep -q libopenmpi-dev <<<'$dep' && grep -q libpugixml-dev <<<'$dep' && grep -q libhwloc-dev <<<'$dep'"
	dpkg-deb -x "${pkg[libhpclb-dev]}" "$work/dev"
	check "hpclb.pc: prefix /usr, libdir /usr/lib/$ma" bash -c \
		"grep -qx 'prefix=/usr' '$work/dev/usr/lib/$ma/pkgconfig/hpclb.pc' && grep -qx 'libdir=\${prefix}/lib/$ma' '$work/dev/usr/lib/$ma/pkgconfig/hpclb.pc'"
fi
if [ "$slurm" -eq 1 ]; then
	check "slurm-spank-hpcsched: hpcsched.so in /usr/lib/$ma/slurm, the plugstack.conf.d example" \
		has slurm-spank-hpcsched "/usr/lib/$ma/slurm/hpcsched.so" /usr/share/hpcsched/slurm/hpcsched.conf
fi
if [ -n "${pkg[hpcsched-tools]}" ]; then
	dpkg-deb -x "${pkg[hpcsched-tools]}" "$work/tools"
	unit=$work/tools/lib/systemd/system/hpcd.service
	check "hpcd.service: ExecStart=/usr/sbin/hpcd, the cgroup tree and /run writable" bash -c \
		"grep -qx 'ExecStart=/usr/sbin/hpcd' '$unit' && grep -qx 'ProtectSystem=strict' '$unit' && grep -qx 'ReadWritePaths=/sys/fs/cgroup /run' '$unit'"
	check "hpcd.service: not ProtectControlGroups, ProtectKernelTunables, ProtectProc or KillMode=mixed" \
		bash -c "! grep -qE '^(ProtectControlGroups|ProtectKernelTunables|ProtectProc|ProcSubset|PrivateUsers)=|^KillMode=mixed' '$unit'"
	check "hpcsched-tools: the maintainer scripts never start or restart hpcd" bash -c \
		"! dpkg-deb -I '${pkg[hpcsched-tools]}' postinst 2>/dev/null | grep -q 'deb-systemd-invoke'"
	check "hardened ELF files: hpcd and hpcctl are PIE with BIND_NOW (dpkg-buildflags)" bash -c "
		for f in $work/tools/usr/sbin/hpcd $work/tools/usr/bin/hpcctl; do
			readelf -h \$f | grep -q 'DYN' && readelf -d \$f | grep -q 'BIND_NOW' || exit 1
		done"
fi

# 2. Installed into a clean root. Everything below runs in a mount namespace
# of its own: its mounts go with it, whatever happens.
if [ "$(id -u)" -ne 0 ]; then
	nok "install into a clean root" "needs root (mount, chroot)"
	tap_end
	exit
fi
status_sum() { sha256sum /var/lib/dpkg/status | cut -d' ' -f1; }
before=$(status_sum)
host_had=$([ -e /usr/sbin/hpcd ] && echo yes || echo no)
mkdir -p "$work/debs"
for p in "${!pkg[@]}"; do [ -z "${pkg[$p]}" ] || cp "${pkg[$p]}" "$work/debs/"; done
# Test programs built on the host: a plain MPI program for each MPI.
mpicc.openmpi -o "$work/debs/tiny-openmpi" "$top/tools/hpcmon/tests/tiny_mpi.c" 2>"$work/cc.log"
check "the Open MPI test program builds ($(head -c 300 "$work/cc.log"))" test -x "$work/debs/tiny-openmpi"
command -v mpicc.mpich >/dev/null &&
	mpicc.mpich -o "$work/debs/tiny-mpich" "$top/tools/hpcmon/tests/tiny_mpi.c" 2>>"$work/cc.log"
cp "$top/tools/hpclb/apps/example.c" "$work/debs/"

cat >"$work/inroot.sh" <<'EOS'
# Runs in the chroot: one "RESULT name rc output" line per check.
r() {
	local n=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	echo "RESULT $n $rc $(tr '\n' ' ' <<<"$out" | cut -c1-300 | sed 's/ *$//')"
}
cd /debs
r dpkg-i dpkg -i $(ls *.deb)
for p in $(ls *.deb | sed 's/_.*//'); do
	r "status-$p" sh -c "dpkg-query -W -f='\${Status}' $p | grep -qx 'install ok installed' && echo $p installed"
done
r hpcctl-version hpcctl --version
r hpcd-version /usr/sbin/hpcd --version
r hpcd-help sh -c '/usr/sbin/hpcd --help >/tmp/help && grep -o -- --exit-when-idle /tmp/help'
r hpcmon-lib-openmpi hpcmon-lib /debs/tiny-openmpi
[ -e /debs/tiny-mpich ] && r hpcmon-lib-mpich hpcmon-lib /debs/tiny-mpich
r hpcmon-lib-bad hpcmon-lib /bin/true
# The installed hpcctl starts the installed hpcd (../sbin), and an Open MPI
# program runs under it with the installed monitor preloaded.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HOME=/tmp
r hpcctl-hpcd hpcctl run -- sh -c 'readlink /proc/$(hpcctl status --json |
	python3 -c "import json,sys; print(json.load(sys.stdin)[\"pid\"])")/exe'
r mpirun bash -o pipefail -c 'cd /tmp && hpcctl run -- mpirun.openmpi --oversubscribe --bind-to none -np 2 \
	-x LD_PRELOAD=$(hpcmon-lib /debs/tiny-openmpi) /debs/tiny-openmpi 10 2000 2>&1 |
	grep -E "^tiny_mpi:|^hpcmon: LIP"'
r pkgconfig pkg-config --cflags --libs hpclb
r hpclb-example sh -c 'cc -o /tmp/ex /debs/example.c $(pkg-config --cflags --libs hpclb) && ldd /tmp/ex | grep libhpclb'
r verify systemd-analyze verify /lib/systemd/system/hpcd.service
r units sh -c '! ls /etc/systemd/system/*.wants/hpcd.service 2>/dev/null &&
	echo "no .wants link, $(systemctl is-enabled hpcd.service 2>&1)"'
r plugin sh -c 'ls /usr/lib/*/slurm/hpcsched.so && nm -D --defined-only /usr/lib/*/slurm/hpcsched.so | grep -w slurm_spank_init'
r purge dpkg --purge $(ls *.deb | sed 's/_.*//' | tac)
r purged sh -c '! ls /usr/sbin/hpcd /usr/bin/hpcctl /usr/lib/hpcsched /usr/include/hpclb 2>/dev/null'
r end true
EOS

unshare --mount --propagation private bash -s "$work" >"$work/root.log" 2>&1 <<'EOS'
set -e
w=$1
mkdir "$w/layer"
mount -t tmpfs -o mode=0755 tmpfs "$w/layer"
mkdir "$w/layer/upper" "$w/layer/work" "$w/layer/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/layer/upper,workdir=$w/layer/work" "$w/layer/root"
root=$w/layer/root
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"
mkdir "$root/debs" && cp -a "$w/debs/." "$root/debs/"
cp "$w/inroot.sh" "$root/debs/"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 bash /debs/inroot.sh </dev/null
EOS
rc=$?
check "an overlay of / with an empty upper layer, chroot into it, every step run (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -q '^RESULT end 0' '$work/root.log'"
res() { sed -n "s/^RESULT $1 //p" "$work/root.log"; }
rcof() { res "$1" | cut -d' ' -f1; }
outof() { res "$1" | cut -d' ' -f2-; }
expect() { # expect NAME WANT_RC 'TEST on $o' DESCRIPTION
	local o rc
	rc=$(rcof "$1") o=$(outof "$1")
	if [ "$rc" = "$2" ] && eval "$3"; then ok "$4 ($o)"; else nok "$4" "exit ${rc:-none}, output: $o"; fi
}
expect dpkg-i 0 true "clean root: dpkg -i of every package, dependencies from the host's dpkg database"
for f in "$work"/debs/*.deb; do
	p=${f##*/} p=${p%%_*}
	expect "status-$p" 0 true "clean root: $p installed"
done
# shellcheck disable=SC2016 # the tests are evaluated with $o set
expect hpcctl-version 0 '[[ $o == "hpcctl (hpcsched) "* ]]' "clean root: hpcctl --version"
expect hpcd-version 0 '[[ $o == "hpcd (hpcsched) "* ]]' "clean root: /usr/sbin/hpcd --version"
expect hpcd-help 0 '[ "$o" = --exit-when-idle ]' "clean root: hpcd --help"
expect hpcmon-lib-openmpi 0 '[ "$o" = /usr/lib/hpcsched/libhpcmon.so ]' \
	"clean root: hpcmon-lib of an Open MPI program: the installed libhpcmon.so"
if [ -e "$work/debs/tiny-mpich" ] && [ -n "$(res hpcmon-lib-mpich)" ]; then
	if contents "${pkg[libhpcmon]}" | grep -qx /usr/lib/hpcsched/libhpcmon-mpich.so; then
		expect hpcmon-lib-mpich 0 '[ "$o" = /usr/lib/hpcsched/libhpcmon-mpich.so ]' \
			"clean root: hpcmon-lib of an MPICH program: the installed libhpcmon-mpich.so"
	else
		expect hpcmon-lib-mpich 1 '[[ $o == *"is not built"* ]]' \
			"clean root: hpcmon-lib of an MPICH program without the MPICH library: says so"
	fi
fi
expect hpcmon-lib-bad 2 '[[ $o == *"uses neither Open MPI"* ]]' "clean root: hpcmon-lib of a non-MPI program: refused"
expect hpcctl-hpcd 0 '[ "$o" = /usr/sbin/hpcd ]' "clean root: hpcctl run starts the installed /usr/sbin/hpcd"
expect mpirun 0 '[[ $o == *"tiny_mpi: 2 ranks, 10 iterations"*"hpcmon: LIP"* || $o == *"hpcmon: LIP"*"tiny_mpi: 2 ranks, 10 iterations"* ]]' \
	"clean root: hpcctl run -- mpirun -x LD_PRELOAD=\$(hpcmon-lib ./app) ./app: the installed monitor reports"
expect pkgconfig 0 '[[ $o == *-lhpclb* ]]' "clean root: pkg-config --cflags --libs hpclb"
expect hpclb-example 0 '[[ $o =~ libhpclb\.so\.0\ =\>\ (/usr)?/lib/$ma/libhpclb\.so\.0 ]]' \
	"clean root: the C example built with pkg-config hpclb, linked to the installed libhpclb"
expect verify 0 true "clean root: systemd-analyze verify hpcd.service"
expect units 0 '[[ $o == *disabled ]]' "clean root: hpcd.service installed, not enabled"
if [ "$slurm" -eq 1 ]; then
	expect plugin 0 '[[ $o == *"/slurm/hpcsched.so"* ]]' "clean root: the Slurm plugin installed, slurm_spank_init defined"
fi
expect purge 0 true "clean root: dpkg --purge of every package"
expect purged 0 true "clean root: no file left after the purge"

check "host: the dpkg database untouched" test "$(status_sum)" = "$before"
dpkg-query -W -f='${Status}\n' hpcsched-tools >"$work/q" 2>&1
check "host: dpkg -l hpcsched-tools: not installed ($(head -1 "$work/q"))" \
	bash -c "! grep -q 'install ok installed' '$work/q'"
check "host: /usr/sbin/hpcd as before ($host_had)" test "$([ -e /usr/sbin/hpcd ] && echo yes || echo no)" = "$host_had"
check "host: no mount left behind" bash -c "! grep -qF '$work' /proc/self/mountinfo"
if [ "$failed" -gt 0 ]; then sed 's/^/#   root: /' "$work/root.log"; fi

# 3. Bad input: clear errors, nothing built.
b=$top/tools/packaging/build-deb.sh
"$b" >"$work/e" 2>&1; rc=$?
check "build-deb.sh without arguments: exit 2, usage" bash -c "[ $rc -eq 2 ] && grep -q 'usage: build-deb.sh TOP OUT' '$work/e'"
"$b" "$work/nowhere" "$work/o1" >"$work/e" 2>&1; rc=$?
check "build-deb.sh on a missing tree: exit 2, named" bash -c "[ $rc -eq 2 ] && grep -q 'nowhere: no such directory' '$work/e' && [ ! -e '$work/o1' ]"
mkdir -p "$work/fake/tools/packaging/debian" && touch "$work/fake/CMakeLists.txt"
"$b" "$work/fake" "$work/o2" >"$work/e" 2>&1; rc=$?
check "build-deb.sh on a tree outside git: exit 2, says why" bash -c "[ $rc -eq 2 ] && grep -q 'not a git work tree' '$work/e'"
"$b" "$work" "$work/o3" >"$work/e" 2>&1; rc=$?
check "build-deb.sh on another directory: exit 2, not the hpcsched tree" bash -c "[ $rc -eq 2 ] && grep -q 'not the hpcsched tree' '$work/e'"
git -C "$work/fake" init -q && mkdir "$work/fake/debian"
"$b" "$work/fake" "$work/o4" >"$work/e" 2>&1; rc=$?
check "build-deb.sh with a debian/ at the top: refused" bash -c "[ $rc -eq 2 ] && grep -q 'debian exists' '$work/e'"

tap_end
