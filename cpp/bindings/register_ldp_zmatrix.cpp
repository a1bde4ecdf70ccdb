// Bindings of the local-DP zmatrix protocol (dpnoise/ldp/zmatrix_oracle.hpp): glue only (convert,
// check shapes with the GIL held, release the GIL, call). Messages never echo items.
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/public_matrix.hpp"
#include "dpnoise/ldp/zmatrix_oracle.hpp"

namespace dpnoise::bindings {

namespace {

using i64_in = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using u64_in = py::array_t<uint64_t, py::array::c_style>;
using i8_in = py::array_t<int8_t, py::array::c_style>;

random::StreamKey public_key(const py::bytes& b) {
    const std::string s = b;
    if (s.size() != 32) throw std::invalid_argument("public_key must be exactly 32 bytes");
    random::StreamKey k;
    for (int i = 0; i < 8; ++i) {
        const auto* p = reinterpret_cast<const unsigned char*>(s.data() + 4 * i);
        k.words[i] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                     (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    }
    return k;
}

// The state arrays as a writable view: sign (nwords,), magnitude (planes, nwords), both uint64.
ldp::ColumnSums column_sums(py::array& sign, py::array& magnitude) {
    if (!sign.dtype().is(py::dtype::of<uint64_t>()) || !magnitude.dtype().is(py::dtype::of<uint64_t>()) ||
        !sign.writeable() || !magnitude.writeable())
        throw std::invalid_argument("zmatrix state: sign and magnitude must be writeable uint64 arrays");
    if (sign.ndim() != 1 || magnitude.ndim() != 2 || magnitude.shape(1) != sign.shape(0) || magnitude.shape(0) < 1 ||
        magnitude.shape(0) > 62 || !(sign.flags() & py::array::c_style) || !(magnitude.flags() & py::array::c_style))
        throw std::invalid_argument("zmatrix state: sign must be (nwords,) and magnitude (planes, nwords), C-contiguous");
    return ldp::ColumnSums{static_cast<uint64_t*>(sign.mutable_data()), static_cast<uint64_t*>(magnitude.mutable_data()), static_cast<unsigned>(magnitude.shape(0)),
                           static_cast<size_t>(sign.shape(0))};
}

void same_length(const py::array& a, const py::array& b, const char* what) {
    if (a.ndim() != 1 || b.ndim() != 1 || a.shape(0) != b.shape(0)) throw std::invalid_argument(what);
}

}  // namespace

void register_ldp_zmatrix(py::module_& m) {
    m.def(
        "zmatrix_privatize",
        [](GeneratorHandle& h, const i64_in& items, const u64_in& columns, uint64_t domain, const py::bytes& key,
           const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            same_length(items, columns, "items and columns must be 1-D arrays of the same length");
            const exact::RandomizedResponseKernel kernel(2, big_from_py(gamma_num, "gamma_num"),
                                                         big_from_py(gamma_den, "gamma_den"));
            const ldp::PublicSignMatrix Z(public_key(key));
            const size_t n = static_cast<size_t>(items.shape(0));
            const int64_t* x = items.data();
            for (size_t i = 0; i < n; ++i)
                if (x[i] < 0 || static_cast<uint64_t>(x[i]) >= domain)
                    throw std::invalid_argument("items must be in [0, domain_size)");
            py::array_t<int8_t> out(static_cast<py::ssize_t>(n));
            int8_t* y = out.mutable_data();
            const uint64_t* c = columns.data();
            with_family_nogil(h, [&](auto& family) { ldp::zmatrix_privatize(family, kernel, Z, domain, x, c, y, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("items"), py::arg("columns"), py::arg("domain_size"), py::arg("public_key"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("threads"),
        "zmatrix client: y = Z[item, column] kept with probability e^g/(e^g+1), else negated (exact).");

    m.def(
        "zmatrix_entry_bits",
        [](const py::bytes& key, const i64_in& rows, const u64_in& columns, uint64_t domain, bool use_table) {
            same_length(rows, columns, "rows and columns must be 1-D arrays of the same length");
            const ldp::PublicSignMatrix Z(public_key(key));
            const size_t n = static_cast<size_t>(rows.shape(0));
            for (size_t i = 0; i < n; ++i)
                if (rows.data()[i] < 0 || static_cast<uint64_t>(rows.data()[i]) >= domain)
                    throw std::invalid_argument("rows must be in [0, domain_size)");
            py::array_t<uint8_t> out(static_cast<py::ssize_t>(n));
            uint8_t* o = out.mutable_data();
            {
                py::gil_scoped_release release;
                ldp::zmatrix_entry_bits(Z, domain, rows.data(), columns.data(), o, n, use_table);
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
            const ldp::PublicSignMatrix Z(public_key(key));
            py::array_t<uint64_t> out({static_cast<py::ssize_t>(nrows), static_cast<py::ssize_t>(nwords)});
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
        [](py::array& sign, py::array& magnitude, const u64_in& columns, const i8_in& y) {
            same_length(columns, y, "columns and y must be 1-D arrays of the same length");
            ldp::ColumnSums s = column_sums(sign, magnitude);
            py::gil_scoped_release release;
            ldp::zmatrix_accumulate(s, columns.data(), y.data(), static_cast<size_t>(columns.shape(0)));
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
            const ldp::PublicSignMatrix Z(public_key(key));
            py::array_t<int64_t> out(static_cast<py::ssize_t>(domain));
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
}

}  // namespace dpnoise::bindings
