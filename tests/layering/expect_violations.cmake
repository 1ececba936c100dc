# Proves the layering check can fail: runs it on tests/data/layering, a small
# tree with one planted violation of each kind (src/core including a higher src/ folder, the
# reference including the kernels, one kernel family including another, measure
# including registry, a folder without a rule) beside clean files, and passes
# only when the check fails naming exactly those five.
#   cmake -DCHECK=<check_layers.cmake> -DROOT=<tests/data/layering> -P expect_violations.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${ROOT} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the layering check passed a tree with planted violations:\n${text}")
endif()
set(expected
    "src/core/types.h: includes \"measure/timing.h\" \\(src/measure\\)"
    "reference/reference.h: includes \"common/attn_params.h\" \\(kernels/common\\)"
    "kernels/fa2/fa2_fwd.cuh: includes \"fa3/fa3_traits.cuh\" \\(kernels/fa3\\)"
    "src/measure/executor.h: includes \"registry/kernel.h\" \\(src/registry\\)"
    "src/foo/foo.h: folder src/foo has no layer rule")
foreach(line IN LISTS expected)
  if(NOT text MATCHES "${line}")
    message(FATAL_ERROR "the layering check did not report ${line}:\n${text}")
  endif()
endforeach()
string(REGEX MATCHALL "\n    [^\n]+: (includes|folder)" reported "${text}")
list(LENGTH reported n)
if(NOT n EQUAL 5)
  message(FATAL_ERROR "the layering check reported ${n} violations, 5 are planted:\n${text}")
endif()
message(STATUS "the layering check rejects the planted tree, naming its 5 violations")
