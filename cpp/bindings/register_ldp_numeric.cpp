// Bindings of the local-DP numeric mean oracles (dpnoise/ldp/mean_mechanisms.hpp): glue only
// (convert, check shapes, release the GIL, call).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/ldp/constant_time/mean_mechanisms.hpp"
#include "dpnoise/ldp/mean_mechanisms.hpp"

namespace dpnoise::bindings {

namespace {


ldp::MeanMechanism::Method method_of(int method) {
    if (method < 0 || method > 2) throw std::invalid_argument("method must be 0 (duchi), 1 (piecewise) or 2 (hybrid)");
    return static_cast<ldp::MeanMechanism::Method>(method);
}

ldp::MeanMechanism mechanism(int method, double low, double high, const py::int_& num, const py::int_& den, bool mix) {
    return ldp::MeanMechanism(method_of(method), low, high, big_from_py(num, "gamma_num"), big_from_py(den, "gamma_den"),
                              mix);
}

template <class T>
T* inplace(py::array& a, std::initializer_list<uint64_t> shape, const char* name) {
    bool ok = a.dtype().is(py::dtype::of<T>()) && static_cast<size_t>(a.ndim()) == shape.size() &&
              (a.flags() & py::array::c_style) && a.writeable();
    size_t d = 0;
    for (uint64_t s : shape) ok = ok && static_cast<uint64_t>(a.shape(static_cast<py::ssize_t>(d++))) == s;
    if (!ok) throw std::invalid_argument(std::string(name) + " must be a writable contiguous array of the state's shape");
    return static_cast<T*>(a.mutable_data());
}

// The client outputs (coordinates, packed bits, ints) for n values of k dimensions, filled by
// run(family, values, n, coords, bits, ints) with the GIL released.
template <class Run>
py::tuple privatize_arrays(GeneratorHandle& h, const f64_array& values, uint64_t k, int method, Run&& run) {
    if (k < 1) throw std::invalid_argument("dimensions must be at least 1");
    const bool matrix = k > 1;
    if ((matrix && (values.ndim() != 2 || static_cast<uint64_t>(values.shape(1)) != k)) || (!matrix && values.ndim() != 1))
        throw std::invalid_argument(matrix ? "values must have shape (n, dimensions)" : "values must be a 1-D array");
    const size_t n = static_cast<size_t>(values.shape(0));
    const bool uses_bits = method != ldp::MeanMechanism::kPiecewise;
    const bool uses_ints = method != ldp::MeanMechanism::kDuchi;
    py::array_t<int64_t> coords(static_cast<py::ssize_t>(matrix ? n : 0));
    py::array_t<uint8_t> bits(static_cast<py::ssize_t>(uses_bits ? (n + 7) / 8 : 0));
    py::array_t<int64_t> ints(static_cast<py::ssize_t>(uses_ints ? n : 0));
    const double* in = values.data();
    int64_t* c = matrix ? coords.mutable_data() : nullptr;
    uint8_t* b = uses_bits ? bits.mutable_data() : nullptr;
    int64_t* v = uses_ints ? ints.mutable_data() : nullptr;
    with_family_nogil(h, [&](auto& family) { run(family, in, n, c, b, v); });
    return py::make_tuple(coords, bits, ints);
}

}  // namespace

static void register_ldp_numeric(py::module_& m) {
    m.def(
        "mean_grid",
        [](int method, double low, double high, const py::int_& num, const py::int_& den, bool mix) {
            const auto mm = mechanism(method, low, high, num, den, mix);
            return py::make_tuple(mm.Z, mm.G, py::make_tuple(mm.kappa.lo, big_to_py(exact::BigUint(mm.kappa.hi))),
                                  py::make_tuple(mm.keep_duchi.lo, big_to_py(exact::BigUint(mm.keep_duchi.hi))));
        },
        py::arg("method"), py::arg("low"), py::arg("high"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("mix"),
        "(Z, G, kappa bounds, e^(-g/2) bounds): Piecewise's output grid C~ = Z/2^G >= C and the certified\n"
        "64-bit bounds of tanh(g/2) 2^64 and e^(-g/2) 2^64 the randomizers decide with.");

    py::class_<ldp::MeanMechanism, std::shared_ptr<ldp::MeanMechanism>>(
        m, "MeanMechanismCore",
        "One mean-oracle configuration's exact randomizer (certified enclosures of tanh(g/2) and e^(-g/2),\n"
        "Piecewise's output grid, the input grid's fixed point), built once and kept by the configuration:\n"
        "immutable, so one object serves every thread.")
        .def(py::init([](int method, double low, double high, const py::int_& num, const py::int_& den, bool mix) {
                 return std::make_shared<ldp::MeanMechanism>(mechanism(method, low, high, num, den, mix));
             }),
             py::arg("method"), py::arg("low"), py::arg("high"), py::arg("gamma_num"), py::arg("gamma_den"),
             py::arg("mix"))
        .def_property_readonly("grid_z", [](const ldp::MeanMechanism& mm) { return mm.Z; },
                               "Piecewise's output grid C~ = Z / 2^G: Z.")
        .def_property_readonly("grid_bits", [](const ldp::MeanMechanism& mm) { return mm.G; }, "G.")
        .def(
            "privatize",
            [](const ldp::MeanMechanism& mm, GeneratorHandle& h, const f64_array& values, uint64_t k, unsigned threads,
               int layout) {
                if (layout != static_cast<int>(ldp::MeanLayout::kGridFirst) &&
                    layout != static_cast<int>(ldp::MeanLayout::kDirect))
                    throw std::invalid_argument("layout must be 1 (grid first: memoised answers) or 2 (direct), got " +
                                                std::to_string(layout));
                return privatize_arrays(h, values, k, mm.method, [&](auto& family, const double* in, size_t n, int64_t* c,
                                                                     uint8_t* b, int64_t* v) {
                    ldp::mean_privatize(family, mm, in, n, k, c, b, v, threads, static_cast<ldp::MeanLayout>(layout));
                });
            },
            py::arg("gen"), py::arg("values"), py::arg("k"), py::arg("threads"), py::arg("layout"),
            "Numeric mean-oracle clients, exact: (coordinates int64 (n if k > 1), bits uint8 packed (Duchi's bit;\n"
            "hybrid: 1 = a Duchi report), values int64 (Piecewise's z; hybrid: z or Duchi's bit)). layout: how the\n"
            "Duchi bit reads the stream (1: from the grid index, the memoised answers' layout; 2: directly, same\n"
            "law).");

    m.def(
        "_mean_duchi_direct_bounds_for_testing",
        [](const f64_array& values, double low, double high, const py::int_& num, const py::int_& den) {
            // the direct Duchi bit's enclosure of c(u) 2^64 per value: (center, slack), c(u) 2^64 in
            // [center - slack, center + slack); slack 2^64 - 1: no bounds (the exact path decides)
            const auto mm = mechanism(0, low, high, num, den, false);
            if (values.ndim() != 1) throw std::invalid_argument("values must be a 1-D array");
            const size_t n = static_cast<size_t>(values.size());
            py::array_t<uint64_t> centers(static_cast<py::ssize_t>(n)), slacks(static_cast<py::ssize_t>(n));
            py::array_t<int64_t> coarse(static_cast<py::ssize_t>(n));
            uint64_t* c = centers.mutable_data();
            uint64_t* e = slacks.mutable_data();
            int64_t* cc = coarse.mutable_data();
            const double* in = values.data();
            ldp::check_finite(in, n);
            const bool has_coarse = mm.grid.coarse_enabled();
            for (size_t i = 0; i < n; ++i) {
                mm.direct_bounds(mm.clip(in[i]), c[i], e[i]);
                cc[i] = has_coarse ? mm.coarse_c(mm.grid.coarse_u32(mm.clip(in[i]))) : -1;
            }
            return py::make_tuple(centers, slacks, coarse, mm.grid.fixed_enabled(), has_coarse);
        },
        py::arg("values"), py::arg("low"), py::arg("high"), py::arg("gamma_num"), py::arg("gamma_den"),
        "(centers, slacks, coarse C, fixed point used, coarse step used): the direct Duchi bit's bounds of\n"
        "c(u) 2^64 per value, and its coarse estimate C of c(u) 2^32 (-1 without the coarse step) (tests only).");

    m.def(
        "_force_duchi_coarse_kernel_for_testing",
        [](int level) {
            // 0: the portable coarse loop, 1: AVX-512 (refused where the CPU lacks it); returns the old level
            if (level != 0 && level != 1) throw std::invalid_argument("level must be 0 (portable) or 1 (AVX-512)");
            std::atomic<int>& current = ldp::duchi_coarse_level();
#ifdef DPNOISE_X86_SIMD
            const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                                __builtin_cpu_supports("avx512vl");
#else
            const bool avx512 = false;
#endif
            if (level == 1 && !avx512) throw std::invalid_argument("level 1 needs AVX-512F/DQ/VL, which this CPU lacks");
            return current.exchange(level);
        },
        py::arg("level"), "Selects the direct Duchi bit's coarse kernel (tests only); returns the previous level.");

    m.def(
        "_mean_duchi_direct_refine_for_testing",
        [](GeneratorHandle& h, double v, uint64_t w32, double low, double high, const py::int_& num,
           const py::int_& den) {
            // the direct bit's refinement after a first word w32 (its next bits from gen's stream 0 of
            // one reservation)
            if (w32 >> 32) throw std::invalid_argument("w32 must be below 2^32");
            const auto mm = mechanism(0, low, high, num, den, false);
            ldp::check_finite(&v, 1);
            bool out = false;
            with_family_nogil(h, [&](auto& family) {
                random::for_each_chunk<1>(family, 1, 1, [&](auto& bits, size_t, size_t) {
                    out = mm.direct_refine(bits, w32, mm.clip(v));
                });
            });
            return out;
        },
        py::arg("gen"), py::arg("v"), py::arg("w32"), py::arg("low"), py::arg("high"), py::arg("gamma_num"),
        py::arg("gamma_den"),
        "The direct Duchi bit decided after the first 32 bits w32 of R (tests only).");

    m.def(
        "_mean_privatize_reference_for_testing",
        [](GeneratorHandle& h, const f64_array& values, uint64_t k, int method, double low, double high,
           const py::int_& num, const py::int_& den, bool mix, unsigned threads) {
            const auto mm = mechanism(method, low, high, num, den, mix);
            return privatize_arrays(h, values, k, method, [&](auto& family, const double* in, size_t n, int64_t* c,
                                                              uint8_t* b, int64_t* v) {
                ldp::mean_privatize(family, mm, in, n, k, c, b, v, threads, ldp::MeanLayout::kReference);
            });
        },
        py::arg("gen"), py::arg("values"), py::arg("k"), py::arg("method"), py::arg("low"), py::arg("high"),
        py::arg("gamma_num"), py::arg("gamma_den"), py::arg("mix"), py::arg("threads"),
        "mean_privatize through the reference loop (the exact grid map and bit of every value, no fixed-point\n"
        "fast path): the same reports, bit for bit (tests only).");

    py::class_<exact::ct::MeanMechanismCT, std::shared_ptr<exact::ct::MeanMechanismCT>>(
        m, "MeanMechanismConstantTimeCore",
        "MeanMechanismCore's constant-time counterpart (ldp/constant_time/mean_mechanisms.hpp): a fixed number of\n"
        "words per report, no branch or address on the values or the random bits; built once and kept by the\n"
        "configuration. ValueError for bounds it does not support.")
        .def(py::init([](int method, double low, double high, const py::int_& num, const py::int_& den, bool mix) {
                 return std::make_shared<exact::ct::MeanMechanismCT>(mechanism(method, low, high, num, den, mix));
             }),
             py::arg("method"), py::arg("low"), py::arg("high"), py::arg("gamma_num"), py::arg("gamma_den"),
             py::arg("mix"))
        .def_property_readonly("grid_z", [](const exact::ct::MeanMechanismCT& mm) { return mm.Z; })
        .def_property_readonly("grid_bits", [](const exact::ct::MeanMechanismCT& mm) { return mm.G; })
        .def(
            "privatize",
            [](const exact::ct::MeanMechanismCT& mm, GeneratorHandle& h, const f64_array& values, uint64_t k,
               unsigned threads, int layout) {
                // one layout (fresh reports only: daily collection is not constant-time)
                if (layout != static_cast<int>(ldp::MeanLayout::kDirect))
                    throw std::invalid_argument("layout must be 2: the constant-time kernel draws fresh reports only, got " +
                                                std::to_string(layout));
                return privatize_arrays(h, values, k, mm.method, [&](auto& family, const double* in, size_t n,
                                                                     int64_t* c, uint8_t* b, int64_t* v) {
                    exact::ct::mean_privatize_constant_time(family, mm, in, n, k, c, b, v, threads);
                });
            },
            py::arg("gen"), py::arg("values"), py::arg("k"), py::arg("threads"), py::arg("layout"),
            "MeanMechanismCore.privatize's reports from the constant-time kernel.");

    m.def(
        "_mean_piecewise_for_testing",
        [](GeneratorHandle& h, int64_t m_in, uint64_t Z, unsigned G, size_t n, bool constant_time) {
            // Piecewise's kernel alone for one input m, on a small output grid C~ = Z / 2^G (tests
            // compare every report's exact probability): the mechanism of ε = 1, its grid replaced
            if (G > 20 || Z <= (uint64_t{1} << G) || Z > (uint64_t{1} << 30)) throw std::invalid_argument("need 2^G < Z <= 2^30");
            if (m_in < -ldp::InputGrid::kOne || m_in > ldp::InputGrid::kOne) throw std::invalid_argument("m out of range");
            ldp::MeanMechanism mm = mechanism(1, -1.0, 1.0, py::int_(1), py::int_(1), false);
            mm.Z = Z;
            mm.G = G;
            exact::ct::MeanMechanismCT ct(mm);
            py::array_t<int64_t> out(static_cast<py::ssize_t>(n));
            int64_t* o = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                random::for_each_chunk<ldp::MeanMechanism::kReportsPerStream>(
                    family, n, 1, [&](auto& bits, size_t begin, size_t end) {
                        for (size_t i = begin; i < end; ++i) o[i] = constant_time ? ct.piecewise(bits, m_in) : mm.piecewise(bits, m_in);
                    });
            });
            return out;
        },
        py::arg("gen"), py::arg("m"), py::arg("Z"), py::arg("G"), py::arg("n"), py::arg("constant_time"),
        "Piecewise's reports z for one input m on the output grid Z / 2^G (tests only).");

