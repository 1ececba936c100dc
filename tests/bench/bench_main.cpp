// The one main() of fa_microbench (tests/CMakeLists.txt links every bench/*.cpp
// with benchmark::benchmark, which has no main): benchmarks live in the other files.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
