// A tiny parallel-for over independent tasks on std::thread: the CPU kernels and
// the reference split work into (batch, head, row block) tasks and hand them out
// through an atomic counter so uneven tasks (causal) balance themselves.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/stop.h"

namespace fa {

inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

// Calls fn(task, worker) for task in [0, n_tasks) on up to `threads` threads
// (worker in [0, threads) indexes per-thread scratch). The first exception
// thrown by any task is rethrown here after all workers stop. A stop request
// (core/stop.h: Ctrl-C, --timeout) ends the loop before the next task with
// fa::Stopped, so the reference, input generation and the CPU kernels answer
// it within one task's time.
template <typename Fn>
void parallel_for(int64_t n_tasks, int threads, Fn&& fn) {
  int workers = int(std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(n_tasks, 1)));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&](int worker) {
    for (;;) {
      int64_t t = next.fetch_add(1);
      if (t >= n_tasks) return;
      try {
        throw_if_stopped();
        fn(t, worker);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n_tasks);  // stop handing out work
        return;
      }
    }
  };
  if (workers <= 1) {
    body(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (int w = 1; w < workers; ++w) pool.emplace_back(body, w);
    body(0);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fa
