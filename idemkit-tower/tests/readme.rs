//! The README's axum quick start is `examples/axum_quick_start.rs`, which cargo
//! compiles: this checks that the README shows that file's code, character for
//! character, so the front page cannot drift from what compiles.

#[test]
fn the_readme_quick_start_is_the_compiled_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/axum_quick_start.rs");
    let code: String = example
        .lines()
        .filter(|line| !line.starts_with("//!"))
        .map(|line| format!("{line}\n"))
        .collect();
    let start = readme
        .find("<!-- axum quick start: examples/axum_quick_start.rs -->")
        .expect("the README marks its axum quick start");
    let block = &readme[start..];
    let open = block.find("```rust").expect("a rust block") + "```rust".len();
    let body_start = open + block[open..].find('\n').expect("a line break") + 1;
    let body_end = body_start + block[body_start..].find("```").expect("a closing fence");
    assert_eq!(&block[body_start..body_end], code);
}
