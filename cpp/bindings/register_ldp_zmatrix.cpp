// Bindings of the local-DP zmatrix protocol (dpnoise/ldp/zmatrix_oracle.hpp): glue only (convert,
// check shapes with the GIL held, release the GIL, call). Messages never echo items.
#include <string>

#include "bindings.hpp"
#include "dpnoise/ldp/constant_time/zmatrix.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/ldp/zmatrix_oracle.hpp"

namespace dpnoise::bindings {

namespace {

ldp::PublicSignMatrix public_matrix(const py::bytes& key) { return ldp::PublicSignMatrix(key_from_bytes(key, "public_key")); }

// The state arrays as a writable view: sign (nwords,), magnitude (planes, nwords), both uint64.
ldp::ColumnSums column_sums(py::array& sign, py::array& magnitude) {
    if (!sign.dtype().is(py::dtype::of<uint64_t>()) || !magnitude.dtype().is(py::dtype::of<uint64_t>()) ||
        !sign.writeable() || !magnitude.writeable())
        throw std::invalid_argument("zmatrix state: sign and magnitude must be writeable uint64 arrays");
    if (sign.ndim() != 1 || magnitude.ndim() != 2 || magnitude.shape(1) != sign.shape(0) || magnitude.shape(0) < 1 ||
        magnitude.shape(0) > 62 || !(sign.flags() & py::array::c_style) || !(magnitude.flags() & py::array::c_style))
        throw std::invalid_argument("zmatrix state: sign must be (nwords,) and magnitude (planes, nwords), C-contiguous");
    return ldp::ColumnSums{static_cast<uint64_t*>(sign.mutable_data()), static_cast<uint64_t*>(magnitude.mutable_data()),
                           static_cast<unsigned>(magnitude.shape(0)), static_cast<size_t>(sign.shape(0))};
}

void same_length(const py::array& a, const py::array& b, const char* what) {
    if (a.ndim() != 1 || b.ndim() != 1 || a.shape(0) != b.shape(0)) throw std::invalid_argument(what);
}

// Reports for (items, columns): checks the shapes, the columns' dtype and the items' range (with
// the GIL held), then run(family, Z, x, c, y, n) without it; int8 ±1 per report.
template <class Run>
py::array_t<int8_t> privatize_reports(GeneratorHandle& h, const i64_array& items, const py::array& columns,
                                      uint64_t domain, const py::bytes& key, Run&& run) {
    same_length(items, columns, "items and columns must be 1-D arrays of the same length");
    const auto C = exact_array<uint64_t>(columns, 1, "columns");
    const ldp::PublicSignMatrix Z = public_matrix(key);
    const size_t n = static_cast<size_t>(items.shape(0));
    const int64_t* x = items.data();
    check_below(x, n, domain, "items must be in [0, domain_size)");
    auto out = new_array<int8_t>(n);
    int8_t* y = out.mutable_data();
    const uint64_t* c = C.data();
    with_family_nogil(h, [&](auto& family) { run(family, Z, x, c, y, n); });
    return out;
}

}  // namespace

static void register_ldp_zmatrix(py::module_& m) {
    m.def(
        "zmatrix_privatize",
        [](GeneratorHandle& h, const i64_array& items, const py::array& columns, uint64_t domain, const py::bytes& key,
           const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const exact::RandomizedResponseKernel kernel = rr_kernel(2, gamma_num, gamma_den);
            return privatize_reports(h, items, columns, domain, key, [&](auto& family, const ldp::PublicSignMatrix& Z,
                                                                         const int64_t* x, const uint64_t* c, int8_t* y,
                                                                         size_t n) {
                ldp::zmatrix_privatize(family, kernel, Z, domain, x, c, y, n, threads);
            });
        },
        py::arg("gen"), py::arg("items"), py::arg("columns"), py::arg("domain_size"), py::arg("public_key"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "zmatrix client: y = Z[item, column] kept with probability e^g/(e^g+1), else negated (exact).");

    m.def(
        "zmatrix_privatize_constant_time",
        [](GeneratorHandle& h, const i64_array& items, const py::array& columns, uint64_t domain, const py::bytes& key,
           const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const auto table = exact::ct::cached_table(2, gamma.num, gamma.den);  // before any draw
            return privatize_reports(h, items, columns, domain, key, [&](auto& family, const ldp::PublicSignMatrix& Z,
                                                                         const int64_t* x, const uint64_t* c, int8_t* y,
                                                                         size_t n) {
                exact::ct::zmatrix_privatize_constant_time(family, *table, Z.key(), x, c, y, n, threads);
            });
        },
        py::arg("gen"), py::arg("items"), py::arg("columns"), py::arg("domain_size"), py::arg("public_key"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "zmatrix client in constant time (ldp/constant_time/zmatrix.hpp): the entry Z[item, column] from one\n"
        "ChaCha20 block and a scan, kept/flipped by the constant-time binary randomized response.");

    m.def(
        "zmatrix_entry_bits",
        [](const py::bytes& key, const i64_array& rows, const py::array& columns, uint64_t domain, bool use_table) {
            same_length(rows, columns, "rows and columns must be 1-D arrays of the same length");
            const auto C = exact_array<uint64_t>(columns, 1, "columns");
            const ldp::PublicSignMatrix Z = public_matrix(key);
            const size_t n = static_cast<size_t>(rows.shape(0));
            check_below(rows.data(), n, domain, "rows must be in [0, domain_size)");
            auto out = new_array<uint8_t>(n);
            uint8_t* o = out.mutable_data();
            {
                py::gil_scoped_release release;
                ldp::zmatrix_entry_bits(Z, domain, rows.data(), C.data(), o, n, use_table);
            }
            return out;
        },
        py::arg("public_key"), py::arg("rows"), py::arg("columns"), py::arg("domain_size"), py::arg("use_table"),
        "The client's path to bits of Z (1 for -1): a table of row seeds or one ChaCha20 block per entry.");

    m.def(
        "zmatrix_words",
        [](const py::bytes& key, uint64_t row0, uint64_t nrows, uint64_t word0, uint64_t nwords) {
            if (nrows > (uint64_t{1} << 20) || nwords > (uint64_t{1} << 20) || nrows * nwords > (uint64_t{1} << 26))
                throw std::invalid_argument("zmatrix_words: block too large");
            const ldp::PublicSignMatrix Z = public_matrix(key);
            auto out = new_array<uint64_t>(static_cast<size_t>(nrows), static_cast<size_t>(nwords));
            uint64_t* o = out.mutable_data();
            {
                py::gil_scoped_release release;
                std::vector<uint64_t> seeds(static_cast<size_t>(nrows));
                Z.row_seeds(row0, seeds.data(), seeds.size());
                for (uint64_t r = 0; r < nrows; ++r)
                    for (uint64_t w = 0; w < nwords; ++w) o[r * nwords + w] = ldp::PublicSignMatrix::word(seeds[r], word0 + w);
            }
            return out;
        },
        py::arg("public_key"), py::arg("row0"), py::arg("nrows"), py::arg("word0"), py::arg("nwords"),
        "Words of the public matrix Z as the server generates them (rows x 64-column words).");

    m.def(
        "zmatrix_accumulate",
        [](py::array& sign, py::array& magnitude, const py::array& columns, const py::array& y) {
            same_length(columns, y, "columns and y must be 1-D arrays of the same length");
            const auto C = exact_array<uint64_t>(columns, 1, "columns");
            const auto Y = exact_array<int8_t>(y, 1, "y");
            ldp::ColumnSums s = column_sums(sign, magnitude);
            const uint64_t* c = C.data();
            const int8_t* v = Y.data();
            py::gil_scoped_release release;
            ldp::zmatrix_accumulate(s, c, v, static_cast<size_t>(C.shape(0)));
        },
        py::arg("sign"), py::arg("magnitude"), py::arg("columns"), py::arg("y"),
        "Adds reports to the packed column sums IN PLACE (pass copies: a refused batch leaves them half-updated).");

    m.def(
        "zmatrix_merge",
        [](py::array& sign, py::array& magnitude, py::array& other_sign,
           py::array& other_magnitude) {
            ldp::ColumnSums s = column_sums(sign, magnitude);
            const ldp::ColumnSums o = column_sums(other_sign, other_magnitude);
            py::gil_scoped_release release;
            ldp::zmatrix_merge(s, o);
        },
        py::arg("sign"), py::arg("magnitude"), py::arg("other_sign"), py::arg("other_magnitude"),
        "Adds other column sums IN PLACE (pass copies).");

    m.def(
        "zmatrix_sweep",
        [](const py::bytes& key, py::array& sign, py::array& magnitude, uint64_t domain,
           unsigned threads, bool allow_simd) {
            const ldp::ColumnSums s = column_sums(sign, magnitude);
            const ldp::PublicSignMatrix Z = public_matrix(key);
            auto out = new_array<int64_t>(domain);
            int64_t* o = out.mutable_data();
            {
                py::gil_scoped_release release;
                ldp::zmatrix_sweep(Z, s, domain, o, threads, allow_simd);
            }
            return out;
        },
        py::arg("public_key"), py::arg("sign"), py::arg("magnitude"), py::arg("domain_size"), py::arg("threads"),
        py::arg("allow_simd") = true,
        "S(x) = sum over columns c of s_c Z[x, c], for every x in [0, domain_size): the server's sweep\n"
        "(allow_simd=False: the scalar loop, for tests).");

    m.def(
        "zmatrix_sweep_items",
        [](const py::bytes& key, py::array& sign, py::array& magnitude, const py::array& items, uint64_t domain,
           unsigned threads, bool allow_simd) {
            const ldp::ColumnSums s = column_sums(sign, magnitude);
            const ldp::PublicSignMatrix Z = public_matrix(key);
            const u64_array X = unsigned_keys(items, "items");
            check_below(X, domain, "items must be in [0, domain_size)");
            const size_t m = static_cast<size_t>(X.size());
            auto out = new_array<int64_t>(m);
            int64_t* o = out.mutable_data();
            const uint64_t* x = X.data();
            {
                py::gil_scoped_release release;
                ldp::zmatrix_sweep_items(Z, s, x, m, o, threads, allow_simd);
            }
            return out;
        },
        py::arg("public_key"), py::arg("sign"), py::arg("magnitude"), py::arg("items"), py::arg("domain_size"),
        py::arg("threads"), py::arg("allow_simd") = true,
        "S(x) = sum over columns c of s_c Z[x, c] for the given items only (each in [0, domain_size)):\n"
        "O(len(items) W/64), independent of the domain.");
}

DPNOISE_LDP_AREA(zmatrix, register_ldp_zmatrix);

}  // namespace dpnoise::bindings
