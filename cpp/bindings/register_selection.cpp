// Bindings for batched private selection (dpnoise/select/). Glue only: describe the NumPy score
// matrix (any dtype the core reads, any strides: no copy), release the GIL, call the core.
//   select_rows(gen, method, scores, grid_exponent, gamma_num, gamma_den, k, threads)
//       -> int64 (rows, k): k candidates per row of the 2-D `scores`
//   _select_rows_forced(...)  the same with every coin sent down the exact refinement path (tests)
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "finite_values.hpp"
#include "dpnoise/select/select_rows.hpp"

#include <pybind11/stl.h>  // std::optional<int> for grid_exponent

namespace dpnoise::bindings {

namespace {

select::Method method_of(const std::string& name) {
    if (name == "permute_and_flip") return select::Method::permute_and_flip;
    if (name == "exponential_mechanism") return select::Method::exponential_mechanism;
    if (name == "laplace") return select::Method::laplace;
    throw std::invalid_argument("method must be 'permute_and_flip', 'exponential_mechanism' or 'laplace', got '" + name + "'");
}

select::ScoreType type_of(const py::dtype& dt) {
    if (dt.attr("isnative").cast<bool>() == false)
        throw py::type_error("scores must be in the machine's byte order (use scores.astype(scores.dtype.newbyteorder('=')))");
    const char kind = dt.kind();
    const auto size = dt.itemsize();
    if (kind == 'b') return select::ScoreType::boolean;
    if (kind == 'i') {
        if (size == 1) return select::ScoreType::i8;
        if (size == 2) return select::ScoreType::i16;
        if (size == 4) return select::ScoreType::i32;
        if (size == 8) return select::ScoreType::i64;
    }
    if (kind == 'u') {
        if (size == 1) return select::ScoreType::u8;
        if (size == 2) return select::ScoreType::u16;
        if (size == 4) return select::ScoreType::u32;
        if (size == 8) return select::ScoreType::u64;
    }
    if (kind == 'f') {
        if (size == 4) return select::ScoreType::f32;
        if (size == 8) return select::ScoreType::f64;
    }
    throw py::type_error("scores must be an integer, bool, float32 or float64 array, got dtype " +
                         py::str(static_cast<const py::object&>(dt)).cast<std::string>());
}

template <class Policy>
py::array_t<int64_t> select_rows(GeneratorHandle& h, const std::string& method, const py::array& scores,
                                 std::optional<int> grid_exponent, uint64_t gamma_num, uint64_t gamma_den, size_t k,
                                 unsigned threads, const py::object& charge) {
    if (scores.ndim() != 2) throw std::invalid_argument("scores must be a 2-D array (one candidate set per row)");
    select::ScoreMatrix s;
    s.type = type_of(scores.dtype());
    s.data = static_cast<const char*>(scores.data());
    s.rows = static_cast<size_t>(scores.shape(0));
    s.cols = static_cast<size_t>(scores.shape(1));
    s.row_stride = static_cast<ptrdiff_t>(scores.strides(0));
    s.col_stride = static_cast<ptrdiff_t>(scores.strides(1));
    s.grid = grid_exponent.has_value();
    s.grid_exponent = grid_exponent.value_or(0);
    const select::Method m = method_of(method);
    if (!charge.is_none()) {
        // the release's one crossing: real scores checked finite (the one data-dependent check,
        // docs/security.md), then the charge (the budget's spend), then the selection
        if (s.type == select::ScoreType::f32 || s.type == select::ScoreType::f64) {
            bool finite = true;
            {
                std::optional<py::gil_scoped_release> unlocked;
                if (s.rows * s.cols > 4096) unlocked.emplace();
                finite = s.type == select::ScoreType::f32
                             ? all_finite_matrix<float>(s.data, s.rows, s.cols, s.row_stride, s.col_stride)
                             : all_finite_matrix<double>(s.data, s.rows, s.cols, s.row_stride, s.col_stride);
            }
            if (!finite) throw std::invalid_argument("scores must be finite (found NaN or infinity)");
        }
        if (!py::isinstance<py::bool_>(charge)) charge();  // True: checked, nothing to charge
    }
    auto out = new_array<int64_t>(s.rows, k);
    int64_t* p = out.mutable_data();
    with_family_nogil(h, [&](auto& family) {
        select::select_rows<std::decay_t<decltype(family)>, Policy>(family, s, m, {gamma_num, gamma_den}, k, p, threads);
    });
    return out;
}

}  // namespace

void register_selection(py::module_& m) {
    m.def("select_rows", &select_rows<exact::NeverForceRefinement>, py::arg("gen"), py::arg("method"), py::arg("scores"),
          py::arg("grid_exponent"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("k"), py::arg("threads"),
          py::arg("charge") = py::none(),
          "k candidates from every row of the 2-D scores (gamma = gamma_num/gamma_den; real scores rounded to the grid "
          "2^grid_exponent), as int64 (rows, k). charge: None (the caller checked and charged), True (check real "
          "scores finite here, nothing to charge) or a callable (check, then charge(), then select).");
    m.def("_select_rows_forced", &select_rows<exact::ForceRefinement>, py::arg("gen"), py::arg("method"), py::arg("scores"),
          py::arg("grid_exponent"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("k"), py::arg("threads"),
          py::arg("charge") = py::none(), "Test hook: select_rows with every coin decided by the exact refinement path.");
}

}  // namespace dpnoise::bindings
