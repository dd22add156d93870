# SPDX-License-Identifier: BSD-3-Clause
# FindLibev: libev ships no pkg-config file. Provides Libev::libev.
find_path(LIBEV_INCLUDE_DIR NAMES ev.h)
find_library(LIBEV_LIBRARY NAMES ev)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libev DEFAULT_MSG LIBEV_LIBRARY LIBEV_INCLUDE_DIR)
if(Libev_FOUND AND NOT TARGET Libev::libev)
  add_library(Libev::libev UNKNOWN IMPORTED)
  set_target_properties(Libev::libev PROPERTIES
    IMPORTED_LOCATION "${LIBEV_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LIBEV_INCLUDE_DIR}")
endif()
mark_as_advanced(LIBEV_INCLUDE_DIR LIBEV_LIBRARY)
