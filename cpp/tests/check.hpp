// The checks the C++ unit tests share: CHECK(cond) records a failure (file, line, condition)
// and goes on, so one run reports every failed check; main() returns report(name).
#pragma once
#include <cstdio>

static int failures = 0;
#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                                    \
        }                                                                                  \
    } while (0)

// true when f() throws an E (and nothing else)
template <class E, class F>
static bool throws(F&& f) {
    try {
        f();
    } catch (const E&) {
        return true;
    } catch (...) {
        return false;
    }
    return false;
}
