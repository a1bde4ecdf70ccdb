// cpp/tests/dudect/ct_valgrind.cpp -- a ctgrind-style check (Langley 2010: run under valgrind
// memcheck with the secrets marked undefined; memcheck then reports every conditional jump,
// conditional move it cannot prove harmless, and memory address that depends on them). The
// random words (as the word source hands them out) and the secret input are marked undefined;
// the released value is declassified only after the release. Run:
//   valgrind --error-exitcode=3 ct_valgrind TARGET N [SCALE]
// for a target of targets.hpp: the grid targets round a double secret onto the grid 2^-10 as
// noisy_grid_constant_time does (mechanism_kernels_constant_time.hpp); ct_rr is the
// randomized-response kernel with k = SCALE categories.
// A constant-time target must give no error; a variable-time one (vt_*) must give some (this
// shows the check has power).
#include <valgrind/memcheck.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "target_set.hpp"  // which targets this binary is built for

namespace {
void mark_secret(uint64_t* w) { VALGRIND_MAKE_MEM_UNDEFINED(w, sizeof *w); }
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: ct_valgrind TARGET N [SCALE]\n");
        return 2;
    }
    Target target;
    if (!parse_target(argv[1], target)) return 2;
    const size_t n = std::strtoull(argv[2], nullptr, 10);
    const uint64_t scale = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100;
    const Samplers samplers(scale);  // tables from the public parameter: built before marking
    std::vector<uint64_t> words(256);
    uint64_t x = 0x243f6a8885a308d3ULL, total = 0;
    for (size_t i = 0; i < n; ++i) {
        for (auto& w : words) {  // defined words; the source marks each one as it hands it out
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            w = x;
        }
        BufferWords source{words.data(), words.size()};
        source.mark = mark_secret;
        int64_t secret = static_cast<int64_t>(x % 1000) - 500;
        VALGRIND_MAKE_MEM_UNDEFINED(&secret, sizeof secret);
        int64_t out = samplers.release(target, secret, source);
        VALGRIND_MAKE_MEM_DEFINED(&out, sizeof out);  // declassify the release itself
        total += static_cast<uint64_t>(out);
    }
    std::printf("ct_valgrind %s: %zu releases (checksum %llu)\n", argv[1], n, static_cast<unsigned long long>(total));
    return 0;
}
