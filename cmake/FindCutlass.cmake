# FindCutlass: locate the CUTLASS headers (header-only; NVIDIA's BSD-3-Clause CUTLASS).
#
# Looks in CUTLASS_ROOT (variable or environment: a CUTLASS checkout or install, with
# include/cutlass/cutlass.h), then in the Python package nvidia-cutlass (`pip install
# nvidia-cutlass`, which ships the headers under cutlass_library/source/include; found without
# importing it, so `pip install --no-deps` suffices) of the python3 on PATH.
#
# Result: Cutlass_FOUND, CUTLASS_INCLUDE_DIR, CUTLASS_VERSION and the target Cutlass::Cutlass.

set(_cutlass_hints "")
foreach(_root IN ITEMS "${CUTLASS_ROOT}" "$ENV{CUTLASS_ROOT}")
  if(_root)
    list(APPEND _cutlass_hints "${_root}" "${_root}/include")
  endif()
endforeach()
if(NOT CUTLASS_INCLUDE_DIR)
  find_program(_cutlass_python NAMES python3 python)
  if(_cutlass_python)
    execute_process(
      COMMAND "${_cutlass_python}" -c
              "import importlib.util as u, os; s = u.find_spec('cutlass_library'); print(os.path.join(os.path.dirname(s.origin), 'source', 'include'))"
      OUTPUT_VARIABLE _cutlass_py_include OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE _cutlass_py_rc)
    if(_cutlass_py_rc EQUAL 0 AND _cutlass_py_include)
      list(APPEND _cutlass_hints "${_cutlass_py_include}")
    endif()
  endif()
endif()

find_path(CUTLASS_INCLUDE_DIR cutlass/cutlass.h HINTS ${_cutlass_hints} NO_DEFAULT_PATH)
find_path(CUTLASS_INCLUDE_DIR cutlass/cutlass.h)

if(CUTLASS_INCLUDE_DIR AND EXISTS "${CUTLASS_INCLUDE_DIR}/cutlass/version.h")
  file(STRINGS "${CUTLASS_INCLUDE_DIR}/cutlass/version.h" _v REGEX "^#define CUTLASS_(MAJOR|MINOR|PATCH) +[0-9]+")
  string(REGEX REPLACE ".*CUTLASS_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
  string(REGEX REPLACE ".*CUTLASS_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
  string(REGEX REPLACE ".*CUTLASS_PATCH +([0-9]+).*" "\\1" _patch "${_v}")
  set(CUTLASS_VERSION "${_major}.${_minor}.${_patch}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Cutlass
  REQUIRED_VARS CUTLASS_INCLUDE_DIR
  VERSION_VAR CUTLASS_VERSION)

if(Cutlass_FOUND AND NOT TARGET Cutlass::Cutlass)
  add_library(Cutlass::Cutlass INTERFACE IMPORTED)
  # SYSTEM: its headers' warnings are not ours.
  set_target_properties(Cutlass::Cutlass PROPERTIES
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${CUTLASS_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUTLASS_INCLUDE_DIR}")
endif()
mark_as_advanced(CUTLASS_INCLUDE_DIR)
