//! Criterion bench for nested_sin (issue 4): not written yet.

fn main() {
    eprintln!("the nested_sin bench is not written yet (issue 4)");
}
