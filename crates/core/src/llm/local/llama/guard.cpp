// llama.cpp calls that throw C++ exceptions on bad input, caught here so that none unwinds
// into Rust (`binding.rs`): a grammar's parse and a grammar accepting a token it does not
// allow. Opaque pointers and int32_t only, so no llama.cpp header is needed.
#include <cstdint>

struct llama_sampler;
struct llama_vocab;

extern "C" {
llama_sampler * llama_sampler_init_grammar(const llama_vocab * vocab, const char * grammar,
                                           const char * root);
void llama_sampler_accept(llama_sampler * sampler, int32_t token);

llama_sampler * souz_llama_sampler_init_grammar(const llama_vocab * vocab, const char * grammar,
                                                const char * root) noexcept {
    try {
        return llama_sampler_init_grammar(vocab, grammar, root);
    } catch (...) {
        return nullptr;
    }
}

int32_t souz_llama_sampler_accept(llama_sampler * sampler, int32_t token) noexcept {
    try {
        llama_sampler_accept(sampler, token);
        return 0;
    } catch (...) {
        return -1;
    }
}
}
