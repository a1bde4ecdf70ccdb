// Shared declarations of the pybind11 glue (bindings only convert and dispatch).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <numpy/random/bitgen.h>  // NumPy's BitGenerator interface struct (numpy/_core/include)

#include "dpnoise/exact/certified_exp.hpp"  // BigUint
#include "dpnoise/exact/randomized_response.hpp"
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

// ------------------------------------------------------------------------ the bindings toolkit
// Every register_*.cpp converts its arguments with these, so that an array, a key, a range
// check or a gamma means the same thing in every binding. All of them run with the GIL held,
// before any randomness is drawn or any state changes; their messages never echo a value.

// The typed NumPy arrays, ONE flag set: C-contiguous, and, as an argument type, converted from
// any array NumPy can cast (a copy when the dtype or layout differs). Where a silent conversion
// would change values (float items, reports of another dtype), take a py::array and convert it
// with integer_array (integer and bool dtypes only) or exact_array (exactly this dtype) instead.
template <class T>
using array_of = py::array_t<T, py::array::c_style | py::array::forcecast>;
using i64_array = array_of<int64_t>;
using u64_array = array_of<uint64_t>;
using i8_array = array_of<int8_t>;
using u8_array = array_of<uint8_t>;
using f64_array = array_of<double>;

// A new, uninitialised 1-D or 2-D array (the outputs of the kernels).
template <class T>
py::array_t<T> new_array(size_t n) {
    return py::array_t<T>(static_cast<py::ssize_t>(n));
}
template <class T>
py::array_t<T> new_array(size_t rows, size_t cols) {
    return py::array_t<T>(std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
}

// Exactly dtype T with `ndim` dimensions, as C-contiguous T (a copy only when strided): no
// silent conversion of reports or states.
template <class T>
array_of<T> exact_array(const py::array& a, int ndim, const char* what) {
    if (!a.dtype().is(py::dtype::of<T>()) || a.ndim() != ndim)
        throw std::invalid_argument(std::string(what) + " has the wrong dtype or number of dimensions");
    return array_of<T>::ensure(a);
}

// A writable, C-contiguous array of exactly dtype T and `ndim` dimensions, modified in place
// (the aggregators' states); the caller checks the shape.
template <class T>
T* inplace_array(py::array& a, int ndim, const char* what) {
    if (!a.dtype().is(py::dtype::of<T>()) || a.ndim() != ndim || !(a.flags() & py::array::c_style) || !a.writeable())
        throw std::invalid_argument(std::string(what) + " must be a writable C-contiguous " +
                                    py::str(py::dtype::of<T>()).cast<std::string>() + " array of " +
                                    std::to_string(ndim) + " dimension(s)");
    return static_cast<T*>(a.mutable_data());
}

// Any integer or bool array (any width) as C-contiguous T: integer and bool dtypes only, so that
// no float is silently truncated. Signed values wrap when T is unsigned (and the reverse): range
// check them (check_below) or use unsigned_keys.
template <class T>
array_of<T> integer_array(const py::array& a, const char* message) {
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u' && kind != 'b') throw py::type_error(message);
    array_of<T> x = array_of<T>::ensure(a);
    if (!x) throw py::type_error(message);
    return x;
}

// Throws std::invalid_argument(message) unless every v[i] is in [0, bound): THE range check of
// items, categories and report fields (message: e.g. "items must be in [0, domain_size)").
template <class T>
void check_below(const T* v, size_t n, uint64_t bound, const char* message) {
    for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_signed_v<T>) {
            if (v[i] < 0) throw std::invalid_argument(message);
        }
        if (static_cast<uint64_t>(v[i]) >= bound) throw std::invalid_argument(message);
    }
}
template <class T, int Flags>
void check_below(const py::array_t<T, Flags>& a, uint64_t bound, const char* message) {
    check_below(a.data(), static_cast<size_t>(a.size()), bound, message);
}

// A 1-D integer array of non-negative keys as C-contiguous uint64 (a signed array is checked for
// negative values before the conversion).
inline u64_array unsigned_keys(const py::array& a, const char* what) {
    const std::string type_message = std::string(what) + " must be an integer array";
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u' && kind != 'b') throw py::type_error(type_message);
    if (a.ndim() != 1) throw std::invalid_argument(std::string(what) + " must be a 1-D integer array");
    if (kind == 'i')
        check_below(integer_array<int64_t>(a, type_message.c_str()), UINT64_MAX,
                    (std::string(what) + " must be non-negative").c_str());
    return integer_array<uint64_t>(a, type_message.c_str());
}

// A 32-byte key (a seed or a public key) as the eight little-endian 32-bit words of a
// random::StreamKey (RFC 8439 §2.3 reads keys this way).
inline uint32_t load_le32(const char* p) {
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    return uint32_t(b[0]) | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
}
inline random::StreamKey key_from_bytes(const py::bytes& b, const char* name) {
    const std::string s = b;
    if (s.size() != 32) throw std::invalid_argument(std::string(name) + " must be exactly 32 bytes");
    random::StreamKey k;
    for (int i = 0; i < 8; ++i) k.words[i] = load_le32(s.data() + 4 * i);
    return k;
}

