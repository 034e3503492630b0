# FindCUDNN: locate cuDNN headers and library.
#
# Looks in CUDNN_ROOT (variable or environment), the CUDA toolkit (where the build machine has it)
# and the Debian multiarch folders (where the GPU machine has it).
#
# Result: CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION and the target CUDNN::cudnn.

set(_cudnn_hints "")
foreach(_root IN ITEMS "${CUDNN_ROOT}" "$ENV{CUDNN_ROOT}")
  if(_root)
    list(APPEND _cudnn_hints "${_root}")
  endif()
endforeach()

find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu
  PATH_SUFFIXES lib lib64)

if(CUDNN_INCLUDE_DIR)
  foreach(_hdr cudnn_version.h cudnn.h)
    if(EXISTS "${CUDNN_INCLUDE_DIR}/${_hdr}" AND NOT CUDNN_VERSION)
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${_hdr}" _major REGEX "^#define CUDNN_MAJOR +[0-9]+")
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${_hdr}" _minor REGEX "^#define CUDNN_MINOR +[0-9]+")
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${_hdr}" _patch REGEX "^#define CUDNN_PATCHLEVEL +[0-9]+")
      if(_major)
        string(REGEX MATCH "[0-9]+$" _major "${_major}")
        string(REGEX MATCH "[0-9]+$" _minor "${_minor}")
        string(REGEX MATCH "[0-9]+$" _patch "${_patch}")
        set(CUDNN_VERSION "${_major}.${_minor}.${_patch}")
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
