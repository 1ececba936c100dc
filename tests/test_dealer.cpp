// sweep/dealer.h with fake workers (no device): items are dealt in order and
// each once, rows come out in item order whatever order the workers finish in,
// a worker's failed item is a row like any other, an exception or a stop halts
// the dealing and every finished row still comes out.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "sweep/dealer.h"

namespace fa {
namespace {

struct Row {
  size_t item = 0;
  int part = 0;     // rows of one item: 0, 1, ...
  int worker = -1;  // who made it
  std::string status = "ok";
};

// A worker's time on an item: a few random milliseconds, so finishing order
// differs from dealing order.
void busy(std::mt19937& rng) { std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000)); }

// Rows must come out as (item, part) in lexicographic order, with no gap.
void expect_plan_order(const std::vector<Row>& rows, size_t items, int parts) {
  ASSERT_EQ(rows.size(), items * size_t(parts));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].item, i / size_t(parts)) << "row " << i;
    EXPECT_EQ(rows[i].part, int(i % size_t(parts))) << "row " << i;
  }
}

TEST(InOrder, LetsRowsOutInItemOrderWhateverTheFinishingOrder) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const size_t items = 12;
    std::vector<size_t> order(items);
    for (size_t i = 0; i < items; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Row> out;
    InOrder<Row> in_order(items, [&](const Row& r) { out.push_back(r); });
    for (size_t i : order) {
      in_order.add(i, Row{i, 0});
      in_order.add(i, Row{i, 1});
      in_order.finish(i);
    }
    EXPECT_EQ(in_order.waiting(), 0u);
    expect_plan_order(out, items, 2);
  }
}

TEST(InOrder, TheFirstUnfinishedItemsRowsGoOutAtOnce) {
  std::vector<Row> out;
  InOrder<Row> in_order(3, [&](const Row& r) { out.push_back(r); });
  in_order.add(1, Row{1, 0});
  EXPECT_TRUE(out.empty());  // waits for item 0
  in_order.add(0, Row{0, 0});
  ASSERT_EQ(out.size(), 1u);  // the head streams
  in_order.finish(0);
  ASSERT_EQ(out.size(), 2u);  // item 1's waiting row follows
  in_order.add(1, Row{1, 1});
  EXPECT_EQ(out.size(), 3u);  // item 1 is the head now
  in_order.add(2, Row{2, 0});
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(in_order.waiting(), 1u);
}

TEST(InOrder, FlushLetsOutWhatWaitsBehindAnUnfinishedItem) {
  std::vector<Row> out;
  InOrder<Row> in_order(4, [&](const Row& r) { out.push_back(r); });
  in_order.add(0, Row{0, 0});
  in_order.finish(0);
  in_order.add(1, Row{1, 0});  // item 1 is abandoned: never finished
  in_order.add(3, Row{3, 0});
  in_order.finish(3);
  in_order.add(2, Row{2, 0});
  in_order.finish(2);
  EXPECT_EQ(out.size(), 2u);
  in_order.flush();
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[2].item, 2u);  // still in item order
  EXPECT_EQ(out[3].item, 3u);
}

// Fake workers: each item makes three rows after a random delay; every row
// goes through InOrder as the runner's do.
TEST(Deal, EveryItemOnceRowsInPlanOrderEveryWorkerUsed) {
  for (int workers : {1, 2, 3, 8}) {
    const size_t items = 40;
    std::vector<Row> out;
    InOrder<Row> in_order(items, [&](const Row& r) { out.push_back(r); });
    std::vector<std::atomic<int>> taken(items);
    std::vector<std::atomic<int>> by_worker(static_cast<size_t>(workers));
    std::vector<std::thread::id> thread_of(static_cast<size_t>(workers));
    std::atomic<bool> moved{false};
    DealEnd end = deal(
        items, workers,
        [&](int w, size_t i) {
          thread_local std::mt19937 rng(std::hash<std::thread::id>()(std::this_thread::get_id()));
          // A worker keeps one thread (a CUDA device binding is per thread).
          if (thread_of[size_t(w)] == std::thread::id()) thread_of[size_t(w)] = std::this_thread::get_id();
          if (thread_of[size_t(w)] != std::this_thread::get_id()) moved = true;
          ++taken[i];
          ++by_worker[size_t(w)];
          for (int part = 0; part < 3; ++part) {
            busy(rng);
            in_order.add(i, Row{i, part, w});
          }
          in_order.finish(i);
          return true;
        },
        nullptr);
    EXPECT_FALSE(end.halted);
    EXPECT_FALSE(end.error);
    EXPECT_EQ(end.dealt, items);
    EXPECT_FALSE(moved);
    for (size_t i = 0; i < items; ++i) EXPECT_EQ(taken[i].load(), 1) << "item " << i;
    for (int w = 0; w < workers; ++w) EXPECT_GT(by_worker[size_t(w)].load(), 0) << workers << " workers, worker " << w;
    expect_plan_order(out, items, 3);
  }
}

