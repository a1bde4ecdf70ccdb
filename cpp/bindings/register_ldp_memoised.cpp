// Bindings of the memoised (daily-collection) randomizers: many rows, each with its own device
// key, in one call (dpnoise/ldp/memoised_rows.hpp). Glue only: convert and check with the GIL
// held, then one loop over rows with the GIL released, each row running the protocol's own
// kernel on its own PRF-keyed generator (the same bits as src/dpnoise/ldp/longitudinal.py's
// memo_generator row by row). Messages never echo a key or an item.
#include <algorithm>
#include <array>
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/hash_family.hpp"
#include "dpnoise/ldp/local_hashing.hpp"
#include "dpnoise/ldp/memoised_rows.hpp"
#include "dpnoise/ldp/unary_encoding.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

// The PRF's constant inputs and the rows' keys and items, checked; `rows()` views them.
struct KeyedInput {
    u8_array keys;
    i64_array items;
    ldp::MemoPrf prf;
    size_t n;

    KeyedInput(const py::array& device_keys, const py::bytes& fingerprint, const py::bytes& person,
               const py::array& prf_items)
        : keys(exact_array<uint8_t>(device_keys, 2, "device_keys")),
          items(exact_array<int64_t>(prf_items, 1, "items")),
          prf(reinterpret_cast<const uint8_t*>(fixed(fingerprint, ldp::MemoPrf::kFingerprintBytes, "fingerprint").data()),
              padded(person).data()),
          n(static_cast<size_t>(items.size())) {
        if (keys.shape(1) != 32 || (keys.shape(0) != 1 && static_cast<size_t>(keys.shape(0)) != n))
            throw std::invalid_argument("device_keys must have shape (1, 32) or (len(items), 32)");
    }

    ldp::MemoisedRows rows() const { return {prf, keys.data(), keys.shape(0) == 1 && n != 1, items.data(), n}; }

private:
    static std::string fixed(const py::bytes& b, size_t size, const char* what) {
        std::string s = b;
        if (s.size() != size) throw std::invalid_argument(std::string(what) + " has the wrong length");
        return s;
    }
    static std::array<uint8_t, 16> padded(const py::bytes& b) {
        const std::string s = b;
        if (s.size() > 16) throw std::invalid_argument("person must be at most 16 bytes");
        std::array<uint8_t, 16> out{};
        std::copy(s.begin(), s.end(), out.begin());
        return out;
    }
};

}  // namespace

