// dpnoise/random/os_entropy.hpp -- key material from the operating system.
// Linux: getrandom(2) (blocks until the pool is initialised, never returns weak bytes);
// elsewhere, or where the syscall is missing (ENOSYS), /dev/urandom. Any failure raises
// dpnoise::entropy_error: there is no weaker fallback.
#pragma once
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "dpnoise/errors.hpp"

#if defined(__linux__)
#include <sys/random.h>
#endif

namespace dpnoise::random {

// Test hook: when set, os_entropy() fails as if the OS had refused. Only the test suite sets it.
inline std::atomic<bool>& entropy_failure_for_testing() {
    static std::atomic<bool> flag{false};
    return flag;
}

namespace detail {
inline void read_dev_urandom(unsigned char* p, size_t n) {
    std::FILE* f = std::fopen("/dev/urandom", "rb");
    if (!f) throw entropy_error(std::string("cannot open /dev/urandom: ") + std::strerror(errno));
    const size_t got = std::fread(p, 1, n, f);
    std::fclose(f);
    if (got != n) throw entropy_error("short read from /dev/urandom");
}
}  // namespace detail

inline void os_entropy(void* buffer, size_t n) {
    if (entropy_failure_for_testing().load()) throw entropy_error("OS entropy unavailable (simulated by the test hook)");
    auto* p = static_cast<unsigned char*>(buffer);
#if defined(__linux__)
    size_t got = 0;
    while (got < n) {
        const ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOSYS) { detail::read_dev_urandom(p + got, n - got); return; }
            throw entropy_error(std::string("getrandom failed: ") + std::strerror(errno));
        }
        got += static_cast<size_t>(r);
    }
#else
    detail::read_dev_urandom(p, n);
#endif
}

}  // namespace dpnoise::random
