// Bindings of the local-DP hashing protocols (dpnoise/ldp/): glue only (convert, release the GIL, call).
// Arguments are checked with the GIL held and before any randomness is drawn or any count is
// changed; messages never echo an item or a report.
#include <string>
#include <utility>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/hash_family.hpp"
#include "dpnoise/ldp/local_hashing.hpp"

namespace dpnoise::bindings {

namespace {

// A C-contiguous 1-D int64 array of items in [0, 2^32) (integer dtypes only).
i64_array hash_items(const py::array& items) {
    i64_array x = integer_array<int64_t>(items, "items must be an integer array");
    if (x.ndim() != 1) throw std::invalid_argument("items must be a 1-D integer array");
    check_below(x, ldp::HashFamily::kMaxItems, "items must be in [0, 2^32)");
    return x;
}

// A (k_prime, 2) pool of public hash seeds, k_prime >= 1.
u64_array seed_pool(const py::array& pool, const char* message) {
    auto P = exact_array<uint64_t>(pool, 2, "pool");
    if (P.shape(1) != 2 || P.shape(0) < 1) throw std::invalid_argument(message);
    return P;
}

void check_domain(uint64_t domain_size) {
    if (domain_size < 1 || domain_size > ldp::HashFamily::kMaxItems)
        throw std::invalid_argument("domain_size must be in [1, 2^32]");
}

exact::RandomizedResponseKernel bucket_kernel(uint64_t g, const py::int_& num, const py::int_& den) {
    ldp::HashFamily::check_buckets(g);
    return rr_kernel(g, num, den);
}

}  // namespace

static void register_ldp_hashing(py::module_& m) {
    m.def(
        "olh_privatize",
        [](GeneratorHandle& h, const py::array& items, uint64_t g, const py::int_& gamma_num, const py::int_& gamma_den,
           unsigned threads) {
            const exact::RandomizedResponseKernel kernel = bucket_kernel(g, gamma_num, gamma_den);
            const i64_array x = hash_items(items);
            const size_t n = static_cast<size_t>(x.size());
            auto seeds = new_array<uint64_t>(n, 2);
            auto values = new_array<int64_t>(n);
            const int64_t* in = x.data();
            uint64_t* s = seeds.mutable_data();
            int64_t* v = values.mutable_data();
            with_family_nogil(h, [&](auto& family) { ldp::olh_privatize(family, kernel, in, s, v, n, threads); });
            return py::make_tuple(seeds, values);
        },
        py::arg("gen"), py::arg("items"), py::arg("g"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "OLH clients (Wang et al. 2017): per item a secret hash seed (a, b) and the bucket h_(a,b)(x) in\n"
        "[0, g) by exact g-ary randomized response with gamma = gamma_num/gamma_den. Returns (seeds (n, 2)\n"
        "uint64, values int64).");
    m.def(
        "flh_privatize",
        [](GeneratorHandle& h, const py::array& items, const py::array& pool, uint64_t g, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            const exact::RandomizedResponseKernel kernel = bucket_kernel(g, gamma_num, gamma_den);
            const auto P = seed_pool(pool, "pool must have shape (k_prime, 2), k_prime >= 1");
            const uint64_t k_prime = static_cast<uint64_t>(P.shape(0));
            const i64_array x = hash_items(items);
            const size_t n = static_cast<size_t>(x.size());
            auto indices = new_array<int64_t>(n), values = new_array<int64_t>(n);
            const int64_t* in = x.data();
            const uint64_t* pl = P.data();
            int64_t* j = indices.mutable_data();
            int64_t* v = values.mutable_data();
            with_family_nogil(h, [&](auto& family) { ldp::flh_privatize(family, kernel, pl, k_prime, in, j, v, n, threads); });
            return py::make_tuple(indices, values);
        },
        py::arg("gen"), py::arg("items"), py::arg("pool"), py::arg("g"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "FLH clients (Cormode, Maddock & Maple 2021): per item a secret uniform index j into the public\n"
        "pool of seeds and the bucket h_pool[j](fmix32(x)) by exact g-ary randomized response. Returns (indices,\n"
        "values), both int64.");
    m.def(
        "olh_support",
        [](const py::array& seeds, const py::array& values, uint64_t g, uint64_t domain_size, unsigned threads) {
            ldp::HashFamily::check_buckets(g);
            check_domain(domain_size);
            const auto S = exact_array<uint64_t>(seeds, 2, "seeds");
            const auto V = exact_array<int64_t>(values, 1, "values");
            if (S.shape(1) != 2 || S.shape(0) != V.shape(0)) throw std::invalid_argument("seeds must have shape (n, 2) for n values");
            const size_t n = static_cast<size_t>(V.shape(0));
            check_below(V.data(), n, g, "values out of range");
            auto support = new_array<int64_t>(domain_size);
            int64_t* out = support.mutable_data();
            std::fill(out, out + domain_size, int64_t{0});
            const uint64_t* s = S.data();
            const int64_t* v = V.data();
            {
                py::gil_scoped_release release;
                ldp::olh_support(s, v, n, g, domain_size, out, threads);
            }
            return support;
        },
        py::arg("seeds"), py::arg("values"), py::arg("g"), py::arg("domain_size"), py::arg("threads"),
        "OLH support counts: for each item x < domain_size, the number of reports whose value equals\n"
        "h_seed(x). O(n domain_size) hash tests in blocks of items, O(n) scratch.");
    m.def(
        "flh_support",
        [](const py::array& counts, const py::array& pool, uint64_t domain_size, unsigned threads) {
            check_domain(domain_size);
            const auto C = exact_array<int64_t>(counts, 2, "counts");
            const char* shapes = "counts must have shape (k_prime, g) for a pool of shape (k_prime, 2)";
            const auto P = seed_pool(pool, shapes);
            if (P.shape(0) != C.shape(0)) throw std::invalid_argument(shapes);
            const uint64_t k_prime = static_cast<uint64_t>(P.shape(0)), g = static_cast<uint64_t>(C.shape(1));
            ldp::HashFamily::check_buckets(g);
            auto support = new_array<int64_t>(domain_size);
            int64_t* out = support.mutable_data();
            const int64_t* c = C.data();
            const uint64_t* p = P.data();
            {
                py::gil_scoped_release release;
                ldp::flh_support(c, p, k_prime, g, domain_size, out, threads);
            }
            return support;
        },
        py::arg("counts"), py::arg("pool"), py::arg("domain_size"), py::arg("threads"),
        "FLH support counts: support[x] = sum_j counts[j, h_pool[j](x)]. O(k_prime domain_size).");
    m.def(
        "local_hash",
        [](const py::array& seeds, const py::array& items, uint64_t g, bool scramble) {
            ldp::HashFamily::check_buckets(g);
            const auto S = exact_array<uint64_t>(seeds, 2, "seeds");
            const i64_array x = hash_items(items);
            if (S.shape(1) != 2 || S.shape(0) != x.shape(0)) throw std::invalid_argument("seeds must have shape (n, 2) for n items");
            auto out = new_array<int64_t>(static_cast<size_t>(x.shape(0)));
            int64_t* o = out.mutable_data();
            const uint64_t* s = S.data();
            const int64_t* in = x.data();
            const py::ssize_t n = x.shape(0);
            {
                py::gil_scoped_release release;  // the loop touches only the arrays' buffers
                for (py::ssize_t i = 0; i < n; ++i) {
                    const uint64_t key = scramble ? ldp::HashFamily::scramble(static_cast<uint64_t>(in[i])) : static_cast<uint64_t>(in[i]);
                    o[i] = static_cast<int64_t>(ldp::HashFamily::bucket(ldp::HashSeed{s[2 * i], s[2 * i + 1]}, key, g));
                }
            }
            return out;
        },
        py::arg("seeds"), py::arg("items"), py::arg("g"), py::arg("scramble") = false,
        "The local-hashing bucket h_(a,b)(k) = (((a k + b) mod 2^64 >> 32) g) >> 32 of each (seed, item)\n"
        "pair, k = x (OLH) or k = fmix32(x) (scramble=True, FLH).");
}

DPNOISE_LDP_AREA(hashing, register_ldp_hashing);

}  // namespace dpnoise::bindings
