# ctest fa_gbench_smoke: runs fa-gbench on tests/data/gbench/tiny.json with a
# short min time and checks the Google Benchmark JSON: it parses, holds exactly
# the expected benchmarks (2 kernels x 2 points), none skipped with an error,
# each with manual time > 0 and our counters.
#   cmake -DGBENCH=<fa-gbench> -DCONFIG=<tiny.json> -DOUT=<file.json> -P check_gbench.cmake
cmake_minimum_required(VERSION 3.25)  # string(JSON), IN_LIST
execute_process(COMMAND ${GBENCH} --config ${CONFIG} --benchmark_min_time=0.01
                        --benchmark_format=json --benchmark_out=${OUT} --benchmark_out_format=json
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fa-gbench exited ${rc}: ${err}")
endif()
file(READ ${OUT} doc)
string(JSON n ERROR_VARIABLE json_err LENGTH "${doc}" benchmarks)
if(json_err)
  message(FATAL_ERROR "${OUT} is not Google Benchmark JSON: ${json_err}")
endif()
set(expected
  "cpu.standard/b1_h2/1_q64_k64_d32_fp32/manual_time"
  "cpu.fa2.64x64/b1_h2/1_q64_k64_d32_fp32/manual_time"
  "cpu.standard/b1_h2/1_q64_k64_d32_fp32_causal/manual_time"
  "cpu.fa2.64x64/b1_h2/1_q64_k64_d32_fp32_causal/manual_time")
list(LENGTH expected n_expected)
if(NOT n EQUAL n_expected)
  message(FATAL_ERROR "expected ${n_expected} benchmarks, got ${n}")
endif()
math(EXPR last "${n} - 1")
set(names)
foreach(i RANGE ${last})
  string(JSON name GET "${doc}" benchmarks ${i} name)
  list(APPEND names "${name}")
  string(JSON error ERROR_VARIABLE no_error GET "${doc}" benchmarks ${i} error_occurred)
  if(error)
    string(JSON why GET "${doc}" benchmarks ${i} error_message)
    message(FATAL_ERROR "${name} was skipped: ${why}")
  endif()
  string(JSON t GET "${doc}" benchmarks ${i} real_time)
  string(JSON tf ERROR_VARIABLE no_counter GET "${doc}" benchmarks ${i} "TFLOP/s")
  if(no_counter OR NOT t GREATER 0 OR NOT tf GREATER 0)
    message(FATAL_ERROR "${name}: real_time '${t}', TFLOP/s '${tf}' (want both > 0)")
  endif()
endforeach()
foreach(want IN LISTS expected)
  if(NOT want IN_LIST names)
    message(FATAL_ERROR "benchmark '${want}' missing; got: ${names}")
  endif()
endforeach()
message(STATUS "fa-gbench: ${n} benchmarks, all timed, JSON valid")

# With OOM_CONFIG (tiny.json under a 1 KiB memory limit): every benchmark must
# be skipped with the executor's reason, none timed, and fa-gbench still exit 0
# (Google Benchmark reports skipped benchmarks in the JSON).
if(DEFINED OOM_CONFIG)
  execute_process(COMMAND ${GBENCH} --config ${OOM_CONFIG} --benchmark_min_time=0.01
                          --benchmark_out=${OUT}.oom.json --benchmark_out_format=json
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fa-gbench (oom config) exited ${rc}: ${err}")
  endif()
  file(READ ${OUT}.oom.json doc)
  string(JSON n LENGTH "${doc}" benchmarks)
  if(NOT n EQUAL n_expected)
    message(FATAL_ERROR "oom config: expected ${n_expected} benchmarks, got ${n}")
  endif()
  foreach(i RANGE ${last})
    string(JSON name GET "${doc}" benchmarks ${i} name)
    string(JSON error ERROR_VARIABLE missing GET "${doc}" benchmarks ${i} error_occurred)
    string(JSON why ERROR_VARIABLE missing2 GET "${doc}" benchmarks ${i} error_message)
    if(NOT error OR NOT why MATCHES "over the CPU memory limit")
      message(FATAL_ERROR "oom config: ${name} was not skipped with the oom reason (error '${error}', '${why}')")
    endif()
  endforeach()
  message(STATUS "fa-gbench: ${n} benchmarks skipped with the oom reason, as they must be")
endif()