static void register_ldp_memoised(py::module_& m) {
    // the PRF alone (tests, and anyone checking a device's keys)
    m.def(
        "memo_keys",
        [](const py::array& device_keys, const py::bytes& fingerprint, const py::bytes& person, const py::array& items) {
            const KeyedInput in(device_keys, fingerprint, person, items);
            auto out = new_array<uint8_t>(in.n, 32);
            uint8_t* p = out.mutable_data();
            const ldp::MemoisedRows rows = in.rows();
            {
                py::gil_scoped_release release;
                for (size_t i = 0; i < in.n; ++i) in.prf(rows.keys + (rows.one_key ? 0 : 32 * i), rows.items[i], p + 32 * i);
            }
            return out;
        },
        "The memoisation PRF BLAKE2b-256(key = device key, person)(fingerprint || le64(item)) of each row:\n"
        "uint8 (n, 32), the ChaCha20 keys of the rows' permanent answers.",
        py::arg("device_keys"), py::arg("fingerprint"), py::arg("person"), py::arg("items"));
    // grr: d-ary randomized response of the item
    m.def(
        "memo_grr",
        [](const py::array& device_keys, const py::bytes& fingerprint, const py::bytes& person, const py::array& items,
           uint64_t categories, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const KeyedInput in(device_keys, fingerprint, person, items);
            const exact::RandomizedResponseKernel kernel = rr_kernel(categories, gamma_num, gamma_den);
            check_below(in.items, categories, "items must be in [0, domain_size)");
            auto out = new_array<int64_t>(in.n);
            int64_t* p = out.mutable_data();
            const int64_t* x = in.items.data();
            {
                py::gil_scoped_release release;
                in.rows().run(threads, [&](auto& family, size_t i) { request::randomized_response(family, kernel, x + i, p + i, 1, 1); });
            }
            return out;
        },
        "Memoised GRR values, one row per (device key, item): the grr_privatize kernel on each row's PRF generator.",
        py::arg("device_keys"), py::arg("fingerprint"), py::arg("person"), py::arg("items"), py::arg("categories"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"));
    // olh: a public pool seed (or a secret one) and the bucket's g-ary randomized response
    m.def(
        "memo_olh",
        [](const py::array& device_keys, const py::bytes& fingerprint, const py::bytes& person, const py::array& items,
           const py::object& pool, uint64_t g, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const KeyedInput in(device_keys, fingerprint, person, items);
            ldp::HashFamily::check_buckets(g);
            const exact::RandomizedResponseKernel kernel = rr_kernel(g, gamma_num, gamma_den);
            check_below(in.items, uint64_t{1} << 32, "items must be in [0, 2^32) for local hashing");
            u64_array seeds_pool;
            uint64_t k = 0;
            if (!pool.is_none()) {
                seeds_pool = exact_array<uint64_t>(pool, 2, "pool");
                k = static_cast<uint64_t>(seeds_pool.shape(0));
                if (seeds_pool.shape(1) != 2 || k == 0) throw std::invalid_argument("pool must have shape (k, 2), k >= 1");
            }
            auto seeds = new_array<uint64_t>(in.n, 2);
            auto values = new_array<int64_t>(in.n);
            uint64_t* s = seeds.mutable_data();
            int64_t* v = values.mutable_data();
            const int64_t* x = in.items.data();
            const uint64_t* ps = k ? seeds_pool.data() : nullptr;
            const auto uniform = request::Uniform::make(0, k ? k - 1 : 0);
            {
                py::gil_scoped_release release;
                in.rows().run(threads, [&](auto& family, size_t i) {
                    if (!ps) return ldp::olh_privatize(family, kernel, x + i, s + 2 * i, v + i, 1, 1);
                    // as OLH's pool path: a uniform pool index, then g-ary randomized response of the bucket
                    int64_t j = 0;
                    request::sample_same<request::Uniform>(family, uniform, &j, 1, 1);
                    const ldp::HashSeed seed{ps[2 * j], ps[2 * j + 1]};
                    s[2 * i] = seed.a;
                    s[2 * i + 1] = seed.b;
                    const int64_t bucket = static_cast<int64_t>(ldp::HashFamily::bucket(seed, static_cast<uint64_t>(x[i]), g));
                    request::randomized_response(family, kernel, &bucket, v + i, 1, 1);
                });
            }
            return py::make_tuple(seeds, values);
        },
        "Memoised OLH (seeds, values), one row per (device key, item): a pool index and its public seed\n"
        "(pool (k, 2) uint64) or, with pool None, a secret seed; then the bucket's randomized response.",
        py::arg("device_keys"), py::arg("fingerprint"), py::arg("person"), py::arg("items"), py::arg("pool"), py::arg("g"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"));
    // oue, sue: the d bits
    m.def(
        "memo_unary",
        [](const py::array& device_keys, const py::bytes& fingerprint, const py::bytes& person, const std::string& protocol,
           const py::array& items, uint64_t domain_size, const py::int_& gamma_num, const py::int_& gamma_den,
           unsigned threads) {
            const KeyedInput in(device_keys, fingerprint, person, items);
            if (protocol != "oue" && protocol != "sue") throw std::invalid_argument("protocol must be 'oue' or 'sue'");
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const ldp::UnaryKind kind = protocol == "oue" ? ldp::UnaryKind::optimized : ldp::UnaryKind::symmetric;
            const auto kept = KeptKernels<ldp::UnaryEncoding>::get(
                kernel_key(static_cast<uint64_t>(kind), domain_size, gamma), [&] { return ldp::UnaryEncoding(kind, domain_size, gamma.num, gamma.den); });
            const ldp::UnaryEncoding& enc = *kept;
            check_below(in.items, domain_size, "items must be in [0, domain_size)");
            auto out = new_array<uint64_t>(in.n, enc.words);
            uint64_t* p = out.mutable_data();
            const int64_t* x = in.items.data();
            const size_t words = enc.words;
            {
                py::gil_scoped_release release;
                in.rows().run(threads, [&](auto& family, size_t i) { ldp::unary_privatize(family, enc, x + i, p + words * i, 1, 1); });
            }
            return out;
        },
        "Memoised unary-encoding bits ('oue' or 'sue'), one row per (device key, item): (n, ceil(d/64)) uint64.",
        py::arg("device_keys"), py::arg("fingerprint"), py::arg("person"), py::arg("protocol"), py::arg("items"),
        py::arg("domain_size"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"));
}

DPNOISE_LDP_AREA(memoised, register_ldp_memoised);

}  // namespace dpnoise::bindings
