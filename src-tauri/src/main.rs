fn main() {
    souz_app::run()
}
