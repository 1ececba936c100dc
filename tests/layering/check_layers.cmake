# The include rule, checked: every `#include "..."` in reference/, kernels/ and
# src/ (src/core included) that names a file of this repository must name one in a
# folder the including folder may depend on (docs/ARCHITECTURE.md). Run as
#   cmake -DROOT=<tree> -P tests/layering/check_layers.cmake
# It lists every violation and fails; a file in a folder without a rule fails too.
#
# A folder is reference, or one below kernels/ or src/ (kernels/fa3, src/core,
# src/measure, ...). Each rule: a folder, or a top-level name standing for all of
# its folders, then what it may include besides its own folder. In the allowed
# list too, a top-level name stands for every folder under it.
set(FA_LAYERS
  "src/core:"
  "reference:src/core"
  "kernels/common:src/core"
  "kernels:src/core kernels/common"
  "src/measure:src/core kernels"
  "src/report:src/core src/measure"
  "src/registry:src/core kernels src/measure"
  "src/check:src/core reference kernels src/measure src/registry src/report"
  "src/compare:src/core src/report"
  "src/sweep:src/core reference kernels src/measure src/registry src/check src/report"
  "src/cli:reference kernels src")
# Where quoted includes are looked up after the including file's own folder:
# the libraries' include directories (CMakeLists.txt), the root, src/, kernels/.
set(FA_INCLUDE_ROOTS "" "src" "kernels")

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_layers: pass -DROOT=<repository root>")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# The table itself has no cycle: a rule may name only folders whose rules come
# before it (a name standing for several folders must not reach a later one).
set(names "")
foreach(rule IN LISTS FA_LAYERS)
  string(REGEX REPLACE ":.*" "" name "${rule}")
  list(APPEND names "${name}")
endforeach()
set(table_errors "")
list(LENGTH names nrules)
math(EXPR last "${nrules} - 1")
foreach(i RANGE ${last})
  list(GET FA_LAYERS ${i} rule)
  list(GET names ${i} name)
  string(REGEX REPLACE "^[^:]*:" "" deps "${rule}")
  separate_arguments(deps)
  foreach(dep IN LISTS deps)
    set(named FALSE)
    foreach(j RANGE ${last})
      list(GET names ${j} other)
      if(j EQUAL i OR NOT (other STREQUAL dep OR other MATCHES "^${dep}/"))
        continue()
      endif()
      set(named TRUE)
      if(j GREATER i)
        string(APPEND table_errors "  ${name} may include ${dep}, which covers ${other}, listed after it\n")
      endif()
    endforeach()
    if(NOT named)
      string(APPEND table_errors "  ${name} may include ${dep}, which no other rule names\n")
    endif()
  endforeach()
endforeach()
if(table_errors)
  message(FATAL_ERROR "layering: the layer table is not ordered (a cycle, or a rule out of place):\n${table_errors}")
endif()

# The folder of a path relative to ROOT: the top-level folder, or for kernels/
# and src/ (whose folders are layers of their own) the first two components.
function(fa_folder_of rel out)
  string(REGEX MATCH "^(kernels|src)/[^/]+/" two "${rel}")
  if(two)
    string(REGEX REPLACE "/$" "" two "${two}")
    set(${out} "${two}" PARENT_SCOPE)
  else()
    string(REGEX MATCH "^[^/]+" one "${rel}")
    set(${out} "${one}" PARENT_SCOPE)
  endif()
endfunction()

# The allowed list of a folder ("" with found FALSE when no rule names it).
function(fa_rule_of folder out found)
  string(REGEX MATCH "^[^/]+" top "${folder}")
  set(hit FALSE)
  set(allowed "")
  foreach(rule IN LISTS FA_LAYERS)
    string(REGEX REPLACE ":.*" "" name "${rule}")
    string(REGEX REPLACE "^[^:]*:" "" deps "${rule}")
    if(name STREQUAL folder)
      set(hit TRUE)
      set(allowed "${deps}")
      break()
    elseif(name STREQUAL top AND NOT hit)
      set(hit TRUE)
      set(allowed "${deps}")
    endif()
  endforeach()
  separate_arguments(allowed)
  set(${out} "${allowed}" PARENT_SCOPE)
  set(${found} ${hit} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE "${ROOT}" LIST_DIRECTORIES false
     "${ROOT}/reference/*" "${ROOT}/kernels/*" "${ROOT}/src/*")
list(FILTER files INCLUDE REGEX "\\.(h|hpp|cuh|inc|c|cc|cpp|cu|in)$")
set(violations "")
set(checked 0)
foreach(rel IN LISTS files)
  fa_folder_of("${rel}" folder)
  fa_rule_of("${folder}" allowed found)
  if(NOT found)
    string(APPEND violations "  ${rel}: folder ${folder} has no layer rule (add one to tests/layering/check_layers.cmake and docs/ARCHITECTURE.md)\n")
    continue()
  endif()
  get_filename_component(dir "${rel}" DIRECTORY)
  file(STRINGS "${ROOT}/${rel}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
    # Resolve as the compiler does: the including file's folder, then the include roots.
    set(target "")
    foreach(base IN ITEMS "${dir}" ${FA_INCLUDE_ROOTS})
      if(base STREQUAL "")
        set(cand "${inc}")
      else()
        set(cand "${base}/${inc}")
      endif()
      if(EXISTS "${ROOT}/${cand}" AND NOT IS_DIRECTORY "${ROOT}/${cand}")
        file(RELATIVE_PATH target "${ROOT}" "${ROOT}/${cand}")  # folds ../
        break()
      endif()
    endforeach()
    if(target STREQUAL "")
      continue()  # generated (build_info.h, git_commit.h) or a library's header
    endif()
    math(EXPR checked "${checked} + 1")
    fa_folder_of("${target}" to)
    if(to STREQUAL folder)
      continue()
    endif()
    set(ok FALSE)
    foreach(a IN LISTS allowed)
      if(to STREQUAL a OR to MATCHES "^${a}/")
        set(ok TRUE)
        break()
      endif()
    endforeach()
    if(NOT ok)
      string(REPLACE ";" ", " shown "${allowed}")
      if(shown STREQUAL "")
        set(shown "nothing of ours")
      endif()
      string(APPEND violations "  ${rel}: includes \"${inc}\" (${to}); ${folder} may include only: ${shown}\n")
    endif()
  endforeach()
endforeach()

list(LENGTH files nfiles)
if(violations)
  message(FATAL_ERROR "layering: a lower layer includes a higher one:\n${violations}")
endif()
message(STATUS "layering: ${nfiles} files, ${checked} includes of our own, every one points down")
