#include "sweep/dealer.h"

#include <thread>

namespace fa {

DealEnd deal(size_t items, int workers, const std::function<bool(int, size_t)>& work,
             const std::function<bool()>& stop) {
  DealEnd end;
  std::mutex mu;
  size_t next = 0;
  // The next item for a free worker, or false when there is none to hand out.
  auto take = [&](size_t* item) {
    std::lock_guard lock(mu);
    if (end.halted || next >= items || (stop && stop())) return false;
    *item = next++;
    end.dealt = next;
    return true;
  };
  auto halt = [&](std::exception_ptr e) {
    std::lock_guard lock(mu);
    end.halted = true;
    if (e && !end.error) end.error = e;
  };
  auto body = [&](int worker) {
    size_t item = 0;
    while (take(&item)) {
      try {
        if (!work(worker, item)) halt(nullptr);
      } catch (...) {
        halt(std::current_exception());
      }
    }
  };
  if (workers <= 1) {
    body(0);
    return end;
  }
  std::vector<std::thread> pool;
  pool.reserve(size_t(workers));
  for (int w = 0; w < workers; ++w) pool.emplace_back(body, w);
  for (auto& t : pool) t.join();
  return end;
}

}  // namespace fa
