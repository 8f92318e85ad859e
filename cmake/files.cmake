# cmake/files.cmake — the files API and background processes: included by the top-level
# CMakeLists.txt before sbxcore exists, so the sources are added to it deferred (the same
# trick as cmake/zygote.cmake), together with the unit test of path validation.
set(FILES_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)

function(_sbx_files)
  if(NOT TARGET sbxcore)
    message(WARNING "files.cmake: no sbxcore target; the files and processes API is not linked")
    return()
  endif()
  target_sources(sbxcore PRIVATE
    ${FILES_ROOT}/src/files.c
    ${FILES_ROOT}/src/api_files.c
    ${FILES_ROOT}/src/api_files_upload.c
    ${FILES_ROOT}/src/process.c)
  if(TARGET PkgConfig::CMOCKA)
    add_executable(test_files ${FILES_ROOT}/tests/unit/test_files.c)
    target_compile_options(test_files PRIVATE ${SBX_WARNINGS})
    target_link_libraries(test_files PRIVATE sbxcore PkgConfig::CMOCKA)
    add_test(NAME test_files COMMAND test_files)
    set_tests_properties(test_files PROPERTIES TIMEOUT 60)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _sbx_files)
