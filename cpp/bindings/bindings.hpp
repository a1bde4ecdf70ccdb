// Shared declarations of the pybind11 glue (bindings only convert and dispatch).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <utility>

#include <numpy/random/bitgen.h>  // NumPy's BitGenerator interface struct (numpy/_core/include)

#include "dpnoise/random/external_family.hpp"
#include "dpnoise/random/generator.hpp"

namespace dpnoise::bindings {

namespace py = pybind11;

// Holds a Python lock (NumPy's `bit_generator.lock`, a threading.Lock) for its lifetime.
// Acquired with the GIL held (a blocked acquire releases the GIL, so this cannot deadlock
// against the thread holding the lock) and before the caller releases the GIL; released with
// the GIL held again.
class PyLockGuard {
public:
    explicit PyLockGuard(const py::object& lock) : lock_(lock) {
        if (lock_) {
            py::gil_scoped_acquire gil;
            lock_.attr("acquire")();
        }
    }
    PyLockGuard(const PyLockGuard&) = delete;
    PyLockGuard& operator=(const PyLockGuard&) = delete;
    ~PyLockGuard() {
        if (lock_) {
            py::gil_scoped_acquire gil;
            try {
                lock_.attr("release")();
            } catch (py::error_already_set& e) {
                e.discard_as_unraisable(__func__);
            }
        }
    }

private:
    py::object lock_;
};

// The Python-facing owner of a generator: EITHER dpnoise's ChaCha20 family (parallel, secure or
// seeded) OR a sequential family over a NumPy BitGenerator's next_uint64 (never secure).
//
// Sampling code reaches the family through with_family(f), which calls f with the concrete
// family: random::ChaCha20Generator& or random::ExternalWordFamily&. Call it with the GIL held;
// f may release the GIL around its loop. For a NumPy bit generator the bit generator's own lock
// (`bit_generator.lock`, the lock NumPy's Generator takes around its draws) is held for the
// whole call of f: the GIL is not enough, because f releases it while drawing, and another
// thread (a NumPy Generator, or a second dpnoise Generator on the same bit generator) could
// then step the same state.
struct GeneratorHandle {
    // The ChaCha20 family (null for an external one). `gen` is kept for code that needs the
    // ChaCha20 generator itself (random_raw, spawn, the NumPy capsule).
    std::unique_ptr<random::ChaCha20Generator> gen;
    // NumPy's view of `gen`: its own reader of stream kNumpyStream, and the bitgen_t pointing at
    // it (the capsule). Null for an external family.
    std::unique_ptr<random::ReservedStreamReader> numpy_reader;
    bitgen_t bitgen{};

    // The external family, the NumPy BitGenerator it reads (kept alive here, as the family
    // points into its state) and that bit generator's lock.
    std::optional<random::ExternalWordFamily> external;
    py::object external_owner;
    py::object external_lock;

    bool is_secure() const { return gen && gen->is_secure(); }

    template <class F>
    decltype(auto) with_family(F&& f) {
        if (gen) return std::forward<F>(f)(*gen);
        PyLockGuard hold(external_lock);
        return std::forward<F>(f)(*external);
    }
};

void register_random(py::module_& m);
void register_exact(py::module_& m);

}  // namespace dpnoise::bindings
