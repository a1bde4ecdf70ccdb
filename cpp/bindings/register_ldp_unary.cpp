// Bindings of the local-DP unary protocols (dpnoise/ldp/): glue only (convert, release the GIL, call).
// Items and report matrices are checked with the GIL held and before any randomness is drawn
// or any count changes; messages never echo an item.
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "constant_time_glue.hpp"
#include "dpnoise/ldp/packed_column_counts.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/ldp/geometric_skip.hpp"
#include "dpnoise/ldp/unary_encoding.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::bindings {

namespace {

ldp::UnaryKind unary_kind(const std::string& protocol) {
    if (protocol == "oue") return ldp::UnaryKind::optimized;
    if (protocol == "sue") return ldp::UnaryKind::symmetric;
    throw std::invalid_argument("protocol must be 'oue' or 'sue'");
}

// a C-contiguous uint64 matrix of n rows of ceil(d/64) words, without a copy or a cast
const uint64_t* report_rows(const py::array& bits, uint64_t d, size_t& n) {
    if (bits.dtype().kind() != 'u' || bits.itemsize() != 8) throw py::type_error("bits must be a uint64 array");
    if (bits.ndim() != 2 || static_cast<uint64_t>(bits.shape(1)) != (d + 63) / 64)
        throw std::invalid_argument("bits must have shape (users, ceil(domain_size/64))");
    // array_t's check: the dtype and C-contiguity
    if (!py::isinstance<u64_array>(bits)) throw std::invalid_argument("bits must be C-contiguous");
    n = static_cast<size_t>(bits.shape(0));
    return static_cast<const uint64_t*>(bits.data());
}

}  // namespace

