// Shared declarations of the pybind11 glue (bindings only convert and dispatch).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <optional>
#include <utility>

#include <numpy/random/bitgen.h>  // NumPy's BitGenerator interface struct (numpy/_core/include)

#include "dpnoise/exact/certified_exp.hpp"  // BigUint
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

// Calls f(family) with the handle's stream family and the GIL released. Call it with the GIL
// held: for a NumPy bit generator, GeneratorHandle::with_family first takes that bit
// generator's lock (through Python), and holds it while f draws.
template <class F>
void with_family_nogil(GeneratorHandle& h, F&& f) {
    h.with_family([&](auto& family) {
        py::gil_scoped_release release;
        f(family);
    });
}

// A non-negative Python int as a BigUint (64-bit limbs, least significant first), and back.
inline exact::BigUint big_from_py(const py::int_& v, const char* name) {
    if (py::cast<bool>(v.attr("__lt__")(0))) throw std::invalid_argument(std::string(name) + " must be non-negative");
    exact::BigUint b;
    const py::int_ mask(UINT64_MAX);
    py::object x = v;
    while (py::cast<bool>(x)) {
        b.limb.push_back(py::cast<uint64_t>(x.attr("__and__")(mask)));
        x = x.attr("__rshift__")(64);
    }
    return b;
}

inline py::object big_to_py(const exact::BigUint& b) {
    py::object r = py::int_(0);
    for (size_t i = b.limb.size(); i-- > 0;) r = r.attr("__lshift__")(64).attr("__or__")(py::int_(b.limb[i]));
    return r;
}

void register_random(py::module_& m);
void register_exact(py::module_& m);
void register_testing(py::module_& m);
void register_categorical(py::module_& m);
void register_capi(py::module_& m);  // the C API capsule (dpnoise/capi.h)
void register_selection(py::module_& m);
void register_mechanisms(py::module_& m);  // the mechanisms' buffer kernel (register_mechanisms.cpp)
// local DP, one file per protocol family (register_ldp_<family>.cpp)
void register_ldp_unary(py::module_& m);
void register_ldp_hashing(py::module_& m);
void register_ldp_hadamard(py::module_& m);
void register_ldp_zmatrix(py::module_& m);
void register_ldp_heavy_hitters(py::module_& m);

}  // namespace dpnoise::bindings
