# Which MPI implementation the MPI programs and libhpcmon are built against.
#
#   HPCSCHED_MPI=openmpi (default)   /usr/bin/mpicc.openmpi, mpicxx.openmpi
#   HPCSCHED_MPI=mpich               /usr/bin/mpicc.mpich, mpicxx.mpich (build/mpich)
#
# The implementation's own compiler wrappers are named, never Debian's 'mpi'
# alternative (/usr/bin/mpicc), so installing a second MPI or running
# update-alternatives does not change what a fresh build links. The first
# include (bench/metbench, the first MPI directory) fixes MPI_C_COMPILER in the
# cache, so every later find_package(MPI) of the tree finds the same MPI.
# HPCSCHED_MPI_CHECK then compiles against the found mpi.h and fails the
# configure if it is another implementation (e.g. an old cache).
# Included by each MPI directory: find_package(MPI)'s imported targets are per directory.

set(HPCSCHED_MPI openmpi CACHE STRING "MPI implementation to build against: openmpi or mpich")
set_property(CACHE HPCSCHED_MPI PROPERTY STRINGS openmpi mpich)
if(HPCSCHED_MPI STREQUAL "openmpi")
	set(_hpc_mpi_macro OPEN_MPI)
elseif(HPCSCHED_MPI STREQUAL "mpich")
	set(_hpc_mpi_macro MPICH_VERSION)
else()
	message(FATAL_ERROR "HPCSCHED_MPI='${HPCSCHED_MPI}': must be openmpi or mpich")
endif()

foreach(_lang C CXX)
	if(_lang STREQUAL "C")
		set(_wrap mpicc)
	else()
		set(_wrap mpicxx)
	endif()
	if(NOT MPI_${_lang}_COMPILER)
		find_program(_hpc_mpi_${_lang} NAMES ${_wrap}.${HPCSCHED_MPI} NO_CACHE)
		if(NOT _hpc_mpi_${_lang})
			message(FATAL_ERROR "HPCSCHED_MPI=${HPCSCHED_MPI}: ${_wrap}.${HPCSCHED_MPI} "
				"not found (Debian: 'make deps' installs it)")
		endif()
		set(MPI_${_lang}_COMPILER ${_hpc_mpi_${_lang}} CACHE FILEPATH
			"MPI ${_lang} compiler wrapper (${HPCSCHED_MPI})")
	endif()
endforeach()

find_package(MPI REQUIRED COMPONENTS C)

include(CheckCSourceCompiles)
# The cached answer is per include path: a changed MPI is checked again.
string(MD5 _hpc_mpi_inc "${MPI_C_INCLUDE_DIRS}")
string(SUBSTRING ${_hpc_mpi_inc} 0 8 _hpc_mpi_inc)
set(_hpc_mpi_ok HPCSCHED_MPI_IS_${HPCSCHED_MPI}_${_hpc_mpi_inc})
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
set(CMAKE_REQUIRED_QUIET ON)
check_c_source_compiles("#include <mpi.h>
#ifndef ${_hpc_mpi_macro}
#error not ${HPCSCHED_MPI}
#endif
int main(void) { return 0; }" ${_hpc_mpi_ok})
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_QUIET)
if(NOT ${_hpc_mpi_ok})
	message(FATAL_ERROR "HPCSCHED_MPI=${HPCSCHED_MPI} but ${MPI_C_COMPILER} (mpi.h in "
		"${MPI_C_INCLUDE_DIRS}) is another MPI: configure a fresh build directory "
		"or pass -DMPI_C_COMPILER=/usr/bin/mpicc.${HPCSCHED_MPI}")
endif()
get_property(_hpc_mpi_told GLOBAL PROPERTY HPCSCHED_MPI_TOLD)
if(NOT _hpc_mpi_told)
	message(STATUS "MPI: ${HPCSCHED_MPI} (${MPI_C_COMPILER}, MPI ${MPI_C_VERSION})")
	set_property(GLOBAL PROPERTY HPCSCHED_MPI_TOLD ON)
endif()