// The configuration's exact gamma = num/den (exact epsilon), passed to the core UNCHANGED: any
// halving (SUE, CMS) is the protocol kernel's business, in cpp/include/dpnoise/ldp/.
struct ExactGamma {
    exact::BigUint num, den;
};
// A non-negative Python int that fits 64 bits, read without Python-level arithmetic (the common
// case of an exact gamma); big_from_py otherwise.
inline exact::BigUint small_or_big_from_py(const py::int_& v, const char* name) {
    const unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
    if (x == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();  // negative or beyond 64 bits: the general conversion says which
        return big_from_py(v, name);
    }
    exact::BigUint b;
    if (x != 0) b.limb.push_back(static_cast<uint64_t>(x));
    return b;
}
inline ExactGamma exact_gamma(const py::int_& num, const py::int_& den) {
    return ExactGamma{small_or_big_from_py(num, "gamma_num"), small_or_big_from_py(den, "gamma_den")};
}
// Kernels built from exact parameters (certified constants, skip tables) cost microseconds to
// build, more than a client's report, so the last ones built are kept: immutable, keyed by all
// of their parameters (flattened into words), at most 16 of each type, least recently used out.
// A kept kernel is the kernel the parameters build: only the time changes.
template <class T>
class KeptKernels {
public:
    using Key = std::vector<uint64_t>;
    template <class Make>
    static std::shared_ptr<const T> get(const Key& key, Make&& make) {
        auto& self = instance();
        {
            std::lock_guard<std::mutex> lock(self.mutex_);
            for (auto it = self.entries_.begin(); it != self.entries_.end(); ++it) {
                if (it->first == key) {
                    auto kernel = it->second;
                    if (it + 1 != self.entries_.end()) std::rotate(it, it + 1, self.entries_.end());
                    return kernel;
                }
            }
        }
        auto kernel = std::make_shared<const T>(make());  // built outside the lock; may throw
        std::lock_guard<std::mutex> lock(self.mutex_);
        if (self.entries_.size() >= 16) self.entries_.erase(self.entries_.begin());
        self.entries_.emplace_back(key, kernel);
        return kernel;
    }

private:
    static KeptKernels& instance() {
        static KeptKernels kept;
        return kept;
    }
    std::mutex mutex_;
    std::vector<std::pair<Key, std::shared_ptr<const T>>> entries_;  // most recent last
};

// The key words of (tag, n, gamma): the limbs of numerator and denominator, each led by its length.
inline std::vector<uint64_t> kernel_key(uint64_t tag, uint64_t n, const ExactGamma& gamma) {
    std::vector<uint64_t> key{tag, n, gamma.num.limb.size()};
    key.insert(key.end(), gamma.num.limb.begin(), gamma.num.limb.end());
    key.push_back(gamma.den.limb.size());
    key.insert(key.end(), gamma.den.limb.begin(), gamma.den.limb.end());
    return key;
}

// THE randomized-response kernel of every binding: keep with probability 1/(1 + (k-1) e^-gamma)
// (kept: see KeptKernels).
inline exact::RandomizedResponseKernel rr_kernel(uint64_t categories, const ExactGamma& gamma) {
    return *KeptKernels<exact::RandomizedResponseKernel>::get(kernel_key(0, categories, gamma), [&] {
        return exact::RandomizedResponseKernel(categories, gamma.num, gamma.den);
    });
}
inline exact::RandomizedResponseKernel rr_kernel(uint64_t categories, const py::int_& num, const py::int_& den) {
    return rr_kernel(categories, exact_gamma(num, den));
}

// Defines m.name(gen, values, categories, gamma_num, gamma_den, threads): k-ary randomized
// response of integer values in [0, categories) (register_categorical.cpp). The central
// mechanism's kernel, also the "grr" local-DP randomizer (_core.ldp.grr_privatize).
void def_randomized_response(py::module_& m, const char* name, const char* doc);

// ------------------------------------------------------------------------------- the areas
// module.cpp calls each once; the local-DP ones get the `_core.ldp` submodule.
void register_random(py::module_& m);
void register_exact(py::module_& m);
void register_testing(py::module_& m);
void register_categorical(py::module_& m);
void register_capi(py::module_& m);  // the C API capsule (dpnoise/capi.h)
void register_selection(py::module_& m);
void register_mechanisms(py::module_& m);  // the mechanisms' buffer kernel (register_mechanisms.cpp)
void register_constant_time(py::module_& m);  // constant-time samplers (exact/constant_time/)
void register_prepared(py::module_& m);  // prepared laws and plan kernels (register_prepared.cpp)
// local DP: each protocol family's file (register_ldp_<family>.cpp) registers itself into
// _core.ldp with DPNOISE_LDP_AREA, so that adding a protocol touches neither this header nor
// module.cpp. module.cpp runs them in name order (static initialisation order across files is
// unspecified, so the order is made explicit here).
using area_function = void (*)(py::module_&);
struct ldp_area {
    const char* name;
    area_function define;
};
// The registered local-DP areas; filled before main() by the DPNOISE_LDP_AREA objects.
std::vector<ldp_area>& ldp_areas();
struct ldp_area_registrar {
    ldp_area_registrar(const char* name, area_function define) { ldp_areas().push_back({name, define}); }
};
#define DPNOISE_LDP_AREA(name, function) \
    static const ::dpnoise::bindings::ldp_area_registrar dpnoise_ldp_area_##name{#name, function}

}  // namespace dpnoise::bindings
