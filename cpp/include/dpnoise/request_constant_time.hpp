// dpnoise/request_constant_time.hpp -- the constant-time samplers as laws of the request
// layer (request.hpp): the same callers (sample_same, its chunks, streams and threads, the table
// cache), another algorithm. A constant-time request always uses its table (Path::tables); the
// table depends on the public parameter only and is built and cached before any draw.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "dpnoise/exact/constant_time/discrete_gaussian.hpp"
#include "dpnoise/exact/constant_time/discrete_laplace.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/parameters.hpp"

namespace dpnoise::exact::ct {

// What both laws share: a rational parameter, range-checked by the table type, and one
// constant-time draw from the table (Derived::sample) on every path of the request layer.
template <class Derived, class TableType>
struct ConstantTimeLaw {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;
    using Param = Rational;
    using Table = TableType;
    static Param make(Rational r) {
        const Rational p = checked_rational(r.num, r.den, Derived::kParamName);
        Table::check_range(p.num, p.den);
        return p;
    }
    static std::pair<uint64_t, uint64_t> key(const Param& p) { return {p.num, p.den}; }
    static size_t table_cost(const Param&) { return 0; }
    static Table build(const Param& p) { return Table(p.num, p.den); }
    // request::sample_same's small path; constant-time requests never take it (Path::tables)
    template <class Bits> static int64_t draw(Bits& bits, const Param& p) { return Derived::sample(bits, build(p)); }
    template <class Bits> static int64_t draw_table(Bits& bits, const Table& t) { return Derived::sample(bits, t); }
    template <class Fn> static void with_table_loop(const Table&, Fn&& fn) {
        fn([](auto& bits, const Table& t) { return Derived::sample(bits, t); });
    }
};

struct ConstantTimeDiscreteLaplace : ConstantTimeLaw<ConstantTimeDiscreteLaplace, DiscreteLaplaceTable> {
    static constexpr parameters::Kind kKind = parameters::Kind::scale;
    static constexpr const char* kParamName = "scale";
    template <class Bits> static int64_t sample(Bits& bits, const Table& t) { return discrete_laplace(bits, t); }
};

struct ConstantTimeDiscreteGaussian : ConstantTimeLaw<ConstantTimeDiscreteGaussian, DiscreteGaussianTable> {
    static constexpr parameters::Kind kKind = parameters::Kind::variance;
    static constexpr const char* kParamName = "variance";
    template <class Bits> static int64_t sample(Bits& bits, const Table& t) { return discrete_gaussian(bits, t); }
};

}  // namespace dpnoise::exact::ct
