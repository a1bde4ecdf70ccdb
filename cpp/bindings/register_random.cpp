// Bindings for the random area: the ChaCha20 generator, its NumPy BitGenerator interface,
// the raw block function (for the RFC 8439 vectors) and the entropy test hook.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/os_entropy.hpp"
#include "dpnoise/random/public_stream.hpp"
#include "dpnoise/simd.hpp"

namespace dpnoise::bindings {

namespace {

constexpr random::ChaCha20Kernel kChaCha20Kernels[] = {random::ChaCha20Kernel::kPortable, random::ChaCha20Kernel::kAvx2,
                                                       random::ChaCha20Kernel::kAvx512vl, random::ChaCha20Kernel::kAvx512f};

// NumPy's BitGenerator interface over the handle's own reader of stream kNumpyStream. NumPy
// holds the bit generator's lock (`ChaCha20.lock`) around every call, so the reader needs no
// mutex of its own. There is no error channel in bitgen_t: if the reader cannot go on (OS
// entropy refused while re-keying after a fork, or a counter at its end), the process is
// aborted rather than hand out a word that is not fresh keystream.
template <class F>
auto never_throw(F&& f) noexcept -> decltype(f()) {
    try {
        return f();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dpnoise: fatal error in the NumPy BitGenerator interface: %s\n", e.what());
        std::abort();
    }
}
uint64_t bitgen_next_uint64(void* st) {
    return never_throw([st] { return static_cast<random::ReservedStreamReader*>(st)->next_u64(); });
}
uint32_t bitgen_next_uint32(void* st) {
    return never_throw([st] { return static_cast<random::ReservedStreamReader*>(st)->next_u32(); });
}
double bitgen_next_double(void* st) {
    // NumPy's convention for a double in [0, 1): the top 53 bits times 2^-53. Only NumPy's own
    // (non-exact) distributions use it; dpnoise's samplers never touch floating point.
    return never_throw([st] {
        return static_cast<double>(static_cast<random::ReservedStreamReader*>(st)->next_u64() >> 11) *
               (1.0 / 9007199254740992.0);
    });
}

std::unique_ptr<GeneratorHandle> make_handle(std::unique_ptr<random::ChaCha20Generator> gen) {
    auto h = std::make_unique<GeneratorHandle>();
    h->gen = std::move(gen);
    h->numpy_reader = std::make_unique<random::ReservedStreamReader>(*h->gen, random::kNumpyStream);
    h->bitgen = {h->numpy_reader.get(), &bitgen_next_uint64, &bitgen_next_uint32, &bitgen_next_double,
                 &bitgen_next_uint64};
    return h;
}

// A sequential family over a NumPy BitGenerator: reads the bitgen_t behind its capsule (the
// struct of numpy/random/bitgen.h) and keeps the bit generator and its lock alive.
std::unique_ptr<GeneratorHandle> make_external_handle(const py::object& bit_generator) {
    py::object capsule = bit_generator.attr("capsule");
    if (!PyCapsule_IsValid(capsule.ptr(), "BitGenerator"))
        throw py::type_error("bit_generator.capsule must be a NumPy 'BitGenerator' capsule");
    auto* bg = static_cast<bitgen_t*>(PyCapsule_GetPointer(capsule.ptr(), "BitGenerator"));
    if (bg == nullptr || bg->next_uint64 == nullptr) throw py::error_already_set();
    auto h = std::make_unique<GeneratorHandle>();
    h->external.emplace(bg->state, bg->next_uint64);
    h->external_owner = bit_generator;
    h->external_lock = bit_generator.attr("lock");
    return h;
}

// Fills p[0, n) with the next n words of g's sequential stream. A short request (at most 1,024
// words, about 1.5 us) keeps the GIL: releasing and retaking it costs ~40 ns when nobody else
// wants it, and when another thread does, retaking it can wait for that thread's whole switch
// interval. Holding it here cannot deadlock: no thread holds the generator's mutex while it
// waits for the GIL.
constexpr size_t kWordsFilledUnderTheGil = 1024;
void fill_words(random::ChaCha20Generator& g, uint64_t* p, size_t n, unsigned threads) {
    if (n <= kWordsFilledUnderTheGil) {
        g.fill_u64(p, n, 1);
        return;
    }
    py::gil_scoped_release release;
    g.fill_u64(p, n, threads);
}

GeneratorHandle& chacha(GeneratorHandle& h) {
    if (!h.gen) throw py::type_error("this operation needs a dpnoise ChaCha20 generator, not a NumPy bit generator");
    return h;
}

// n public words from the stream's method F(stream, x, out, n): words at offset x, or integers below x.
template <void (random::PublicStream::*F)(uint64_t, uint64_t, uint64_t*, size_t) const>
py::array_t<uint64_t> public_words(const random::PublicStream& s, uint64_t stream, uint64_t x, size_t n) {
    auto out = new_array<uint64_t>(n);
    uint64_t* p = out.mutable_data();
    py::gil_scoped_release release;
    (s.*F)(stream, x, p, n);
    return out;
}

}  // namespace

void register_random(py::module_& m) {
    py::class_<GeneratorHandle>(m, "GeneratorCore",
                                "A generator's stream family: dpnoise's ChaCha20 (thread-safe, fork-aware) or a "
                                "NumPy bit generator (sequential). Internal; use dpnoise.ChaCha20 / dpnoise.Generator.")
        .def(py::init([]() { return make_handle(std::make_unique<random::ChaCha20Generator>()); }),
             "Secure generator keyed from the operating system.")
        .def(py::init([](const py::bytes& key) {
                 return make_handle(std::make_unique<random::ChaCha20Generator>(key_from_bytes(key, "seed key")));
             }),
             py::arg("seed_key"), "Reproducible generator keyed from 32 seed bytes (NOT secure).")
        .def_static("from_numpy", &make_external_handle, py::arg("bit_generator"),
                    "A sequential, NOT secure family over a NumPy BitGenerator (held, with its lock, while drawing).")
        .def_property_readonly("is_secure", [](const GeneratorHandle& h) { return h.is_secure(); })
        .def_property_readonly("is_external", [](const GeneratorHandle& h) { return !h.gen; })
        .def("next_u64", [](GeneratorHandle& h) { return chacha(h).gen->next_u64(); })
        .def(
            "random_raw",
            [](GeneratorHandle& h, size_t n, unsigned threads) {
                random::ChaCha20Generator& g = *chacha(h).gen;
                auto out = new_array<uint64_t>(n);
                fill_words(g, out.mutable_data(), n, threads);
                return out;
            },
            py::arg("n"), py::arg("threads"))
        .def(
            "random_raw_into",
            [](GeneratorHandle& h, py::array& out, unsigned threads) {
                random::ChaCha20Generator& g = *chacha(h).gen;
                // the words go into memory in stream order: uint64, C-contiguous, writable
                // native byte order only: a byte-swapped uint64 is not equivalent to uint64_t
                if (!out.dtype().equal(py::dtype::of<uint64_t>())) throw py::type_error("out must be a uint64 array");
                if (!(out.flags() & py::array::c_style)) throw std::invalid_argument("out must be C-contiguous");
                if (!out.writeable()) throw std::invalid_argument("out must be writeable");
                fill_words(g, static_cast<uint64_t*>(out.mutable_data()), static_cast<size_t>(out.size()), threads);
            },
            py::arg("out").noconvert(), py::arg("threads"),
            "Fill the uint64, C-contiguous, writable array `out` with the next out.size words, in order.")
        .def(
            "skip",
            [](GeneratorHandle& h, uint64_t n) {
                random::ChaCha20Generator& g = *chacha(h).gen;
                py::gil_scoped_release release;
                g.skip_u64(n);
            },
            py::arg("n"), "Advance the sequential stream by n words without producing them.")
        .def(
            "spawn",
            [](GeneratorHandle& h, uint64_t count) {
                random::ChaCha20Generator& g = *chacha(h).gen;
                const std::vector<random::StreamKey> keys = g.spawn_keys(count);
                py::list children;
                for (const auto& k : keys)
                    children.append(py::cast(make_handle(std::make_unique<random::ChaCha20Generator>(k, g.is_secure()))));
                return children;
            },
            py::arg("count"), "The next `count` children (keys derived from this generator's key; see generator.hpp).")
        .def_property_readonly(
            "capsule",
            // The capsule points into the handle: the Python ChaCha20 object that owns the handle
            // must outlive it (NumPy's Generator keeps a reference to its bit generator).
            [](GeneratorHandle& h) { return py::capsule(static_cast<void*>(&chacha(h).bitgen), "BitGenerator"); });
    m.attr("ChaCha20Core") = m.attr("GeneratorCore");

    py::class_<random::PublicStream>(m, "PublicStreamCore",
                                     "PUBLIC addressable ChaCha20 words (internal; use dpnoise.PublicStream).")
        .def(py::init([](const py::bytes& key) { return random::PublicStream(key_from_bytes(key, "public key")); }),
             py::arg("public_key"))
        .def("words", &public_words<&random::PublicStream::words>, py::arg("stream"), py::arg("offset"), py::arg("n"))
        .def("integers_below", &public_words<&random::PublicStream::integers_below>, py::arg("stream"), py::arg("m"),
             py::arg("n"))
        .def(
            "signs",
            [](const random::PublicStream& s, uint64_t row0, size_t nrows, uint64_t col0, size_t ncols) {
                auto out = new_array<int8_t>(nrows, ncols);
                int8_t* p = out.mutable_data();
                py::gil_scoped_release release;
                s.signs(row0, nrows, col0, ncols, p);
                return out;
            },
            py::arg("row0"), py::arg("nrows"), py::arg("col0"), py::arg("ncols"));

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
            auto out = new_array<uint32_t>(16 * nblocks);
            random::chacha20_stream_blocks(k.words, stream, first_block, nblocks, out.mutable_data(), simd);
            return out;
        },
        py::arg("key"), py::arg("stream"), py::arg("first_block"), py::arg("nblocks"), py::arg("simd") = true,
        "Raw keystream words of consecutive blocks (for tests comparing the SIMD and portable paths).");
    m.def("chacha20_backend", &random::chacha20_backend);
    m.def(
        "_chacha20_kernels_for_testing",
        [] {
            py::list names;
            for (auto k : kChaCha20Kernels)
                if (random::chacha20_kernel_supported(k)) names.append(random::chacha20_kernel_name(k));
            return names;
        },
        "Test hook: the ChaCha20 kernels this CPU can run, slowest first.");
    m.def(
        "_force_chacha20_kernel_for_testing",
        [](const py::object& kernel) {
            if (kernel.is_none()) {
                random::force_chacha20_kernel_for_testing(nullptr);
                return;
            }
            if (!py::isinstance<py::str>(kernel)) throw py::type_error("kernel must be a str or None");
            const std::string name = py::cast<std::string>(kernel);
            for (auto k : kChaCha20Kernels) {
                if (name != random::chacha20_kernel_name(k)) continue;
                if (!random::force_chacha20_kernel_for_testing(&k))
                    throw std::invalid_argument("kernel '" + name + "' is not supported on this CPU");
                return;
            }
            throw std::invalid_argument("kernel must be one of 'portable', 'avx2', 'avx512vl', 'avx512f' or None");
        },
        py::arg("kernel"),
        "Test hook: compute every later multi-block ChaCha20 request with `kernel` (None: the fastest\n"
        "supported again). The words never change; only which code computes them.");
    m.def(
        "_set_entropy_failure_for_testing",
        [](bool fail) { random::entropy_failure_for_testing().store(fail); }, py::arg("fail"),
        "Test hook: make every OS entropy request fail (dpnoise.EntropyError).");
    m.attr("SAMPLES_PER_STREAM") = py::int_(random::kSamplesPerStream);
    m.attr("NUMPY_STREAM") = py::int_(random::kNumpyStream);
    m.attr("SPAWN_STREAM") = py::int_(random::kSpawnStream);
    // False for a build without the x86 SIMD kernels: another CPU, or DPNOISE_NO_SIMD
    m.attr("X86_SIMD_BUILT") = py::bool_(kBuiltWithX86Simd);
}

}  // namespace dpnoise::bindings
