// Bindings of the "string_pem" heavy-hitters kernels (dpnoise/ldp/string_pem.hpp): glue only
// (convert, release the GIL, call). Items are packed (bytes + offsets) once, with the GIL held;
// messages name an item's position, never its value (items are private).
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/hash_family64.hpp"
#include "dpnoise/ldp/string_pem.hpp"

namespace dpnoise::bindings {

namespace {

// (data, offsets) as the core's PackedStrings, checked: offsets[0] = 0, non-decreasing, last = data size.
ldp::PackedStrings packed(const u8_array& data, const i64_array& offsets) {
    if (offsets.ndim() != 1 || offsets.size() < 1) throw std::invalid_argument("offsets must be 1-D with n + 1 entries");
    const int64_t* o = offsets.data();
    const size_t n = static_cast<size_t>(offsets.size()) - 1;
    if (o[0] != 0 || o[n] != static_cast<int64_t>(data.size()))
        throw std::invalid_argument("offsets must start at 0 and end at the size of data");
    for (size_t i = 0; i < n; ++i)
        if (o[i + 1] < o[i]) throw std::invalid_argument("offsets must be non-decreasing");
    return ldp::PackedStrings{data.data(), o, n};
}

// A new array of n T filled by fill(T*) with the GIL released.
template <class T, class Fill>
py::array_t<T> released_fill(size_t n, Fill&& fill) {
    auto out = new_array<T>(n);
    T* p = out.mutable_data();
    {
        py::gil_scoped_release release;
        fill(p);
    }
    return out;
}

}  // namespace

static void register_ldp_string_pem(py::module_& m) {
    m.def(
        "string_pack",
        [](const py::object& items, py::ssize_t max_length) {
            if (max_length < 0) throw std::invalid_argument("max_length must be non-negative");
            py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(items.ptr(), "items must be a sequence"));
            if (!seq) throw py::error_already_set();
            const py::ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
            PyObject** objs = PySequence_Fast_ITEMS(seq.ptr());
            std::vector<const char*> ptrs(static_cast<size_t>(n));
            auto offsets = new_array<int64_t>(static_cast<size_t>(n) + 1);
            int64_t* o = offsets.mutable_data();
            o[0] = 0;
            for (py::ssize_t i = 0; i < n; ++i) {
                PyObject* v = objs[i];
                const char* p = nullptr;
                Py_ssize_t len = 0;
                if (PyUnicode_Check(v)) {
                    p = PyUnicode_AsUTF8AndSize(v, &len);
                    if (!p) {
                        PyErr_Clear();  // never echo the item
                        throw std::invalid_argument("items[" + std::to_string(i) +
                                                    "] is not valid Unicode text (it cannot be encoded as UTF-8)");
                    }
                } else if (PyBytes_Check(v)) {
                    p = PyBytes_AS_STRING(v);
                    len = PyBytes_GET_SIZE(v);
                } else if (PyByteArray_Check(v)) {
                    p = PyByteArray_AS_STRING(v);
                    len = PyByteArray_GET_SIZE(v);
                } else {
                    throw py::type_error("items[" + std::to_string(i) + "] is a " + std::string(Py_TYPE(v)->tp_name) +
                                         ", not str/bytes (mixed batches are refused)");
                }
                if (len > max_length)
                    throw std::invalid_argument("items[" + std::to_string(i) + "] is longer than max_length (" +
                                                std::to_string(max_length) + " bytes)");
                ptrs[static_cast<size_t>(i)] = p;
                o[i + 1] = o[i] + static_cast<int64_t>(len);
            }
            auto data = new_array<uint8_t>(static_cast<size_t>(o[n]));
            unsigned char* d = data.mutable_data();
            for (py::ssize_t i = 0; i < n; ++i)  // the objects are alive: seq holds them, the GIL is held
                std::memcpy(d + o[i], ptrs[static_cast<size_t>(i)], static_cast<size_t>(o[i + 1] - o[i]));
            return py::make_tuple(data, offsets);
        },
        py::arg("items"), py::arg("max_length"),
        "Pack a sequence of str (as UTF-8) / bytes / bytearray into (data uint8, offsets int64 of n + 1):\n"
        "item i is data[offsets[i]:offsets[i+1]]. TypeError/ValueError naming the position of a bad item.");
    for (const bool bits : {false, true})
        m.def(
            bits ? "string_bit_prefix_keys" : "string_prefix_keys",
            [bits](const u8_array& data, const i64_array& offsets, const i64_array& prefix, uint64_t hash_key, unsigned threads) {
                const ldp::PackedStrings s = packed(data, offsets);
                if (static_cast<size_t>(prefix.size()) != s.n) throw std::invalid_argument("prefix must have one entry per item");
                check_below(prefix, UINT64_MAX, "prefix lengths must be non-negative");
                for (size_t i = 0; i < s.n; ++i)
                    if (prefix.data()[i] < 1) throw std::invalid_argument("prefix lengths must be at least 1");
                ldp::StringPrefixHash::check_key(hash_key);
                return released_fill<uint64_t>(s.n, [&](uint64_t* keys) {
                    ldp::string_prefix_keys(hash_key, s, prefix.data(), keys, threads, bits);
                });
            },
            py::arg("data"), py::arg("offsets"), py::arg("prefix"), py::arg("hash_key"), py::arg("threads"),
            bits ? "The 64-bit keys of the first prefix[i] BITS of item i followed by a terminator (complete when\n"
                   "8 len < prefix[i]; string_pem.hpp's bit prefixes, hash_key in [1, 2^61 - 1))."
                 : "The 64-bit keys of the first prefix[i] symbols of item i followed by a terminator (the\n"
                   "polynomial hash of string_pem.hpp at hash_key in [1, 2^61 - 1)).");
    m.def(
        "string_hh_privatize",
        [](GeneratorHandle& h, const u8_array& data, const i64_array& offsets, const py::object& aux,
           const std::vector<std::tuple<uint64_t, uint32_t, uint32_t, uint64_t>>& groups, const py::array& pool,
           uint64_t hash_key, uint64_t max_length, uint64_t g, const py::int_& gamma_num, const py::int_& gamma_den,
           unsigned threads) {
            ldp::HashFamily64::check_buckets(g);
            if (max_length > 255) throw std::invalid_argument("max_length must be at most 255");
            const exact::RandomizedResponseKernel kernel = rr_kernel(g, gamma_num, gamma_den);
            const auto P = exact_array<uint64_t>(pool, 2, "pool");
            if (P.shape(1) != 4 || P.shape(0) < 1) throw std::invalid_argument("pool must have shape (size, 4), size >= 1");
            const ldp::PackedStrings s = packed(data, offsets);
            std::vector<ldp::HeavyHitterGroup> specs;
            for (const auto& [w, kind, param, kp] : groups) specs.push_back(ldp::HeavyHitterGroup{w, kind, param, kp});
            u64_array A;
            const uint64_t* ap = nullptr;
            if (!aux.is_none()) {
                A = unsigned_keys(aux.cast<py::array>(), "aux");
                if (static_cast<size_t>(A.size()) != s.n) throw std::invalid_argument("aux must have one bucket per item");
                ap = A.data();
            }
            auto out = new_array<int64_t>(3, s.n);  // rows: groups, indices, values
            int64_t* o = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                ldp::string_hh_privatize(family, kernel, specs, P.data(), static_cast<uint64_t>(P.shape(0)), hash_key,
                                         max_length, s, ap, o, o + s.n, o + 2 * s.n, threads);
            });
            return out;
        },
        py::arg("gen"), py::arg("data"), py::arg("offsets"), py::arg("aux"), py::arg("groups"), py::arg("pool"),
        py::arg("hash_key"), py::arg("max_length"), py::arg("g"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "Heavy-hitters clients over strings: per item a secret group l (groups are (cum_weight, kind, param,\n"
        "k_prime) tuples), a secret uniform pool index j < k_prime_l, and the bucket h_pool[j](key) in [0, g) by\n"
        "exact g-ary randomized response. key = the key of the first param bits of the item followed by a\n"
        "terminator (kind 0), or 2 aux + bit param of the item padded to max_length bytes then its length\n"
        "byte (kind 1). Returns a (3, n) int64 array: rows groups, indices, values.");
    m.def(
        "string_pem_privatize",
        [](GeneratorHandle& h, const u8_array& data, const i64_array& offsets, const std::vector<uint64_t>& levels,
           const std::vector<uint64_t>& cumulative, const py::array& pool, uint64_t k_prime, uint64_t hash_key, uint64_t g, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            ldp::HashFamily64::check_buckets(g);
            const exact::RandomizedResponseKernel kernel = rr_kernel(g, gamma_num, gamma_den);
            const auto P = exact_array<uint64_t>(pool, 2, "pool");
            if (P.shape(1) != 4 || P.shape(0) < 1) throw std::invalid_argument("pool must have shape (size, 4), size >= 1");
            const ldp::PackedStrings s = packed(data, offsets);
            auto out = new_array<int64_t>(3, s.n);  // rows: levels, indices, values
            int64_t* o = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                ldp::string_pem_privatize(family, kernel, levels, cumulative, P.data(),
                                          static_cast<uint64_t>(P.shape(0)), k_prime, hash_key, s, o, o + s.n,
                                          o + 2 * s.n, threads);
            });
            return out;
        },
        py::arg("gen"), py::arg("data"), py::arg("offsets"), py::arg("levels"), py::arg("cumulative"), py::arg("pool"), py::arg("k_prime"),
        py::arg("hash_key"), py::arg("g"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "string_pem clients: per item a secret level l (uniform, or weighted: cumulative = the running sums\n"
        "of integer weights >= 1, one per level, or empty for uniform), a secret uniform pool index j < k_prime, and\n"
        "the bucket h_pool[j](key) in [0, g) of the key of the first levels[l] symbols of the item followed\n"
        "by a terminator, by exact g-ary randomized response with gamma = gamma_num/gamma_den.\n"
        "Returns a (3, n) int64 array: rows levels, indices, values.");
}

DPNOISE_LDP_AREA(string_pem, register_ldp_string_pem);

}  // namespace dpnoise::bindings
