// dpnoise/simd.hpp -- the one switch for the x86 code paths: DPNOISE_X86_SIMD is defined (and
// <immintrin.h> included) on x86-64 with GCC or Clang, unless DPNOISE_NO_SIMD is defined.
//
// Every kernel with x86 intrinsics, a target("...") attribute, __builtin_cpu_supports or an
// SSE2 scalar trick sits behind `#ifdef DPNOISE_X86_SIMD`, beside a portable path compiled
// everywhere; the choice at run time never changes an output (docs/reproducibility.md). Other
// CPUs (aarch64, Apple silicon) and other compilers take the portable paths only. So does an
// x86-64 build with DPNOISE_NO_SIMD (CMake option DPNOISE_NO_SIMD, docs/building.md): it runs,
// and tests, exactly the code other CPUs run. 32-bit x86 takes the portable paths too: several
// kernels use 64-bit-mode intrinsics (_mm_cvtsi128_si64).
#pragma once

#if !defined(DPNOISE_NO_SIMD) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPNOISE_X86_SIMD 1
#include <immintrin.h>
#endif

namespace dpnoise {
// Whether this build has the x86 SIMD kernels (they still run only where the CPU has them).
inline constexpr bool kBuiltWithX86Simd =
#ifdef DPNOISE_X86_SIMD
    true;
#else
    false;
#endif
}  // namespace dpnoise
