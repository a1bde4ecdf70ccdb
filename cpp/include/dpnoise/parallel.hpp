// dpnoise/parallel.hpp -- run n independent tasks on up to `threads` OS threads.
// The first exception thrown by any task is rethrown on the calling thread after all join.
#pragma once
#include <algorithm>
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
    auto worker = [&](size_t w) {
        try {
            // Static interleaving: task i always runs on worker i mod nworkers. Results never
            // depend on it, because every task writes its own slice from its own stream.
            for (size_t i = w; i < ntasks; i += nworkers) task(i);
        } catch (...) {
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
