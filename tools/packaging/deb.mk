# Debian packages of hpcsched (tools/packaging): build target and test suite.
# Included from the top-level Makefile.
#
#   make deb         hpcsched-tools, libhpcmon, libhpclb, libhpclb-dev and
#                    slurm-spank-hpcsched in build/deb/ (dpkg-buildpackage -b
#                    from a copy of the tree in build/deb/src; no network)
#   make check-deb   the deb suite: the packages' contents, then installed in
#                    an overlay of / (root): the host's dpkg and files untouched

DEB_OUT := $(BUILD)/deb

CHECK_SUITES += deb

.PHONY: deb check-deb

# userspace and mpich: the Build-Depends of both libhpcmon builds; slurm:
# spank.h for the plugin's package.
deb: deps-userspace deps-mpich deps-slurm deps-deb
	@nice -n 19 tools/packaging/build-deb.sh $(TOP) $(DEB_OUT)

check-deb: deb
	@tests/run-suite deb -- nice -n 19 tools/packaging/tests/deb-test.sh $(TOP) $(DEB_OUT)
