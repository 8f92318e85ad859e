# cmake/jail.cmake — the sandbox isolation layer: included by the top-level CMakeLists.txt.
#   jailenter      static lib, no libuv: seccomp table + compiler, jail_enter(),
#                  jail_drop_privileges(), the init control protocol framing. Used by
#                  sandboxd-init and by the Python zygote.
#   jail           static lib for the daemon: jail.h on libuv, cgroups.
#   sandboxd-init  the per-sandbox init (output: build dir root).
#   hostile-probe  static helper that tries one attack per run inside a sandbox.
#   jail-smoke     standalone driver: create a jail, spawn, measure.
#   tests          test_cgroup, test_seccomp (cmocka), registered with add_test.
set(JAIL_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
if(NOT DEFINED SBX_WARNINGS)
  set(SBX_WARNINGS -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2)
endif()
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::SECCOMP)
  pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
endif()
if(NOT TARGET PkgConfig::UV)
  pkg_check_modules(UV REQUIRED IMPORTED_TARGET libuv)
endif()
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
endif()

add_library(jailenter STATIC
  ${JAIL_ROOT}/src/seccomp.c
  ${JAIL_ROOT}/src/jail_enter.c
  ${JAIL_ROOT}/src/jail_proto.c
  ${JAIL_ROOT}/src/fdmsg.c)
target_include_directories(jailenter PUBLIC ${JAIL_ROOT}/src)
target_compile_options(jailenter PRIVATE ${SBX_WARNINGS})
target_link_libraries(jailenter PUBLIC PkgConfig::SECCOMP)
set_target_properties(jailenter PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_library(jail STATIC ${JAIL_ROOT}/src/jail.c ${JAIL_ROOT}/src/jail_create.c
  ${JAIL_ROOT}/src/jail_teardown.c ${JAIL_ROOT}/src/jail_ctl.c
  ${JAIL_ROOT}/src/jail_runtimes.c ${JAIL_ROOT}/src/cgroup.c)
target_include_directories(jail PUBLIC ${JAIL_ROOT}/src)
target_compile_options(jail PRIVATE ${SBX_WARNINGS})
target_link_libraries(jail PUBLIC jailenter PkgConfig::UV)

add_executable(sandboxd-init
  ${JAIL_ROOT}/src/init/init_main.c
  ${JAIL_ROOT}/src/init/init_root.c
  ${JAIL_ROOT}/src/init/init_runtimes.c
  ${JAIL_ROOT}/src/init/init_serve.c
  ${JAIL_ROOT}/src/init/init_workspace.c)
target_compile_options(sandboxd-init PRIVATE ${SBX_WARNINGS})
target_link_libraries(sandboxd-init PRIVATE jailenter)
set_target_properties(sandboxd-init PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# Static so that it runs from /workspace inside a sandbox whatever libraries are bound.
# (Built without the sanitizers in sanitizer builds: ASan cannot link statically, and
# the probe is a test tool, not code under test.)
add_executable(hostile-probe ${JAIL_ROOT}/tests/hostile/probe.c)
target_compile_options(hostile-probe PRIVATE ${SBX_WARNINGS})
if(SANITIZE)
  target_compile_options(hostile-probe PRIVATE -fno-sanitize=all)
  target_link_options(hostile-probe PRIVATE -fno-sanitize=all)
endif()
target_link_options(hostile-probe PRIVATE -static)
set_target_properties(hostile-probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

add_executable(jail-smoke ${JAIL_ROOT}/tests/unit/jail_smoke.c)
target_compile_options(jail-smoke PRIVATE ${SBX_WARNINGS})
target_link_libraries(jail-smoke PRIVATE jail)
set_target_properties(jail-smoke PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

enable_testing()
if(TARGET PkgConfig::CMOCKA)
  add_executable(test_cgroup ${JAIL_ROOT}/tests/unit/test_cgroup.c)
  target_compile_options(test_cgroup PRIVATE ${SBX_WARNINGS})
  target_link_libraries(test_cgroup PRIVATE jail PkgConfig::CMOCKA)
  add_test(NAME test_cgroup COMMAND test_cgroup)

  add_executable(test_seccomp ${JAIL_ROOT}/tests/unit/test_seccomp.c)
  target_compile_options(test_seccomp PRIVATE ${SBX_WARNINGS})
  target_link_libraries(test_seccomp PRIVATE jailenter PkgConfig::CMOCKA)
  add_test(NAME test_seccomp COMMAND test_seccomp)

  # Needs root (namespaces, cgroups); skipped (exit 77) otherwise.
  add_test(NAME jail_smoke COMMAND jail-smoke --init ${CMAKE_BINARY_DIR}/sandboxd-init --runs 20)
  set_tests_properties(jail_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
