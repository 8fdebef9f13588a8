//! Criterion bench for gemm (issue 5): not written yet.

fn main() {
    eprintln!("the gemm bench is not written yet (issue 5)");
}
