// dpnoise/parallel.hpp -- run n independent tasks on up to `threads` OS threads.
// The first exception thrown by any task is rethrown on the calling thread after all join.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dpnoise {

// Tasks [front, back) of one worker's contiguous share, claimed from either end.
class TaskRange {
public:
    void set(uint64_t front, uint64_t back) { range_.store((back << 32) | front, std::memory_order_relaxed); }
    void clear() { range_.store(0, std::memory_order_relaxed); }
    bool take_front(uint64_t& task) { return take(task, true); }
    bool take_back(uint64_t& task) { return take(task, false); }

private:
    bool take(uint64_t& task, bool front_end) {
        uint64_t r = range_.load(std::memory_order_relaxed);
        for (;;) {
            const uint64_t f = r & 0xffffffffu, b = r >> 32;
            if (f >= b) return false;
            const uint64_t next = front_end ? ((b << 32) | (f + 1)) : (((b - 1) << 32) | f);
            if (range_.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
                task = front_end ? f : b - 1;
                return true;
            }
        }
    }
    alignas(64) std::atomic<uint64_t> range_{0};  // a cache line of its own
};

// Each worker owns a contiguous share of the tasks and works through it from the front; a
// worker that runs out takes tasks from the back of the others' shares. So a worker slowed down
// (by another process on a shared machine, say) simply does fewer tasks, while each worker's
// output stays mostly contiguous in memory (two workers filling alternate slices of one fresh
// 2 MiB huge page wait on each other's page faults). Results never depend on which worker runs
// a task: every task writes its own slice from its own stream.
template <class Task>
void parallel_tasks(size_t ntasks, unsigned threads, Task&& task) {
    const size_t nworkers = std::max<size_t>(1, std::min<size_t>(threads, ntasks));
    if (nworkers == 1 || ntasks >= (size_t{1} << 32)) {  // (2^32 tasks would not fit a TaskRange)
        for (size_t i = 0; i < ntasks; ++i) task(i);
        return;
    }
    std::exception_ptr error;
    std::mutex error_mutex;
    const std::unique_ptr<TaskRange[]> shares(new TaskRange[nworkers]);
    for (size_t w = 0; w < nworkers; ++w) shares[w].set(w * ntasks / nworkers, (w + 1) * ntasks / nworkers);
    auto worker = [&](size_t w) {
        try {
            uint64_t i;
            while (shares[w].take_front(i)) task(static_cast<size_t>(i));
            for (size_t d = 1; d < nworkers; ++d)
                while (shares[(w + d) % nworkers].take_back(i)) task(static_cast<size_t>(i));
        } catch (...) {
            for (size_t v = 0; v < nworkers; ++v) shares[v].clear();  // the others stop after their current task
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(nworkers - 1);
    for (size_t w = 1; w < nworkers; ++w) pool.emplace_back(worker, w);
    worker(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace dpnoise
