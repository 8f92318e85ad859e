# cmake/zygote.cmake — the Python zygote: included by the top-level CMakeLists.txt right
# after cmake/jail.cmake (it needs the jailenter and jail libraries defined there).
#   sandboxd-zygote   the zygote program (output: build dir root), embedding libpython3.11
#   mpl-cache         matplotlib's font list, built once at build time into <build>/mpl-cache
#   zygproto          the wire protocol (zygote_proto.c), linked by the zygote and by sbxcore
#                     (whose zygote_client.c is the daemon's side)
#   test_zygote       end-to-end test: a real sandbox, contexts forked into it (needs root)
#   zygote-bench      fork→ready latency and private memory per context
find_package(PkgConfig REQUIRED)
pkg_check_modules(PYEMBED REQUIRED python3-embed)
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
endif()
set(ZYG_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
set(ZYG_PYTHON /usr/bin/python3 CACHE FILEPATH "the Python whose libpython the zygote embeds")

add_library(zygproto STATIC ${ZYG_ROOT}/src/zygote/zygote_proto.c)
target_include_directories(zygproto PUBLIC ${ZYG_ROOT}/src)
target_compile_options(zygproto PRIVATE ${SBX_WARNINGS})
target_link_libraries(zygproto PUBLIC jailenter)

add_executable(sandboxd-zygote
  ${ZYG_ROOT}/src/zygote/zygote.c
  ${ZYG_ROOT}/src/zygote/zygote_start.c
  ${ZYG_ROOT}/src/zygote/zygote_spawn.c
  ${ZYG_ROOT}/src/zygote/zygote_child.c)
# Python's headers are not clean under our warning set: include them as system headers.
target_include_directories(sandboxd-zygote SYSTEM PRIVATE ${PYEMBED_INCLUDE_DIRS})
target_include_directories(sandboxd-zygote PRIVATE ${ZYG_ROOT}/src)
target_compile_options(sandboxd-zygote PRIVATE ${SBX_WARNINGS})
target_link_directories(sandboxd-zygote PRIVATE ${PYEMBED_LIBRARY_DIRS})
target_link_libraries(sandboxd-zygote PRIVATE zygproto jailenter ${PYEMBED_LIBRARIES})
set_target_properties(sandboxd-zygote PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# The pre-built font cache: without it every context's first plot scans all fonts (+100 ms).
set(ZYG_MPL_CACHE ${CMAKE_BINARY_DIR}/mpl-cache)
add_custom_command(
  OUTPUT ${ZYG_MPL_CACHE}/.built
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${ZYG_ROOT}/runtimes/python
          ${ZYG_PYTHON} -m sandboxd_runtime.fontcache ${ZYG_MPL_CACHE}
  COMMAND ${CMAKE_COMMAND} -E touch ${ZYG_MPL_CACHE}/.built
  DEPENDS ${ZYG_ROOT}/runtimes/python/sandboxd_runtime/fontcache.py
  COMMENT "Building matplotlib's font cache for the zygote"
  VERBATIM)
add_custom_target(mpl-cache ALL DEPENDS ${ZYG_MPL_CACHE}/.built)
add_dependencies(sandboxd-zygote mpl-cache)

# Test and benchmark: the client from sbxcore (only zygote_client.c and what it uses is
# linked in), plus the jail library.
set(ZYG_DEFS ZYG_BUILD_DIR="${CMAKE_BINARY_DIR}" ZYG_SOURCE_DIR="${ZYG_ROOT}")
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()
enable_testing()
if(TARGET PkgConfig::CMOCKA)
  add_executable(test_zygote ${ZYG_ROOT}/tests/unit/test_zygote.c)
  target_compile_options(test_zygote PRIVATE ${SBX_WARNINGS})
  target_compile_definitions(test_zygote PRIVATE ${ZYG_DEFS})
  target_link_libraries(test_zygote PRIVATE sbxcore jail PkgConfig::JANSSON PkgConfig::CMOCKA)
  add_dependencies(test_zygote sandboxd-zygote sandboxd-init)
  add_test(NAME test_zygote COMMAND test_zygote)
  set_tests_properties(test_zygote PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

add_executable(zygote-bench ${ZYG_ROOT}/bench/zygote_bench.c)
target_compile_options(zygote-bench PRIVATE ${SBX_WARNINGS})
target_compile_definitions(zygote-bench PRIVATE ${ZYG_DEFS})
target_link_libraries(zygote-bench PRIVATE sbxcore jail PkgConfig::JANSSON)
add_dependencies(zygote-bench sandboxd-zygote sandboxd-init)
set_target_properties(zygote-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
