// Bindings of the local-DP heavy-hitters kernels (dpnoise/ldp/heavy_hitters.hpp): glue only
// (convert, release the GIL, call). Arguments are checked with the GIL held, before any
// randomness is drawn; messages never echo an item or a report.
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/hash_family64.hpp"
#include "dpnoise/ldp/heavy_hitters.hpp"

namespace dpnoise::bindings {

namespace {

// The public pool of 128-bit hash seeds: (size, 4) uint64, size >= 1.
u64_array pool_array(const py::array& pool) {
    auto P = exact_array<uint64_t>(pool, 2, "pool");
    if (P.shape(1) != 4 || P.shape(0) < 1) throw std::invalid_argument("pool must have shape (size, 4), size >= 1");
    return P;
}

// The support kernels' glue: counts (k_prime, g) (ndim 2) or (G, k_prime, g) (ndim 3), the
// pool and the keys checked with the GIL held; kernel(counts, G, pool, k_prime, g, keys, m, out)
// runs without it. Returns (m,) or (G, m) int64.
template <class Kernel>
py::array_t<int64_t> support_of(const py::array& counts, int ndim, const py::array& pool, const py::array& keys,
                                Kernel&& kernel) {
    const auto C = exact_array<int64_t>(counts, ndim, "counts");
    const auto P = pool_array(pool);
    const py::ssize_t kp = C.shape(ndim - 2);
    if (kp < 1 || kp > P.shape(0))
        throw std::invalid_argument("counts must have shape (..., k_prime, g), 1 <= k_prime <= pool size");
    const uint64_t k_prime = static_cast<uint64_t>(kp), g = static_cast<uint64_t>(C.shape(ndim - 1));
    ldp::HashFamily64::check_buckets(g);
    const u64_array K = unsigned_keys(keys, "keys");
    const size_t m = static_cast<size_t>(K.size());
    const size_t G = ndim == 3 ? static_cast<size_t>(C.shape(0)) : 1;
    auto support = ndim == 3 ? new_array<int64_t>(G, m) : new_array<int64_t>(m);
    const int64_t* c = C.data();
    const uint64_t* p = P.data();
    const uint64_t* k = K.data();
    int64_t* out = support.mutable_data();
    {
        py::gil_scoped_release release;
        kernel(c, G, p, k_prime, g, k, m, out);
    }
    return support;
}

}  // namespace

static void register_ldp_heavy_hitters(py::module_& m) {
    m.def(
        "hh_privatize",
        [](GeneratorHandle& h, const py::array& items, const py::object& aux, const std::vector<std::tuple<uint64_t, uint32_t, uint32_t, uint64_t>>& groups,
           const py::array& pool, uint64_t g, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            ldp::HashFamily64::check_buckets(g);
            const exact::RandomizedResponseKernel kernel = rr_kernel(g, gamma_num, gamma_den);
            const auto P = pool_array(pool);
            std::vector<ldp::HeavyHitterGroup> specs;
            bool needs_aux = false;
            for (const auto& [w, kind, shift, kp] : groups) {
                specs.push_back(ldp::HeavyHitterGroup{w, kind, shift, kp});
                needs_aux = needs_aux || kind == 1;
            }
            ldp::HeavyHitters::check_groups(specs, static_cast<uint64_t>(P.shape(0)));
            const u64_array x = unsigned_keys(items, "items");
            const size_t n = static_cast<size_t>(x.size());
            u64_array A;
            const uint64_t* ap = nullptr;
            if (needs_aux) {
                if (aux.is_none()) throw std::invalid_argument("aux (the public buckets) is required by a bit group");
                A = unsigned_keys(aux.cast<py::array>(), "aux");
                if (static_cast<size_t>(A.size()) != n) throw std::invalid_argument("aux must have one bucket per item");
                ap = A.data();
            }
            auto og = new_array<int64_t>(n), oj = new_array<int64_t>(n), ov = new_array<int64_t>(n);
            const uint64_t* in = x.data();
            const uint64_t* pl = P.data();
            const uint64_t psize = static_cast<uint64_t>(P.shape(0));
            int64_t* pg = og.mutable_data();
            int64_t* pj = oj.mutable_data();
            int64_t* pv = ov.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                ldp::hh_privatize(family, kernel, specs, pl, psize, in, ap, pg, pj, pv, n, threads);
            });
            return py::make_tuple(og, oj, ov);
        },
        py::arg("gen"), py::arg("items"), py::arg("aux"), py::arg("groups"), py::arg("pool"), py::arg("g"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "Heavy-hitters clients: per item a secret group l (probability weight_l / W; groups are\n"
        "(cum_weight, kind, shift, k_prime) tuples), a secret uniform pool index j < k_prime_l, and the\n"
        "bucket h_pool[j](key_l(x)) in [0, g) by exact g-ary randomized response with gamma =\n"
        "gamma_num/gamma_den. key = x >> shift (kind 0) or 2 aux + ((x >> shift) & 1) (kind 1).\n"
        "Returns (groups, indices, values), int64.");
    m.def(
        "hh_support",
        [](const py::array& counts, const py::array& pool, const py::array& keys, unsigned threads) {
            return support_of(counts, 2, pool, keys, [threads](const int64_t* c, size_t, const uint64_t* p, uint64_t kp, uint64_t g,
                                                              const uint64_t* k, size_t m, int64_t* out) {
                ldp::hh_support(c, p, kp, g, k, m, out, threads);
            });
        },
        py::arg("counts"), py::arg("pool"), py::arg("keys"), py::arg("threads"),
        "Support of candidate keys in one heavy-hitters group: support[i] = sum_j counts[j, h_pool[j](keys[i])].\n"
        "O(k_prime m).");
    m.def(
        "hh_support_groups",
        [](const py::array& counts, const py::array& pool, const py::array& keys, unsigned threads) {
            return support_of(counts, 3, pool, keys, [threads](const int64_t* c, size_t G, const uint64_t* p, uint64_t kp, uint64_t g,
                                                              const uint64_t* k, size_t m, int64_t* out) {
                ldp::hh_support_groups(c, G, p, kp, g, k, m, out, threads);
            });
        },
        py::arg("counts"), py::arg("pool"), py::arg("keys"), py::arg("threads"),
        "Support of the same keys in G groups sharing k_prime, g and the pool (counts (G, k_prime, g)):\n"
        "support[l, i] = sum_j counts[l, j, h_pool[j](keys[i])], each (seed, key) hashed once for all groups.\n"
        "O(k_prime m) hash evaluations and O(G k_prime m) additions; returns (G, m) int64.");
    m.def(
        "hh_hash",
        [](const py::array& pool, const py::array& indices, const py::array& keys, uint64_t g) {
            ldp::HashFamily64::check_buckets(g);
            const auto P = pool_array(pool);
            const u64_array J = unsigned_keys(indices, "indices");
            const u64_array K = unsigned_keys(keys, "keys");
            if (J.size() != K.size()) throw std::invalid_argument("indices and keys must have the same length");
            check_below(J, static_cast<uint64_t>(P.shape(0)), "indices must be below the pool size");
            auto out = new_array<int64_t>(static_cast<size_t>(K.size()));
            int64_t* o = out.mutable_data();
            const uint64_t* pp = P.data();
            const uint64_t* jp = J.data();
            const uint64_t* kp = K.data();
            const size_t m = static_cast<size_t>(K.size());
            {
                py::gil_scoped_release release;
                for (size_t i = 0; i < m; ++i)
                    o[i] = static_cast<int64_t>(ldp::HashFamily64::bucket(ldp::HashFamily64::seed(pp + 4 * jp[i]), kp[i], g));
            }
            return out;
        },
        py::arg("pool"), py::arg("indices"), py::arg("keys"), py::arg("g"),
        "The heavy-hitters bucket h_pool[j](k) = (H(fmix64(k)) g) >> 64, H(x) = ((a x + b) mod 2^128) >> 64,\n"
        "for each (index, key) pair.");
}

DPNOISE_LDP_AREA(heavy_hitters, register_ldp_heavy_hitters);

}  // namespace dpnoise::bindings
