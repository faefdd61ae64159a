# FindOneDNN: oneDNN's CPU library and headers, without its CMake package config.
#
# Debian's libdnnl-dev ships a dnnl-config.cmake that requires the OpenCL development
# files (its library is built with a GPU runtime), although kiln uses only oneDNN's CPU
# engine. This module finds the header and the library directly, so building kiln needs
# libdnnl-dev alone. ONEDNN_ROOT (variable or environment) points at another install.
#
# Result: target OneDNN::dnnl, OneDNN_FOUND, OneDNN_VERSION, OneDNN_CPU_RUNTIME (OMP,
# THREADPOOL, SEQ, TBB) read from dnnl_config.h.

find_path(OneDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${ONEDNN_ROOT} ENV ONEDNN_ROOT
          PATH_SUFFIXES include)
find_library(OneDNN_LIBRARY NAMES dnnl HINTS ${ONEDNN_ROOT} ENV ONEDNN_ROOT
             PATH_SUFFIXES lib lib64)

if(OneDNN_INCLUDE_DIR AND EXISTS "${OneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${OneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _onednn_ver
       REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "DNNL_VERSION_${_part} +([0-9]+)" _m "${_onednn_ver}")
    set(_onednn_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(OneDNN_VERSION "${_onednn_MAJOR}.${_onednn_MINOR}.${_onednn_PATCH}")
  file(STRINGS "${OneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_config.h" _onednn_rt
       REGEX "#define DNNL_CPU_RUNTIME ")
  string(REGEX MATCH "DNNL_RUNTIME_([A-Z]+)" _m "${_onednn_rt}")
  set(OneDNN_CPU_RUNTIME "${CMAKE_MATCH_1}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OneDNN
  REQUIRED_VARS OneDNN_LIBRARY OneDNN_INCLUDE_DIR
  VERSION_VAR OneDNN_VERSION
  REASON_FAILURE_MESSAGE "install Debian's libdnnl-dev (scripts/setup.sh does) or set ONEDNN_ROOT")

if(OneDNN_FOUND AND NOT TARGET OneDNN::dnnl)
  add_library(OneDNN::dnnl UNKNOWN IMPORTED)
  set_target_properties(OneDNN::dnnl PROPERTIES IMPORTED_LOCATION "${OneDNN_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${OneDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(OneDNN_INCLUDE_DIR OneDNN_LIBRARY)
