// Bindings of the constant-time local-DP randomizers (dpnoise/exact/constant_time/
// ldp_randomizers.hpp), under _core.ldp: glue only (convert, build the certified k = 2 table
// before any draw, release the GIL, call). No check of the items' values here: the Python
// clients range-check them (a documented data-dependent step), and the kernels read any int64.
//   unary_constant_time(gen, protocol, items, columns, gamma_num, gamma_den, threads, keys=None)
//       'oue' | 'sue' bits over `columns` columns (keys (n, columns) int64: dBitFlip's rows)
//   hadamard_constant_time(gen, items, padded_size, gamma_num, gamma_den, threads) -> (rows, bits)
//   cms_constant_time(gen, items, public_key, hashes, width, gamma_num, gamma_den, threads)
//       -> (hash_index, vectors (n, width/8) uint8)
//   hcms_constant_time(...same...) -> (hash_index, coefficient, bits)
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/constant_time/ldp_randomizers.hpp"
#include "dpnoise/ldp/count_mean_sketch.hpp"
#include "dpnoise/ldp/walsh_hadamard.hpp"

namespace dpnoise::bindings {

namespace {

using exact::ct::RandomizedResponseTable;

// the certified k = 2 table at gamma (halved: gamma/2 = num/(2 den))
std::shared_ptr<const RandomizedResponseTable> binary_table(const ExactGamma& g, bool halved) {
    return exact::ct::cached_table(2, g.num, halved ? exact::add(g.den, g.den) : g.den);
}

const int64_t* items_1d(const i64_array& items) {
    if (items.ndim() != 1) throw std::invalid_argument("items must be a 1-D array");
    return items.data();
}

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

static void register_ldp_constant_time(py::module_& m) {
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

DPNOISE_LDP_AREA(constant_time, register_ldp_constant_time);

}  // namespace dpnoise::bindings
