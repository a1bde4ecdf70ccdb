// dpnoise/parallel.hpp -- run n independent tasks on up to `threads` OS threads.
// The first exception thrown by any task is rethrown on the calling thread after all join.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dpnoise {

template <class Task>
void parallel_tasks(size_t ntasks, unsigned threads, Task&& task) {
    const size_t nworkers = std::max<size_t>(1, std::min<size_t>(threads, ntasks));
    if (nworkers == 1) {
        for (size_t i = 0; i < ntasks; ++i) task(i);
        return;
    }
    std::exception_ptr error;
    std::mutex error_mutex;
    // Tasks are claimed one at a time from a shared counter, so a worker slowed down (by another
    // process on a shared machine, say) simply takes fewer of them. Results never depend on
    // which worker runs a task: every task writes its own slice from its own stream.
    std::atomic<size_t> next{0};
    auto worker = [&](size_t) {
        try {
            for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < ntasks;
                 i = next.fetch_add(1, std::memory_order_relaxed))
                task(i);
        } catch (...) {
            next.store(ntasks, std::memory_order_relaxed);  // the others stop after their current task
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
