// Bindings for the random area: the ChaCha20 generator, its NumPy BitGenerator interface,
// the raw block function (for the RFC 8439 vectors) and the entropy test hook.
#include <cstring>
#include <string>

#include "bindings.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/os_entropy.hpp"

namespace dpnoise::bindings {

namespace {

uint64_t bitgen_next_uint64(void* st) { return static_cast<random::ChaCha20Generator*>(st)->next_u64(); }
uint32_t bitgen_next_uint32(void* st) {
    return static_cast<uint32_t>(static_cast<random::ChaCha20Generator*>(st)->next_u64() >> 32);
}
double bitgen_next_double(void* st) {
    // NumPy's convention for a double in [0, 1): the top 53 bits times 2^-53. Only NumPy's own
    // (non-exact) distributions use it; dpnoise's samplers never touch floating point.
    return static_cast<double>(static_cast<random::ChaCha20Generator*>(st)->next_u64() >> 11) *
           (1.0 / 9007199254740992.0);
}

std::unique_ptr<GeneratorHandle> make_handle(std::unique_ptr<random::ChaCha20Generator> gen) {
    auto h = std::make_unique<GeneratorHandle>();
    h->gen = std::move(gen);
    h->bitgen = {h->gen.get(), &bitgen_next_uint64, &bitgen_next_uint32, &bitgen_next_double,
                 &bitgen_next_uint64};
    return h;
}

// The little-endian 32-bit word at p (RFC 8439 §2.3 reads keys and nonces this way).
uint32_t load_le32(const char* p) {
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    return uint32_t(b[0]) | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
}

random::StreamKey key_from_bytes(const py::bytes& b, const char* name) {
    const std::string s = b;
    if (s.size() != 32) throw std::invalid_argument(std::string(name) + " must be exactly 32 bytes");
    random::StreamKey k;
    for (int i = 0; i < 8; ++i) k.words[i] = load_le32(s.data() + 4 * i);
    return k;
}

}  // namespace

void register_random(py::module_& m) {
    py::class_<GeneratorHandle>(m, "ChaCha20Core",
                                "Thread-safe, fork-aware ChaCha20 generator (internal; use dpnoise.ChaCha20).")
        .def(py::init([]() { return make_handle(std::make_unique<random::ChaCha20Generator>()); }),
             "Secure generator keyed from the operating system.")
        .def(py::init([](const py::bytes& key) {
                 return make_handle(std::make_unique<random::ChaCha20Generator>(key_from_bytes(key, "seed key")));
             }),
             py::arg("seed_key"), "Reproducible generator keyed from 32 seed bytes (NOT secure).")
        .def_property_readonly("is_secure", [](const GeneratorHandle& h) { return h.gen->is_secure(); })
        .def("next_u64", [](GeneratorHandle& h) { return h.gen->next_u64(); })
        .def(
            "random_raw",
            [](GeneratorHandle& h, size_t n, unsigned threads) {
                py::array_t<uint64_t> out(static_cast<py::ssize_t>(n));
                uint64_t* p = out.mutable_data();
                {
                    py::gil_scoped_release release;
                    h.gen->fill_u64(p, n, threads);
                }
                return out;
            },
            py::arg("n"), py::arg("threads"))
        .def_property_readonly(
            "capsule",
            // The capsule points into the handle: the Python ChaCha20 object that owns the handle
            // must outlive it (NumPy's Generator keeps a reference to its bit generator).
            [](GeneratorHandle& h) { return py::capsule(static_cast<void*>(&h.bitgen), "BitGenerator"); });

    m.def(
        "chacha20_block",
        [](const py::bytes& key, uint32_t counter, const py::bytes& nonce) {
            const std::string n = nonce;
            if (n.size() != 12) throw std::invalid_argument("nonce must be exactly 12 bytes");
            const random::StreamKey k = key_from_bytes(key, "key");
            uint32_t state[16], out[16];
            for (int i = 0; i < 4; ++i) state[i] = random::kChaChaConstants[i];
            for (int i = 0; i < 8; ++i) state[4 + i] = k.words[i];
            state[12] = counter;
            for (int i = 0; i < 3; ++i) state[13 + i] = load_le32(n.data() + 4 * i);
            random::chacha20_block(state, out);
            std::string bytes(64, '\0');
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 4; ++j) bytes[static_cast<size_t>(4 * i + j)] = static_cast<char>((out[i] >> (8 * j)) & 0xff);
            return py::bytes(bytes);
        },
        py::arg("key"), py::arg("counter"), py::arg("nonce"),
        "One ChaCha20 block in the RFC 8439 layout (32-bit counter, 96-bit nonce).");
    m.def(
        "chacha20_stream_words",
        [](const py::bytes& key, uint64_t stream, uint64_t first_block, size_t nblocks, bool simd) {
            const random::StreamKey k = key_from_bytes(key, "key");
            py::array_t<uint32_t> out(static_cast<py::ssize_t>(16 * nblocks));
            random::chacha20_stream_blocks(k.words, stream, first_block, nblocks, out.mutable_data(), simd);
            return out;
        },
        py::arg("key"), py::arg("stream"), py::arg("first_block"), py::arg("nblocks"), py::arg("simd") = true,
        "Raw keystream words of consecutive blocks (for tests comparing the SIMD and portable paths).");
    m.def("chacha20_backend", &random::chacha20_backend);
    m.def(
        "_set_entropy_failure_for_testing",
        [](bool fail) { random::entropy_failure_for_testing().store(fail); }, py::arg("fail"),
        "Test hook: make every OS entropy request fail (dpnoise.EntropyError).");
    m.attr("SAMPLES_PER_STREAM") = py::int_(random::kSamplesPerStream);
}

}  // namespace dpnoise::bindings
