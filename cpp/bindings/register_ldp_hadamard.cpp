// Bindings of the local-DP Hadamard-family protocols (dpnoise/ldp/): glue only (convert,
// check shapes, release the GIL, call). The policy is in cpp/include/dpnoise/ldp/.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "constant_time_glue.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/ldp/count_mean_sketch.hpp"
#include "dpnoise/ldp/hadamard_response.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"

namespace dpnoise::bindings {

namespace {

// A writable, C-contiguous int64 state of exactly the given shape, modified in place.
int64_t* inplace_int64(py::array& a, uint64_t size, const char* name) {
    int64_t* p = inplace_array<int64_t>(a, 1, name);
    if (static_cast<uint64_t>(a.size()) != size)
        throw std::invalid_argument(std::string(name) + " must be a writable contiguous int64 array of the state's size");
    return p;
}
int64_t* inplace_table(py::array& a, uint64_t k, uint64_t m, const char* name) {
    int64_t* p = inplace_array<int64_t>(a, 2, name);
    if (static_cast<uint64_t>(a.shape(0)) != k || static_cast<uint64_t>(a.shape(1)) != m)
        throw std::invalid_argument(std::string(name) + " must be a writable contiguous int64 (hashes, width) array");
    return p;
}

unsigned log2_exact(uint64_t D, const char* name) {
    if (!ldp::is_power_of_two(D)) throw std::invalid_argument(std::string(name) + " must be a power of two");
    return static_cast<unsigned>(__builtin_ctzll(D));
}

// rows (n int64) and packed bits (ceil(n/8) uint8) of one batch, shapes checked.
void check_batch_shapes(const i64_array& rows, const u8_array& bits, size_t n) {
    if (rows.ndim() != 1 || static_cast<size_t>(rows.size()) != n)
        throw std::invalid_argument("hadamard reports: 'rows' must hold one int64 per report");
    if (bits.ndim() != 1 || static_cast<size_t>(bits.size()) != (n + 7) / 8)
        throw std::invalid_argument("hadamard reports: 'bits' must hold ceil(n/8) packed bytes");
}

// A CMS batch: n hash indices and an (n, width/8) matrix of packed signs, shapes checked.
struct CmsBatch {
    const int64_t* index;
    const uint8_t* vectors;
};
CmsBatch cms_batch(const i64_array& index, const u8_array& vectors, size_t n, uint64_t width) {
    if (static_cast<size_t>(index.size()) != n || vectors.ndim() != 2 || static_cast<size_t>(vectors.shape(0)) != n ||
        static_cast<uint64_t>(vectors.shape(1)) != width / 8)
        throw std::invalid_argument("cms reports: wrong shapes");
    return {index.data(), vectors.data()};
}

// An HCMS batch: n hash indices, n coefficients and ceil(n/8) packed bits, shapes checked.
struct HcmsBatch {
    const int64_t* index;
    const int64_t* coefficient;
    const uint8_t* bits;
};
HcmsBatch hcms_batch(const i64_array& index, const i64_array& coefficient, const u8_array& bits, size_t n) {
    if (static_cast<size_t>(index.size()) != n || static_cast<size_t>(coefficient.size()) != n ||
        static_cast<size_t>(bits.size()) != (n + 7) / 8)
        throw std::invalid_argument("hcms reports: wrong shapes");
    return {index.data(), coefficient.data(), bits.data()};
}

// The (hashes, width) of a 2-D sketch state (0 x 0 for another shape: refused by inplace_table).
std::pair<uint64_t, uint64_t> table_shape(const py::array& a) {
    if (a.ndim() != 2) return {0, 0};
    return {static_cast<uint64_t>(a.shape(0)), static_cast<uint64_t>(a.shape(1))};
}

void check_nonnegative_items(const i64_array& items) {
    if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
    check_below(items, UINT64_MAX, "items must be non-negative");
}

// The sketch clients' common input: the public hash family (32-byte key, k hashes, width m) and
// the items, 1-D and non-negative.
struct SketchClients {
    ldp::SketchHashes hashes;
    const int64_t* items;
    size_t n;
};
SketchClients sketch_clients(const py::bytes& public_key, uint64_t hashes, uint64_t width, const i64_array& items) {
    ldp::SketchHashes hs(key_from_bytes(public_key, "public_key"), hashes, width);
    check_nonnegative_items(items);
    return {hs, items.data(), static_cast<size_t>(items.size())};
}

// A sketch client entry point (gen, items, public_key, hashes, width, gamma_num, gamma_den, threads):
// the clients are checked first (sketch_clients), then body(gen, clients, gamma_num, gamma_den, threads).
template <class Body>
void def_sketch_client(py::module_& m, const char* name, Body body, const char* doc) {
    m.def(
        name,
        [body](GeneratorHandle& h, const i64_array& items, const py::bytes& public_key, uint64_t hashes, uint64_t width,
               const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            return body(h, sketch_clients(public_key, hashes, width, items), gamma_num, gamma_den, threads);
        },
        py::arg("gen"), py::arg("items"), py::arg("public_key"), py::arg("hashes"), py::arg("width"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"), doc);
}

using exact::ct::RandomizedResponseTable;

// the sketch's public hash family, checked as the default client checks it
exact::ct::SketchHashCT sketch_hash(const py::bytes& public_key, uint64_t hashes, uint64_t width) {
    const random::StreamKey key = key_from_bytes(public_key, "public_key");
    (void)ldp::SketchHashes(key, hashes, width);  // the range checks of hashes and width
    return exact::ct::SketchHashCT{key, hashes, width};
}

// A sketch client (gen, items, public_key, hashes, width, gamma_num, gamma_den, threads): the hash
// family and the k = 2 table (at γ/2 when halved: CMS, Apple 2017 Algorithm 1) built and checked
// before body(gen, call, threads) draws anything.
struct SketchCall {
    exact::ct::SketchHashCT hash;
    std::shared_ptr<const RandomizedResponseTable> table;
    const int64_t* items;
    size_t n;
};
template <class Body>
void def_sketch_ct(py::module_& m, const char* name, bool halved, Body body, const char* doc) {
    m.def(
        name,
        [body, halved](GeneratorHandle& h, const i64_array& items, const py::bytes& public_key, uint64_t hashes,
                       uint64_t width, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const SketchCall call{sketch_hash(public_key, hashes, width), binary_table(exact_gamma(gamma_num, gamma_den), halved),
                                  items_1d(items), static_cast<size_t>(items.size())};
            return body(h, call, threads);
        },
        py::arg("gen"), py::arg("items").noconvert(), py::arg("public_key"), py::arg("hashes"), py::arg("width"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"), doc);
}

}  // namespace

static void register_ldp_hadamard(py::module_& m) {
    m.def(
        "hadamard_privatize",
        [](GeneratorHandle& h, const i64_array& items, uint64_t padded_size, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            const unsigned t = log2_exact(padded_size, "padded_size");
            const exact::RandomizedResponseKernel kernel = rr_kernel(2, gamma_num, gamma_den);
            const ldp::HadamardResponse hr(t, kernel);
            if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
            const size_t n = static_cast<size_t>(items.size());
            const int64_t* in = items.data();
            check_below(in, n, padded_size, "items must be in [0, padded_size)");
            auto rows = new_array<int64_t>(n);
            auto bits = new_array<uint8_t>((n + 7) / 8);
            int64_t* r = rows.mutable_data();
            uint8_t* b = bits.mutable_data();
            with_family_nogil(h, [&](auto& family) { ldp::hadamard_privatize(family, hr, in, r, b, n, threads); });
            return py::make_tuple(rows, bits);
        },
        py::arg("gen"), py::arg("items"), py::arg("padded_size"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "1-bit Hadamard response: per item x a secret uniform row j in [0, padded_size) and the bit\n"
        "H[j, x] = popcount(j & x) mod 2 kept with probability e^g/(e^g + 1) (g = gamma_num/gamma_den),\n"
        "else flipped, exactly. Returns (rows int64, bits uint8 packed little-endian, ceil(n/8) bytes).");

    m.def(
        "hadamard_check_reports",
        [](const i64_array& rows, const u8_array& bits, size_t n, uint64_t padded_size) {
            check_batch_shapes(rows, bits, n);
            const int64_t* r = rows.data();
            const uint8_t* b = bits.data();
            py::gil_scoped_release release;
            ldp::hadamard_check_reports(r, b, n, padded_size);
        },
        py::arg("rows"), py::arg("bits"), py::arg("n"), py::arg("padded_size"),
        "Raises ValueError unless every row is in [0, padded_size) and the packed bits have zero padding.");

    m.def(
        "hadamard_accumulate",
        [](py::array& row_sums, const i64_array& rows, const u8_array& bits, size_t n) {
            const uint64_t D = static_cast<uint64_t>(row_sums.size());
            int64_t* s = inplace_int64(row_sums, D, "row_sums");
            check_batch_shapes(rows, bits, n);
            const int64_t* r = rows.data();
            const uint8_t* b = bits.data();
            py::gil_scoped_release release;
            ldp::hadamard_accumulate(s, D, r, b, n);
        },
        py::arg("row_sums"), py::arg("rows"), py::arg("bits"), py::arg("n"),
        "row_sums[j] += sum of the +-1 reports of row j (in place), after checking the whole batch.");

    m.def(
        "walsh_hadamard_transform",
        [](const i64_array& values) {
            if (values.ndim() != 1) throw std::invalid_argument("values must be a 1-D array");
            const uint64_t D = static_cast<uint64_t>(values.size());
            (void)log2_exact(D, "the length of values");
            auto out = new_array<int64_t>(D);
            int64_t* o = out.mutable_data();
            const int64_t* in = values.data();
            {
                py::gil_scoped_release release;
                std::copy(in, in + D, o);
                ldp::walsh_hadamard_transform(o, D);
            }
            return out;
        },
        py::arg("values"),
        "The Walsh-Hadamard transform out[x] = sum_j values[j] (-1)^popcount(j & x), exact in int64\n"
        "(the caller keeps sum |values| below 2^63).");
    // ---------------------------------------------------------------- cms and hcms
    def_sketch_client(
        m, "cms_privatize",
        [](GeneratorHandle& h, const SketchClients& c, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const exact::RandomizedResponseKernel flip = *KeptKernels<exact::RandomizedResponseKernel>::get(
                kernel_key(1, 2, gamma), [&] { return ldp::cms_sign_kernel(gamma.num, gamma.den); });
            auto index = new_array<int64_t>(c.n);
            auto vectors = new_array<uint8_t>(c.n, c.hashes.width() / 8);
            int64_t* ix = index.mutable_data();
            uint8_t* v = vectors.mutable_data();
            with_family_nogil(h, [&](auto& f) { ldp::cms_privatize(f, c.hashes, flip, c.items, ix, v, c.n, threads); });
            return py::make_tuple(index, vectors);
        },
        "Count-mean sketch clients (Apple 2017, Alg. 1): (hash_index int64, vectors uint8 (n, width/8)),\n"
        "each sign flipped with probability 1/(e^(g/2) + 1), exactly (the core halves g).");

    def_sketch_client(
        m, "hcms_privatize",
        [](GeneratorHandle& h, const SketchClients& c, const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const exact::RandomizedResponseKernel rr = rr_kernel(2, gamma_num, gamma_den);
            auto index = new_array<int64_t>(c.n), coefficient = new_array<int64_t>(c.n);
            auto bits = new_array<uint8_t>((c.n + 7) / 8);
            int64_t* ix = index.mutable_data();
            int64_t* cf = coefficient.mutable_data();
            uint8_t* b = bits.mutable_data();
            with_family_nogil(h, [&](auto& f) { ldp::hcms_privatize(f, c.hashes, rr, c.items, ix, cf, b, c.n, threads); });
            return py::make_tuple(index, coefficient, bits);
        },
        "Hadamard count-mean sketch clients (Apple 2017, Alg. 3): (hash_index, coefficient, bits packed),\n"
        "the bit H[a, h_l(x)] kept with probability e^g/(e^g + 1), exactly.");

    m.def(
        "cms_check_reports",
        [](const i64_array& index, const u8_array& vectors, size_t n, uint64_t hashes, uint64_t width) {
            const CmsBatch b = cms_batch(index, vectors, n, width);
            py::gil_scoped_release release;
            ldp::cms_check_reports(b.index, n, hashes);
        },
        py::arg("hash_index"), py::arg("vectors"), py::arg("n"), py::arg("hashes"), py::arg("width"));

    m.def(
        "cms_accumulate",
        [](py::array& signs, py::array& users, const i64_array& index, const u8_array& vectors, size_t n) {
            const auto [k, w] = table_shape(signs);
            int64_t* T = inplace_table(signs, k, w, "signs");
            int64_t* N = inplace_int64(users, k, "users");
            const CmsBatch b = cms_batch(index, vectors, n, w);
            py::gil_scoped_release release;
            ldp::cms_accumulate(T, N, k, w, b.index, b.vectors, n);
        },
        py::arg("signs"), py::arg("users"), py::arg("hash_index"), py::arg("vectors"), py::arg("n"));

    m.def(
        "hcms_check_reports",
        [](const i64_array& index, const i64_array& coefficient, const u8_array& bits, size_t n, uint64_t hashes,
           uint64_t width) {
            const HcmsBatch b = hcms_batch(index, coefficient, bits, n);
            py::gil_scoped_release release;
            ldp::hcms_check_reports(b.index, b.coefficient, b.bits, n, hashes, width);
        },
        py::arg("hash_index"), py::arg("coefficient"), py::arg("bits"), py::arg("n"), py::arg("hashes"),
        py::arg("width"));

    m.def(
        "hcms_accumulate",
        [](py::array& bit_sums, const i64_array& index, const i64_array& coefficient, const u8_array& bits, size_t n) {
            const auto [k, w] = table_shape(bit_sums);
            int64_t* T = inplace_table(bit_sums, k, w, "bit_sums");
            const HcmsBatch b = hcms_batch(index, coefficient, bits, n);
            py::gil_scoped_release release;
            ldp::hcms_accumulate(T, k, w, b.index, b.coefficient, b.bits, n);
        },
        py::arg("bit_sums"), py::arg("hash_index"), py::arg("coefficient"), py::arg("bits"), py::arg("n"));

    m.def(
        "sketch_gather",
        [](const py::bytes& public_key, uint64_t hashes, uint64_t width, const i64_array& table, uint64_t d,
           bool transform_rows) {
            const ldp::SketchHashes hs(key_from_bytes(public_key, "public_key"), hashes, width);
            if (table.ndim() != 2 || static_cast<uint64_t>(table.shape(0)) != hashes ||
                static_cast<uint64_t>(table.shape(1)) != width)
                throw std::invalid_argument("table must have shape (hashes, width)");
            auto out = new_array<int64_t>(d);
            int64_t* o = out.mutable_data();
            const int64_t* t = table.data();
            {
                py::gil_scoped_release release;
                if (transform_rows) {  // HCMS: each row through the Walsh–Hadamard transform first
                    std::vector<int64_t> rows(t, t + hashes * width);
                    for (uint64_t l = 0; l < hashes; ++l) ldp::walsh_hadamard_transform(rows.data() + l * width, width);
                    ldp::sketch_gather(hs, rows.data(), d, o);
                } else {
                    ldp::sketch_gather(hs, t, d, o);
                }
            }
            return out;
        },
        py::arg("public_key"), py::arg("hashes"), py::arg("width"), py::arg("table"), py::arg("d"),
        py::arg("transform_rows"),
        "G(x) = sum_l T'[l, h_l(x)] for x in [0, d), T' = table or its row-wise Walsh-Hadamard transform.");

    m.def(
        "sketch_hash",
        [](const py::bytes& public_key, uint64_t hashes, uint64_t width, uint64_t l, const i64_array& items) {
            const ldp::SketchHashes hs(key_from_bytes(public_key, "public_key"), hashes, width);
            if (l >= hashes) throw std::invalid_argument("hash index must be in [0, hashes)");
            check_nonnegative_items(items);
            auto out = new_array<int64_t>(static_cast<size_t>(items.size()));
            int64_t* o = out.mutable_data();
            const int64_t* in = items.data();
            const py::ssize_t n = items.size();
            {
                py::gil_scoped_release release;
                for (py::ssize_t i = 0; i < n; ++i) o[i] = static_cast<int64_t>(hs(l, static_cast<uint64_t>(in[i])));
            }
            return out;
        },
        py::arg("public_key"), py::arg("hashes"), py::arg("width"), py::arg("l"), py::arg("items"),
        "The public hash values h_l(x) of the sketch family (tests, documentation).");
    // The constant-time variants (dpnoise/ldp/constant_time/randomizers.hpp; docs/security.md).
    m.def(
        "hadamard_constant_time",
        [](GeneratorHandle& h, const i64_array& items, uint64_t padded_size, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            if (!ldp::is_power_of_two(padded_size) || padded_size > (uint64_t{1} << 40))
                throw std::invalid_argument("padded_size must be a power of two, at most 2^40");
            const unsigned t = static_cast<unsigned>(__builtin_ctzll(padded_size));
            const auto table = binary_table(exact_gamma(gamma_num, gamma_den), false);
            const int64_t* in = items_1d(items);
            const size_t n = static_cast<size_t>(items.size());
            auto rows = new_array<int64_t>(n);
            auto bits = new_array<uint8_t>((n + 7) / 8);
            int64_t* r = rows.mutable_data();
            uint8_t* b = bits.mutable_data();
            with_family_nogil(h, [&](auto& f) { exact::ct::hadamard_constant_time(f, *table, t, in, r, b, n, threads); });
            return py::make_tuple(rows, bits);
        },
        py::arg("gen"), py::arg("items").noconvert(), py::arg("padded_size"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "1-bit Hadamard response in constant time: (rows int64, bits uint8 packed little-endian).");
    def_sketch_ct(m, "cms_constant_time", true, [](GeneratorHandle& h, const SketchCall& c, unsigned threads) {
        auto index = new_array<int64_t>(c.n);
        auto vectors = new_array<uint8_t>(c.n, static_cast<size_t>(c.hash.width / 8));
        int64_t* l = index.mutable_data();
        uint8_t* v = vectors.mutable_data();
        with_family_nogil(h, [&](auto& f) { exact::ct::cms_constant_time(f, c.hash, *c.table, c.items, l, v, c.n, threads); });
        return py::make_tuple(index, vectors);
    }, "Count-mean sketch clients in constant time: (hash_index int64, vectors (n, width/8) uint8, bit 1 = -1).");
    def_sketch_ct(m, "hcms_constant_time", false, [](GeneratorHandle& h, const SketchCall& c, unsigned threads) {
        auto index = new_array<int64_t>(c.n);
        auto coefficient = new_array<int64_t>(c.n);
        auto bits = new_array<uint8_t>((c.n + 7) / 8);
        int64_t* l = index.mutable_data();
        int64_t* a = coefficient.mutable_data();
        uint8_t* b = bits.mutable_data();
        with_family_nogil(h, [&](auto& f) { exact::ct::hcms_constant_time(f, c.hash, *c.table, c.items, l, a, b, c.n, threads); });
        return py::make_tuple(index, coefficient, bits);
    }, "Hadamard count-mean sketch clients in constant time: (hash_index, coefficient int64, bits uint8 packed).");
}

DPNOISE_LDP_AREA(hadamard, register_ldp_hadamard);

}  // namespace dpnoise::bindings
