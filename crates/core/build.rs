//! Builds `src/llm/local/llama/guard.cpp`, llama.cpp's exception guard, with the `local-llm`
//! feature (without it there is nothing to build).

fn main() {
    println!("cargo:rerun-if-changed=src/llm/local/llama/guard.cpp");
    #[cfg(feature = "local-llm")]
    cc::Build::new()
        .cpp(true)
        .file("src/llm/local/llama/guard.cpp")
        .flag_if_supported("-std=c++17")
        // llama-cpp-sys-2 already links the C++ library (a second -lc++ has crashed Apple's
        // linker).
        .cpp_link_stdlib(None)
        .compile("souz_llama_guard");
}
