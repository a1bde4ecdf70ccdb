// Bindings of the local-DP Hadamard-family protocols (dpnoise/ldp/): glue only (convert,
// check shapes, release the GIL, call). The policy is in cpp/include/dpnoise/ldp/.
#include <algorithm>
#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/ldp/hadamard_response.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"

namespace dpnoise::bindings {

namespace {

using i64_array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using u8_array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// A writable, C-contiguous 1-D int64 NumPy array of `size` elements, modified in place.
int64_t* inplace_int64(py::array& a, uint64_t size, const char* name) {
    if (!a.dtype().is(py::dtype::of<int64_t>()) || a.ndim() != 1 || !(a.flags() & py::array::c_style) ||
        !a.writeable() || static_cast<uint64_t>(a.size()) != size)
        throw std::invalid_argument(std::string(name) + " must be a writable contiguous int64 array of the state's size");
    return static_cast<int64_t*>(a.mutable_data());
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

}  // namespace

void register_ldp_hadamard(py::module_& m) {
    m.def(
        "ldp_hadamard_privatize",
        [](GeneratorHandle& h, const i64_array& items, uint64_t padded_size, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            const unsigned t = log2_exact(padded_size, "padded_size");
            const exact::RandomizedResponseKernel kernel(2, big_from_py(gamma_num, "gamma_num"),
                                                         big_from_py(gamma_den, "gamma_den"));
            const ldp::HadamardResponse hr(t, kernel);
            if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
            const size_t n = static_cast<size_t>(items.size());
            const int64_t* in = items.data();
            for (size_t i = 0; i < n; ++i)  // before any randomness; never echoes an item
                if (in[i] < 0 || static_cast<uint64_t>(in[i]) >= padded_size)
                    throw std::invalid_argument("items must be in [0, padded_size)");
            py::array_t<int64_t> rows(static_cast<py::ssize_t>(n));
            py::array_t<uint8_t> bits(static_cast<py::ssize_t>((n + 7) / 8));
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
        "ldp_hadamard_check_reports",
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
        "ldp_hadamard_accumulate",
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
            py::array_t<int64_t> out(static_cast<py::ssize_t>(D));
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
}

}  // namespace dpnoise::bindings
