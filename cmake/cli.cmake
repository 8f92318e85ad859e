# cmake/cli.cmake — sbx, the command line client: included (OPTIONAL) by the top-level
# CMakeLists.txt. Skipped with a message when libcurl's development files are missing
# (Debian: libcurl4-openssl-dev), so the daemon still builds without it.
#   sbx               the client (output: build dir root), libcurl + jansson
#   test_sse_parse    cmocka unit test of the SSE parser and the REPL's input rule
set(CLI_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
if(NOT DEFINED SBX_WARNINGS)
  set(SBX_WARNINGS -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2)
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(CURL IMPORTED_TARGET libcurl)
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON IMPORTED_TARGET jansson)
endif()
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
endif()

if(NOT TARGET PkgConfig::CURL OR NOT TARGET PkgConfig::JANSSON)
  message(STATUS "sbx: libcurl or jansson not found, the command line client is not built")
  return()
endif()

# The parts without a network: the SSE parser, base64, the REPL's input rule, and the
# shared capped buffer from the daemon (src/buf.c, in sbxbase). Linked by sbx and by the
# unit test.
add_library(sbxcli_parse STATIC
  ${CLI_ROOT}/clients/cli/sse_parse.c
  ${CLI_ROOT}/clients/cli/b64.c
  ${CLI_ROOT}/clients/cli/repl_input.c)
target_include_directories(sbxcli_parse PUBLIC ${CLI_ROOT}/clients/cli)
target_compile_options(sbxcli_parse PRIVATE ${SBX_WARNINGS})
target_link_libraries(sbxcli_parse PUBLIC sbxbase)

add_executable(sbx
  ${CLI_ROOT}/clients/cli/main.c
  ${CLI_ROOT}/clients/cli/common.c
  ${CLI_ROOT}/clients/cli/client.c
  ${CLI_ROOT}/clients/cli/execute.c
  ${CLI_ROOT}/clients/cli/cmd_run.c
  ${CLI_ROOT}/clients/cli/cmd_exec.c
  ${CLI_ROOT}/clients/cli/cmd_admin.c
  ${CLI_ROOT}/clients/cli/cmd_cp.c
  ${CLI_ROOT}/clients/cli/cmd_mcp.c
  ${CLI_ROOT}/clients/cli/repl.c
  ${CLI_ROOT}/clients/cli/lineedit.c)
target_compile_options(sbx PRIVATE ${SBX_WARNINGS})
target_link_libraries(sbx PRIVATE sbxcli_parse PkgConfig::CURL PkgConfig::JANSSON)
set_target_properties(sbx PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

enable_testing()
if(TARGET PkgConfig::CMOCKA)
  add_executable(test_sse_parse ${CLI_ROOT}/tests/unit/test_sse_parse.c)
  target_compile_options(test_sse_parse PRIVATE ${SBX_WARNINGS})
  target_link_libraries(test_sse_parse PRIVATE sbxcli_parse PkgConfig::CMOCKA)
  add_test(NAME test_sse_parse COMMAND test_sse_parse)
  set_tests_properties(test_sse_parse PROPERTIES TIMEOUT 60)
endif()