static void register_ldp_unary(py::module_& m) {
    m.def(
        "unary_privatize",
        [](GeneratorHandle& h, const std::string& protocol, const i64_array& items, uint64_t domain_size,
           const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const ldp::UnaryKind kind = unary_kind(protocol);
            const auto kept = KeptKernels<ldp::UnaryEncoding>::get(
                kernel_key(static_cast<uint64_t>(kind), domain_size, gamma), [&] { return ldp::UnaryEncoding(kind, domain_size, gamma.num, gamma.den); });
            const ldp::UnaryEncoding& enc = *kept;
            if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
            const int64_t* in = items.data();
            const size_t n = static_cast<size_t>(items.size());
            check_below(in, n, domain_size, "items must be in [0, domain_size)");
            auto out = new_array<uint64_t>(n, enc.words);
            uint64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& family) { ldp::unary_privatize(family, enc, in, p, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("protocol"), py::arg("items").noconvert(), py::arg("domain_size"), py::arg("gamma_num"),
        py::arg("gamma_den"), py::arg("threads"),
        "Unary-encoding reports ('oue' or 'sue', gamma = gamma_num/gamma_den) of int64 items in\n"
        "[0, domain_size): a (users, ceil(domain_size/64)) uint64 matrix, bit b of word j for item\n"
        "64 j + b. Exact: the other items' ones by exact geometric skips (no floating point).");

    m.def(
        "_geometric_skip_for_testing",
        [](GeneratorHandle& h, const py::int_& gamma_num, const py::int_& gamma_den, size_t n, uint64_t limit,
           bool forced) {
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const ldp::GeometricSkip skip(gamma.num, gamma.den);
            auto out = new_array<int64_t>(n);
            int64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                random::for_each_chunk<UINT32_MAX>(family, n, 1, [&](auto& bits, size_t begin, size_t end) {
                    using Bits = std::remove_reference_t<decltype(bits)>;
                    for (size_t i = begin; i < end; ++i)
                        p[i] = static_cast<int64_t>(forced ? skip.sample<Bits, exact::ForceRefinement>(bits, limit)
                                                           : skip.sample(bits, limit));
                });
            });
            return py::make_tuple(out, skip.low_bits, skip.high.hi_m1.size());
        },
        py::arg("gen"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("n"), py::arg("limit"), py::arg("forced"),
        "Test hook: (n gaps min(Y, limit) with P[Y >= j] = (1 + e^-gamma)^-j, low_bits k, thresholds m);\n"
        "forced: every decision settled by the exact refinement path.");

    m.def(
        "packed_padding_clear",
        [](const py::array& bits, uint64_t domain_size) {
            size_t n = 0;
            const uint64_t* rows = report_rows(bits, domain_size, n);
            const size_t W = static_cast<size_t>((domain_size + 63) / 64);
            bool ok = true;
            {
                py::gil_scoped_release release;
                ok = ldp::packed_padding_clear(rows, n, W, domain_size);
            }
            return ok;
        },
        py::arg("bits"), py::arg("domain_size"),
        "True when no row of the packed report matrix has a bit set at a column >= domain_size.");

    m.def(
        "packed_column_counts_add",
        [](const py::array& bits, uint64_t domain_size, i64_array& counts,
           unsigned threads) {
            size_t n = 0;
            const uint64_t* rows = report_rows(bits, domain_size, n);
            const size_t W = static_cast<size_t>((domain_size + 63) / 64);
            if (counts.ndim() != 1 || static_cast<size_t>(counts.shape(0)) != 64 * W)
                throw std::invalid_argument("counts must be an int64 array of 64 ceil(domain_size/64) entries");
            if (!counts.writeable()) throw std::invalid_argument("counts must be writeable");
            int64_t* c = counts.mutable_data();
            py::gil_scoped_release release;
            ldp::add_packed_column_counts(rows, n, W, c, threads);
        },
        py::arg("bits"), py::arg("domain_size"), py::arg("counts").noconvert(), py::arg("threads"),
        "counts[64 j + b] += the rows of the packed (users, ceil(domain_size/64)) uint64 matrix with\n"
        "bit b of word j set (carry-save adders over 16 rows; no per-bit unpacking).");
    // The constant-time variant (dpnoise/ldp/constant_time/randomizers.hpp; docs/security.md).
    m.def(
        "unary_constant_time",
        [](GeneratorHandle& h, const std::string& protocol, const i64_array& items, uint64_t columns,
           const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads, const py::object& keys) {
            if (protocol != "oue" && protocol != "sue") throw std::invalid_argument("protocol must be 'oue' or 'sue'");
            if (columns < 1 || columns > (uint64_t{1} << 21)) throw std::invalid_argument("columns must be in [1, 2^21]");
            const bool sue = protocol == "sue";
            const auto table = binary_table(exact_gamma(gamma_num, gamma_den), sue);  // before any draw
            const exact::ct::BitChannel channel(sue ? exact::ct::BitChannelKind::symmetric
                                                    : exact::ct::BitChannelKind::optimized, *table);
            const int64_t* in = items_1d(items);
            const size_t n = static_cast<size_t>(items.size());
            i64_array key_array;
            const int64_t* k = nullptr;
            if (!keys.is_none()) {
                key_array = integer_array<int64_t>(keys, "keys must be an integer array");
                if (key_array.ndim() != 2 || static_cast<size_t>(key_array.shape(0)) != n ||
                    static_cast<uint64_t>(key_array.shape(1)) != columns)
                    throw std::invalid_argument("keys must have shape (len(items), columns)");
                k = key_array.data();
            }
            auto out = new_array<uint64_t>(n, static_cast<size_t>((columns + 63) / 64));
            uint64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& f) { exact::ct::unary_constant_time(f, channel, in, k, columns, p, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("protocol"), py::arg("items").noconvert(), py::arg("columns"), py::arg("gamma_num"),
        py::arg("gamma_den"), py::arg("threads"), py::arg("keys") = py::none(),
        "Unary-encoding bits in constant time ('oue': P(1) = 1/2 at the item, 1/(e^g + 1) elsewhere; 'sue':\n"
        "e^(g/2)/(e^(g/2) + 1) and 1/(e^(g/2) + 1)), packed (n, ceil(columns/64)) uint64. Column c is the\n"
        "item's when c == item, or keys[i, c] == item when keys is given. Each bit within 2^-64 of its law\n"
        "(one 64-bit word against the certified threshold rounded to 64 bits).");
}

DPNOISE_LDP_AREA(unary, register_ldp_unary);

}  // namespace dpnoise::bindings
