// dpnoise/errors.hpp -- the library-specific exceptions of the C++ core.
// Everything else uses the standard std::invalid_argument / std::domain_error /
// std::overflow_error; the bindings map them to ValueError / OverflowError, and these two to
// the Python classes of dpnoise._errors (EntropyError, InvariantError; both DPErrors).
#pragma once
#include <stdexcept>
#include <string>

namespace dpnoise {

// The operating system could not supply entropy; never fall back to a weaker source.
struct entropy_error : std::runtime_error {
    explicit entropy_error(const std::string& what) : std::runtime_error(what) {}
};

// An internal invariant failed (a bug in dpnoise, not a user error).
struct invariant_error : std::logic_error {
    explicit invariant_error(const std::string& what) : std::logic_error(what) {}
};

}  // namespace dpnoise
