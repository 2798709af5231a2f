# Sanitizer and fuzzing builds (FACET_SANITIZE, FACET_FUZZ; see
# docs/development.md and scripts/test-sanitizers.sh).
include_guard(GLOBAL)

if(FACET_SANITIZE)
  add_compile_options(-fsanitize=${FACET_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${FACET_SANITIZE})
  if(FACET_SANITIZE MATCHES "thread")
    # gRPC's inline C++ headers are left uninstrumented, like the library
    # (the reasons are in the file). Spelled -fsanitize-blacklist (clang 14
    # takes both spellings): ccache 4.7 hashes that file's contents, and not
    # those of an -fsanitize-ignorelist, whose edits it would not see.
    # The path is relative to the build directory, where Ninja runs every
    # compile: ccache hashes the option as written, and an absolute path would
    # differ between checkouts (CCACHE_BASEDIR does not rewrite it), so a
    # fresh clone would miss the cache for every TSan object.
    set(ignorelist ${PROJECT_SOURCE_DIR}/test/sanitizers/tsan_ignorelist.txt)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ignorelist})
    file(RELATIVE_PATH ignorelist_from_build ${CMAKE_BINARY_DIR} ${ignorelist})
    add_compile_options(-fsanitize-blacklist=${ignorelist_from_build})
  endif()
endif()

if(FACET_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FACET_FUZZ=ON needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage feedback for the fuzzers from Facet's own code (every Facet target
  # links facet_warnings); generated and third-party code is left out.
  target_compile_options(facet_warnings INTERFACE -fsanitize=fuzzer-no-link)
endif()

# Adds `library` to every executable declared in `dir` and below.
function(facet_link_into_executables dir library)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES ${library})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    facet_link_into_executables(${subdir} ${library})
  endforeach()
endfunction()

# Call after every target is declared.
function(facet_sanitizers_finish)
  if(NOT FACET_SANITIZE)
    return()
  endif()
  # The generated Envoy API code is protobuf's generated code, which Facet
  # treats like libprotobuf itself (a Debian library, not instrumented either):
  # compiled without sanitizers it is the same objects in every sanitizer build,
  # so ccache compiles it once for the ASan and the TSan build.
  # (Every -fsanitize option goes, the TSan ignorelist's too.)
  # (A closure linked from another build, FACET_ENVOY_API_FROM, is compiled
  # already.)
  get_target_property(imported facet_envoy_api IMPORTED)
  if(NOT imported)
    get_target_property(options facet_envoy_api COMPILE_OPTIONS)
    list(FILTER options EXCLUDE REGEX "^-f(no-)?sanitize")
    set_target_properties(facet_envoy_api PROPERTIES COMPILE_OPTIONS "${options}")
  endif()

  # Under TSan, every executable gets the absl::Mutex annotations of
  # test/sanitizers/tsan_absl_mutex.cc, exported (-rdynamic) so that calls from
  # the shared libraries reach them too.
  if(NOT FACET_SANITIZE MATCHES "thread")
    return()
  endif()
  add_library(facet_tsan_absl_mutex OBJECT
              ${PROJECT_SOURCE_DIR}/test/sanitizers/tsan_absl_mutex.cc)
  target_link_libraries(facet_tsan_absl_mutex PRIVATE absl::synchronization)
  target_link_options(facet_tsan_absl_mutex INTERFACE -rdynamic)
  facet_link_into_executables(${PROJECT_SOURCE_DIR} "facet_tsan_absl_mutex;${CMAKE_DL_LIBS}")
endfunction()
