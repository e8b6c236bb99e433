# Repository-wide checks. Included from the top-level Makefile.
#
#   make check-standalone   the repository stands alone: no file names a path
#                           outside it; the paper's tables (Documentation/data)
#                           match their transcription as printed
#   make check-buildtypes   the user-space tree builds as Release and with
#                           Debian's default flags (BUILD_TYPES= picks others:
#                           Release Debug RelWithDebInfo debian)

BUILD_TYPES ?= Release debian

CHECK_SUITES += standalone buildtypes

.PHONY: check-standalone check-buildtypes

check-standalone:
	@tests/run-suite standalone -- tests/data/run

check-buildtypes: deps-userspace
	@tests/run-suite buildtypes -- tests/buildtypes/run $(BUILD) $(BUILD_TYPES)