    m.def(
        "_mean_input_grid_for_testing",
        [](GeneratorHandle& h, const f64_array& values, double low, double high, bool constant_time) {
            const ldp::InputGrid grid(low, high);
            const exact::ct::InputGridCT grid_ct = constant_time ? exact::ct::InputGridCT(low, high) : exact::ct::InputGridCT();
            if (values.ndim() != 1) throw std::invalid_argument("values must be a 1-D array");
            const size_t n = static_cast<size_t>(values.size());
            const double* in = values.data();
            py::array_t<int64_t> out(static_cast<py::ssize_t>(n));
            int64_t* o = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                ldp::check_finite(in, n);
                random::for_each_chunk<ldp::MeanMechanism::kReportsPerStream>(
                    family, n, 1, [&grid, &grid_ct, constant_time, in, o](auto& bits, size_t begin, size_t end) {
                        for (size_t i = begin; i < end; ++i)
                            o[i] = constant_time ? grid_ct.map(bits, in[i]) : grid.map(bits, in[i]);
                    });
            });
            return out;
        },
        py::arg("gen"), py::arg("values"), py::arg("low"), py::arg("high"), py::arg("constant_time") = false,
        "The input grid alone (tests): m in [-2^32, 2^32] per value, E[m/2^32] = (2v - low - high)/(high - low)\n"
        "(constant_time: the branch-free grid of ldp/constant_time/mean_mechanisms.hpp).");

    m.def(
        "mean_accumulate",
        [](py::array& users, py::array& duchi_users, py::array& duchi_ones, py::array& pm_sum, py::array& pm_sum_squares,
           int method, int64_t Z, py::object coords, py::object bits, py::object ints, size_t n) {
            const uint64_t k = static_cast<uint64_t>(users.ndim() == 1 ? users.shape(0) : 0);
            const ldp::MeanState st{inplace<int64_t>(users, {k}, "users"),
                                    inplace<int64_t>(duchi_users, {k}, "duchi_users"),
                                    inplace<int64_t>(duchi_ones, {k}, "duchi_ones"),
                                    inplace<uint64_t>(pm_sum, {k, 2}, "pm_sum"),
                                    inplace<uint64_t>(pm_sum_squares, {k, 3}, "pm_sum_squares"), k};
            const auto m = method_of(method);
            i64_array c, v;
            u8_array b;
            if (!coords.is_none()) {
                c = coords.cast<i64_array>();
                if (c.ndim() != 1 || static_cast<size_t>(c.size()) != n)
                    throw std::invalid_argument("mean reports: 'coordinates' must hold one int64 per report");
            }
            if (!bits.is_none()) {
                b = bits.cast<u8_array>();
                if (b.ndim() != 1 || static_cast<size_t>(b.size()) != (n + 7) / 8)
                    throw std::invalid_argument("mean reports: packed bits must be ceil(n/8) bytes");
            }
            if (!ints.is_none()) {
                v = ints.cast<i64_array>();
                if (v.ndim() != 1 || static_cast<size_t>(v.size()) != n)
                    throw std::invalid_argument("mean reports: 'values' must hold one int64 per report");
            }
            const int64_t* cp = coords.is_none() ? nullptr : c.data();
            const uint8_t* bp = bits.is_none() ? nullptr : b.data();
            const int64_t* vp = ints.is_none() ? nullptr : v.data();
            py::gil_scoped_release release;
            ldp::mean_accumulate(st, m, Z, cp, bp, vp, n);
        },
        py::arg("users"), py::arg("duchi_users"), py::arg("duchi_ones"), py::arg("pm_sum"), py::arg("pm_sum_squares"),
        py::arg("method"), py::arg("Z"), py::arg("coordinates"), py::arg("bits"), py::arg("values"), py::arg("n"),
        "Adds a checked batch of mean reports to the state arrays in place (nothing changes if the batch is bad).");

    m.def(
        "_mean_lane_sums_for_testing",
        [](const std::string& kernel, const py::array& values, py::object kinds, int64_t Z) -> py::object {
            const auto count = static_cast<int>(ldp::LaneKernel::kCount);
            int which = -1;
            for (int i = 0; i < count; ++i)
                if (kernel == ldp::kLaneKernelNames[i]) which = i;
            if (kernel != "best" && which < 0) throw std::invalid_argument("kernel: unknown lane kernel name");
            const auto k = which < 0 ? ldp::lane_kernel_best() : static_cast<ldp::LaneKernel>(which);
            if (!ldp::lane_kernel_supported(k)) return py::none();
            if (Z < 0 || static_cast<uint64_t>(Z) > ldp::kLaneMaxZ) throw std::invalid_argument("Z must be in [0, 2^48)");
            const i64_array v = exact_array<int64_t>(values, 1, "values");
            const size_t n = static_cast<size_t>(v.size());
            u8_array b;
            if (!kinds.is_none()) {
                b = kinds.cast<u8_array>();
                if (b.ndim() != 1 || static_cast<size_t>(b.size()) != (n + 7) / 8)
                    throw std::invalid_argument("kinds must be ceil(n/8) packed bytes");
            }
            const uint8_t* bp = kinds.is_none() ? nullptr : b.data();
            ldp::MeanScratch s;
            bool ok;
            {
                py::gil_scoped_release release;
                ok = ldp::lane_batch_with(k, v.data(), bp, n, static_cast<uint64_t>(Z), s);
            }
            const bool negative = static_cast<ldp::i128>(s.sum) < 0;
            py::object sum = big_to_py(exact::BigUint(negative ? exact::u128{0} - s.sum : s.sum));
            if (negative) sum = sum.attr("__neg__")();
            exact::BigUint sq;
            sq.limb = {static_cast<uint64_t>(s.sq_lo), static_cast<uint64_t>(s.sq_lo >> 64), s.sq_hi};
            sq.trim();
            return py::make_tuple(ok, sum, big_to_py(sq), s.duchi_ones, s.duchi_users, s.users);
        },
        py::arg("kernel"), py::arg("values"), py::arg("kinds"), py::arg("Z"),
        "One coordinate's exact lane sums (tests, benchmarks): (ok, sum z, sum z^2 of the non-Duchi reports, Duchi\n"
        "ones, Duchi users, users) from the named kernel (\"best\": the one mean_accumulate uses), or None when\n"
        "this CPU lacks it.");
}

DPNOISE_LDP_AREA(numeric, register_ldp_numeric);

}  // namespace dpnoise::bindings
