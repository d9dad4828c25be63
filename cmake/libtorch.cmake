# LibTorch from a pip torch (the project venv's, made by scripts/setup.sh, or the
# GPU machine's python3). Sets ACPROF_PYTHON (the interpreter that has that torch,
# used to export the reference models) and ACPROF_TORCH_HAS_CUDA, and runs
# find_package(Torch).
#
# A pip torch built with CUDA needs the CUDA toolkit's headers at configure time
# (/usr/local/cuda here) and takes its NVRTC from the nvidia-* wheels beside it,
# which Caffe2's config does not look in; both are pointed at here, once.

# pip install . (scikit-build-core): the interpreter pip installs into, whose torch the build links.
if(SKBUILD AND NOT ACPROF_PYTHON)
  set(ACPROF_PYTHON ${Python_EXECUTABLE} CACHE FILEPATH "Python with torch")
endif()
if(NOT ACPROF_PYTHON AND EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  set(ACPROF_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH "Python with torch")
endif()
find_program(ACPROF_PYTHON NAMES python3 REQUIRED)

set(torch_query "import os, torch; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__)))")
execute_process(COMMAND ${ACPROF_PYTHON} -c "${torch_query}"
                OUTPUT_VARIABLE torch_paths OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE torch_found ERROR_QUIET)
if(NOT torch_found EQUAL 0 AND SKBUILD)
  # pip builds in an isolated environment: its PYTHONPATH hides the environment's own packages
  # from the interpreter. Without it, the same interpreter sees them, torch among them.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE ${ACPROF_PYTHON} -c "${torch_query}"
                  OUTPUT_VARIABLE torch_paths OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE torch_found)
endif()
if(NOT torch_found EQUAL 0)
  message(FATAL_ERROR "acprof: ${ACPROF_PYTHON} cannot import torch; run scripts/setup.sh (it makes .venv with torch), "
                      "or install torch into the environment before `pip install .`")
endif()
string(REPLACE "\n" ";" torch_paths "${torch_paths}")
list(GET torch_paths 0 torch_cmake_prefix)
list(GET torch_paths 1 torch_site_packages)
list(APPEND CMAKE_PREFIX_PATH ${torch_cmake_prefix})

if(NOT CUDA_TOOLKIT_ROOT_DIR AND EXISTS /usr/local/cuda/include/cuda.h)
  set(CUDA_TOOLKIT_ROOT_DIR /usr/local/cuda CACHE PATH "CUDA toolkit for a CUDA LibTorch")
endif()
if(NOT CUDA_nvrtc_LIBRARY)
  file(GLOB pip_nvrtc ${torch_site_packages}/nvidia/*/lib/libnvrtc.so.* ${torch_site_packages}/nvidia/cuda_nvrtc/lib/libnvrtc.so.*)
  list(FILTER pip_nvrtc EXCLUDE REGEX "builtins|alt")
  if(pip_nvrtc)
    list(GET pip_nvrtc 0 pip_nvrtc)
    set(CUDA_nvrtc_LIBRARY ${pip_nvrtc} CACHE FILEPATH "NVRTC of the pip torch's CUDA wheels")
  endif()
endif()

find_package(Torch REQUIRED)
if(Torch_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "acprof: LibTorch ${Torch_VERSION} is older than 2.0; run scripts/setup.sh, which builds on the venv's torch")
endif()
# Caffe2's config fills TORCH_CUDA_LIBRARIES exactly when the build has CUDA.
if(TORCH_CUDA_LIBRARIES)
  set(ACPROF_TORCH_HAS_CUDA ON)
else()
  set(ACPROF_TORCH_HAS_CUDA OFF)
endif()
message(STATUS "acprof: LibTorch ${Torch_VERSION}, CUDA compiled in: ${ACPROF_TORCH_HAS_CUDA}")
message(STATUS "acprof: Python for the model exporters: ${ACPROF_PYTHON}")

# LibTorch 2.14's headers need C++20 (ATen.h stops a C++17 compile); the torch-free
# stages stay C++17, so only what links torch is compiled as C++20.
set_property(TARGET torch APPEND PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_20)
# LibTorch 2.x ships fmt headers (12.x) on its include path, which shadow the
# system's (9.x), and exports no fmt symbols. So a file that includes LibTorch
# uses those headers and links fmt's implementation compiled once from them
# (acprof_libtorch_fmt, cmake/libtorch_fmt.cpp). Header-only fmt compiled that
# implementation into every such file instead: 9-11 s of a CI core each
# (sha256.cpp 20.1 s against 11.5 s, recorder.cpp 35.2 s against 25.2 s).
# The torch-free libraries link Debian's libfmt 9; the two versions' inline
# namespaces (fmt::v9, fmt::v12) keep them apart in one binary.
add_library(acprof_libtorch_fmt STATIC ${CMAKE_CURRENT_LIST_DIR}/libtorch_fmt.cpp)
target_include_directories(acprof_libtorch_fmt PRIVATE ${TORCH_INCLUDE_DIRS})
target_compile_features(acprof_libtorch_fmt PRIVATE cxx_std_20)
set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_LIBRARIES acprof_libtorch_fmt)

# LibTorch's headers are most of a torch file's compile time, so what includes
# them precompiles <torch/script.h>. A precompiled copy is 600 MB and over a
# minute of a CI core, so the targets share two instead of making one each.
# GCC uses one only under the -fPIC or -fPIE it was made with and the macros it
# was made with that the header reads (FMT_SHARED among them), so the static
# libraries take acprof_graph's and the executables acprof_torch's.
#
# Restoring the precompiled headers is itself about 10 s of a core per file, so
# these targets are also unity builds: their files are compiled four to a
# translation unit (CMake's UNITY_BUILD), which restores it once per four.
function(acprof_precompile_torch_headers target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 4)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    set(owner acprof_torch)
  else()
    set(owner acprof_graph)
  endif()
  if(target STREQUAL owner)
    target_precompile_headers(${target} PRIVATE <torch/script.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM ${owner})
  endif()
endfunction()