TEST(Deal, ItemsAreHandedOutInOrder) {
  // One worker: exactly plan order. Several: each worker's items rise, and
  // together they are every item once.
  for (int workers : {1, 4}) {
    std::mutex mu;
    std::vector<std::vector<size_t>> got(static_cast<size_t>(workers));
    std::vector<size_t> all;
    deal(30, workers,
         [&](int w, size_t i) {
           got[size_t(w)].push_back(i);  // only worker w touches got[w]
           {
             std::lock_guard lock(mu);
             all.push_back(i);
           }
           std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 2000));
           return true;
         },
         nullptr);
    for (const auto& g : got) EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
    EXPECT_EQ(std::set<size_t>(all.begin(), all.end()).size(), 30u);
    EXPECT_EQ(all.size(), 30u);
    if (workers == 1) EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  }
}

// A kernel that fails on one device is a status row; the run goes on.
TEST(Deal, AFailedItemIsAStatusRowNotAnEnd) {
  const size_t items = 20;
  std::vector<Row> out;
  InOrder<Row> in_order(items, [&](const Row& r) { out.push_back(r); });
  DealEnd end = deal(
      items, 3,
      [&](int w, size_t i) {
        std::mt19937 rng{static_cast<unsigned>(i)};
        busy(rng);
        Row r{i, 0, w};
        if (i == 7 || i == 13) r.status = "error";
        in_order.add(i, r);
        in_order.finish(i);
        return true;
      },
      nullptr);
  EXPECT_FALSE(end.halted);
  expect_plan_order(out, items, 1);
  EXPECT_EQ(out[7].status, "error");
  EXPECT_EQ(out[13].status, "error");
  EXPECT_EQ(out[8].status, "ok");
}

// A worker that throws (a bug, a lost device): no crash, the dealing halts, the
// exception comes back, and every row finished before is still let out.
TEST(Deal, AWorkerThatThrowsHaltsTheDealingAndLosesNoFinishedRow) {
  const size_t items = 30;
  std::vector<Row> out;
  InOrder<Row> in_order(items, [&](const Row& r) { out.push_back(r); });
  std::atomic<size_t> finished{0};
  DealEnd end = deal(
      items, 3,
      [&](int w, size_t i) {
        std::mt19937 rng{static_cast<unsigned>(i)};
        busy(rng);
        in_order.add(i, Row{i, 0, w});
        if (i == 10) throw std::runtime_error("device lost on item 10");
        in_order.add(i, Row{i, 1, w});
        in_order.finish(i);
        ++finished;
        return true;
      },
      nullptr);
  in_order.flush();
  EXPECT_TRUE(end.halted);
  ASSERT_TRUE(end.error);
  EXPECT_THROW(std::rethrow_exception(end.error), std::runtime_error);
  EXPECT_LT(end.dealt, items);  // nothing handed out after the halt but what was already taken
  // Every row made went out, in item order: item 10 with its first row only.
  EXPECT_EQ(out.size(), 2 * finished.load() + 1);
  for (size_t k = 1; k < out.size(); ++k)
    EXPECT_TRUE(out[k - 1].item < out[k].item || (out[k - 1].item == out[k].item && out[k - 1].part < out[k].part));
  bool saw_10 = false;
  for (const Row& r : out) saw_10 = saw_10 || r.item == 10;
  EXPECT_TRUE(saw_10);
}

// A sticky device error: the worker's work says stop, the others finish what
// they hold and take nothing more.
TEST(Deal, AWorkerThatAsksToStopHaltsTheDealing) {
  const size_t items = 100;
  std::atomic<int> ran{0};
  DealEnd end = deal(
      items, 2,
      [&](int, size_t i) {
        ++ran;
        if (i == 5) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return true;
      },
      nullptr);
  EXPECT_TRUE(end.halted);
  EXPECT_FALSE(end.error);
  EXPECT_LT(end.dealt, items);
  EXPECT_EQ(size_t(ran.load()), end.dealt);  // every item dealt ran
}

// Ctrl-C mid-run: the stop check holds back every item not yet dealt.
TEST(Deal, AStopRequestMidRunDealsNothingMore) {
  const size_t items = 50;
  std::atomic<bool> stop{false};
  std::atomic<size_t> done{0};
  std::vector<Row> out;
  InOrder<Row> in_order(items, [&](const Row& r) { out.push_back(r); });
  DealEnd end = deal(
      items, 4,
      [&](int w, size_t i) {
        std::mt19937 rng{static_cast<unsigned>(i)};
        busy(rng);
        in_order.add(i, Row{i, 0, w});
        in_order.finish(i);
        if (++done == 12) stop = true;
        return true;
      },
      [&] { return stop.load(); });
  in_order.flush();
  EXPECT_FALSE(end.halted);
  EXPECT_LT(end.dealt, items);
  EXPECT_LE(end.dealt, 12u + 4u);  // what was taken before the stop
  EXPECT_EQ(out.size(), done.load());
  expect_plan_order(out, out.size(), 1);  // every dealt item finished: no gap
}

TEST(Deal, NoItemsNoWork) {
  bool called = false;
  DealEnd end = deal(0, 4, [&](int, size_t) { return called = true; }, nullptr);
  EXPECT_FALSE(called);
  EXPECT_EQ(end.dealt, 0u);
}

}  // namespace
}  // namespace fa
