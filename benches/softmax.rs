//! Criterion bench for softmax (issue 6): not written yet.

fn main() {
    eprintln!("the softmax bench is not written yet (issue 6)");
}
