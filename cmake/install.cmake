# `cmake --install build [--prefix DIR]`: the acprof tool (acprof and acprof-torch), the checkpoint runtime
# libacprof_ops.so with its public header, and a CMake package so that a C++
# training program can link the runtime:
#
#   find_package(acprof REQUIRED)                       # CMAKE_PREFIX_PATH=DIR
#   target_link_libraries(train PRIVATE acprof::ops)
#
# The package finds LibTorch itself (find_dependency(Torch)), the one acprof
# was built against, since the runtime's operator is compiled for its ABI.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ACPROF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/acprof)

# Installed binaries find libacprof_ops.so beside them and LibTorch where it
# was linked from: the pip torch's lib/ (linked by full path, so the link path
# alone does not name it; torch's own libraries find the nvidia-* wheels).
get_filename_component(ACPROF_TORCH_LIBRARY_DIR ${TORCH_LIBRARY} DIRECTORY)
set_target_properties(acprof acprof_torch PROPERTIES
                      INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${ACPROF_TORCH_LIBRARY_DIR}"
                      INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(acprof_ops PROPERTIES INSTALL_RPATH "${ACPROF_TORCH_LIBRARY_DIR}" INSTALL_RPATH_USE_LINK_PATH ON)

if(SKBUILD)
  # pip install . (pyproject.toml): the commands into the environment's bin/, the runtime into its
  # lib/, where $ORIGIN/../lib finds it and acprof.ops_library_path looks (beside the command).
  install(TARGETS acprof acprof_torch RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  install(TARGETS acprof_ops LIBRARY DESTINATION ${SKBUILD_DATA_DIR}/lib)
  set_target_properties(acprof acprof_torch PROPERTIES INSTALL_RPATH "$ORIGIN/../lib;${ACPROF_TORCH_LIBRARY_DIR}")
  return()
endif()

# acprof starts acprof-torch, beside it, for profile and rewrite (cli/front_main.cpp).
install(TARGETS acprof acprof_torch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS acprof_ops EXPORT acprofTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/rewriter/ops/include/acprof/ops.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/acprof)
install(EXPORT acprofTargets NAMESPACE acprof:: DESTINATION ${ACPROF_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/acprofConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/acprofConfig.cmake
                              INSTALL_DESTINATION ${ACPROF_INSTALL_CMAKEDIR})
# 0.x: a minor version may break what a consumer links against.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/acprofConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/acprofConfig.cmake ${CMAKE_BINARY_DIR}/acprofConfigVersion.cmake
        DESTINATION ${ACPROF_INSTALL_CMAKEDIR})
