# facet_embed_files(NAME foo NAMESPACE a::b FUNCTION Files FILES url=file...)
# Declares facet_foo (alias facet::foo): a generated source holding each file
# (relative to the current source directory) as bytes under its URL path, with
# a content type from its extension and an ETag from its SHA-256 digest,
# returned by `absl::Span<const EmbeddedFile> a::b::Files()`
# (controller/server/console/embedded_file.h). Regenerated when a file changes.
include_guard(GLOBAL)

function(facet_embed_files)
  cmake_parse_arguments(ARG "" "NAME;NAMESPACE;FUNCTION" "FILES" ${ARGN})
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}.cc)
  set(entries)
  set(depends)
  foreach(entry IN LISTS ARG_FILES)
    string(FIND "${entry}" "=" eq)
    string(SUBSTRING "${entry}" 0 ${eq} url)
    math(EXPR from "${eq} + 1")
    string(SUBSTRING "${entry}" ${from} -1 file)
    list(APPEND entries "${url}=${CMAKE_CURRENT_SOURCE_DIR}/${file}")
    list(APPEND depends ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  endforeach()
  list(JOIN entries "|" entries_arg)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output}
            -DHEADER=controller/server/console/embedded_file.h -DNAMESPACE=${ARG_NAMESPACE}
            -DFUNCTION=${ARG_FUNCTION} "-DENTRIES=${entries_arg}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${depends} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${ARG_NAME}"
    VERBATIM)
  facet_cc_library(
    NAME ${ARG_NAME}
    SRCS ${output}
    PUBLIC_DEPS facet::embedded_file)
endfunction()
