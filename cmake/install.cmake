# `cmake --install build --prefix P`: headers, libkiln.so (SONAME + version), the CMake
# package (kiln::kiln) and kiln.pc, for C++ projects that use kiln from outside this tree.
include(CMakePackageConfigHelpers)

install(TARGETS kiln EXPORT kilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
configure_package_config_file(cmake/kilnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${KILN_CMAKE_DIR})
# 0.x releases break compatibility between minor versions; SameMinorVersion says so.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
        ${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake DESTINATION ${KILN_CMAKE_DIR})

configure_file(cmake/kiln.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
