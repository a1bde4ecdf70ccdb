// dpnoise/parallel.hpp -- run n independent tasks on up to `threads` OS threads.
// The first exception thrown by any task is rethrown on the calling thread after all join.
// `threads` is a wish, not a promise: if the system refuses to create a thread (address-space
// or process limits), the tasks run on the threads already created and the calling thread;
// no task is lost and the output does not change. The Python layer caps the wish at
// MAX_THREADS (src/dpnoise/_validate.py).
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
    std::unique_ptr<TaskRange[]> shares;
    try {
        shares.reset(new TaskRange[nworkers]);
    } catch (const std::bad_alloc&) {  // no room for the work-sharing state: run on this thread
        for (size_t i = 0; i < ntasks; ++i) task(i);
        return;
    }
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
    // Every worker ends by emptying every share from the back, so the shares of workers that
    // could not be started are done by the others. reserve() first: emplace_back then never
    // reallocates, and a failed thread creation (std::system_error, std::bad_alloc) leaves the
    // pool holding only threads that run, all joined below (a joinable std::thread destroyed
    // by an escaping exception would call std::terminate).
    std::vector<std::thread> pool;
    try {
        pool.reserve(nworkers - 1);
        for (size_t w = 1; w < nworkers; ++w) pool.emplace_back(worker, w);
    } catch (...) {
        // fewer threads than asked for: the ones created and this one do all the tasks
    }
    worker(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace dpnoise
