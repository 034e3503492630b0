# FindFFTW3f: locate single-precision FFTW 3 and its threads library (the CPU backend).
#
# Looks in FFTW3f_ROOT / FFTW_ROOT (variables or environment), then where pkg-config's fftw3f
# module says, then the default prefixes (Debian: libfftw3-dev).
#
# Result: FFTW3f_FOUND (both libraries and the header found), FFTW3f_INCLUDE_DIR, FFTW3f_LIBRARY,
# FFTW3f_THREADS_LIBRARY, FFTW3f_VERSION (from pkg-config, when known) and the targets
# FFTW3f::fftw3f and FFTW3f::threads (which links FFTW3f::fftw3f and the system's threads).

set(_fftw_hints "")
foreach(_root IN ITEMS "${FFTW3f_ROOT}" "$ENV{FFTW3f_ROOT}" "${FFTW_ROOT}" "$ENV{FFTW_ROOT}")
  if(_root)
    list(APPEND _fftw_hints "${_root}")
  endif()
endforeach()

find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_FFTW3f QUIET fftw3f)
endif()

find_path(FFTW3f_INCLUDE_DIR fftw3.h
  HINTS ${_fftw_hints} ${PC_FFTW3f_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(FFTW3f_LIBRARY fftw3f
  HINTS ${_fftw_hints} ${PC_FFTW3f_LIBRARY_DIRS}
  PATH_SUFFIXES lib lib64)
find_library(FFTW3f_THREADS_LIBRARY fftw3f_threads
  HINTS ${_fftw_hints} ${PC_FFTW3f_LIBRARY_DIRS}
  PATH_SUFFIXES lib lib64)
if(PC_FFTW3f_VERSION)
  set(FFTW3f_VERSION "${PC_FFTW3f_VERSION}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FFTW3f
  REQUIRED_VARS FFTW3f_LIBRARY FFTW3f_THREADS_LIBRARY FFTW3f_INCLUDE_DIR
  VERSION_VAR FFTW3f_VERSION)

if(FFTW3f_FOUND)
  find_package(Threads REQUIRED)
  if(NOT TARGET FFTW3f::fftw3f)
    add_library(FFTW3f::fftw3f UNKNOWN IMPORTED)
    set_target_properties(FFTW3f::fftw3f PROPERTIES
      IMPORTED_LOCATION "${FFTW3f_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${FFTW3f_INCLUDE_DIR}")
  endif()
  if(NOT TARGET FFTW3f::threads)
    add_library(FFTW3f::threads UNKNOWN IMPORTED)
    set_target_properties(FFTW3f::threads PROPERTIES
      IMPORTED_LOCATION "${FFTW3f_THREADS_LIBRARY}"
      INTERFACE_LINK_LIBRARIES "FFTW3f::fftw3f;Threads::Threads")
  endif()
endif()
mark_as_advanced(FFTW3f_INCLUDE_DIR FFTW3f_LIBRARY FFTW3f_THREADS_LIBRARY)
