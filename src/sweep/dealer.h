// Work spread over devices (--devices), with nothing of a device in it, so it is
// tested with fake workers: `deal` hands items (a sweep's points, fa-check's
// cases) out in order, each to whichever worker thread is free, and `InOrder`
// lets the rows they make out in item order, each as soon as every row of the
// items before it is out. One item runs whole on one worker: a point's rows
// share its inputs and reference, and its timings are all taken on one device.
#pragma once
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace fa {

struct DealEnd {
  // A worker asked to stop (its work returned false) or threw: no item was
  // handed out after that, and the workers busy then finished their item.
  bool halted = false;
  std::exception_ptr error;  // the first exception a worker's work threw
  size_t dealt = 0;          // items handed out
};

// Items 0..items-1, in order, to `workers` threads (worker in [0, workers)): a
// free worker takes the next item unless `stop()` says so or the dealing halted.
// work(worker, item) returns false to halt it (a sticky device error). One
// worker runs on the calling thread and no other is made; otherwise each has a
// thread of its own, joined before deal returns.
DealEnd deal(size_t items, int workers, const std::function<bool(int worker, size_t item)>& work,
             const std::function<bool()>& stop);

// Rows of numbered items, let out in item order: a row of the first unfinished
// item goes out at once, a row of a later one waits until every item before it
// has finished. Thread-safe; `emit` is called under the lock, so rows go out one
// at a time and it needs no lock of its own.
template <typename Row>
class InOrder {
 public:
  InOrder(size_t items, std::function<void(const Row&)> emit)
      : emit_(std::move(emit)), waiting_(items), finished_(items, false) {}

  void add(size_t item, Row row) {
    std::lock_guard lock(mu_);
    if (item == head_) emit_(row);
    else waiting_[item].push_back(std::move(row));
  }

  // The item has no more rows: what waited on it goes out.
  void finish(size_t item) {
    std::lock_guard lock(mu_);
    finished_[item] = true;
    while (head_ < finished_.size() && finished_[head_]) {
      ++head_;
      release(head_);
    }
  }

  // At the end of a run that stopped early: the rows still waiting behind an
  // item that never finished, in item order (files keep every finished row;
  // --resume fills the gaps).
  void flush() {
    std::lock_guard lock(mu_);
    for (size_t i = head_; i < waiting_.size(); ++i) release(i);
    head_ = waiting_.size();
  }

  size_t waiting() const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& w : waiting_) n += w.size();
    return n;
  }

 private:
  void release(size_t item) {
    if (item >= waiting_.size()) return;
    for (const Row& r : waiting_[item]) emit_(r);
    waiting_[item].clear();
  }

  mutable std::mutex mu_;
  std::function<void(const Row&)> emit_;
  std::vector<std::vector<Row>> waiting_;
  std::vector<bool> finished_;
  size_t head_ = 0;  // the first unfinished item
};

}  // namespace fa
