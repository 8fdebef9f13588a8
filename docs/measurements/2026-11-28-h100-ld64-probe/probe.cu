// How does an H100 serve a warp's 8-byte shared loads? One warp, 32 lanes, each
// reads 8 bytes at its own offset (a pattern per launch), 64 times; ncu counts
// wavefronts and requests per launch.
#include <cstdio>
#include <cstdint>
struct Pattern { uint32_t off[32]; };
__global__ void ld64(Pattern p, float* out) {
    __shared__ alignas(16) float s[2048];
    for (int i = threadIdx.x; i < 2048; i += 32) s[i] = i;
    __syncthreads();
    uint32_t base = (uint32_t)__cvta_generic_to_shared(s) + p.off[threadIdx.x];
    float acc = 0;
    #pragma unroll 1
    for (int r = 0; r < 64; r++) {
        float x, y;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(base + (r & 1) * 4096));
        acc += x * y;
    }
    out[threadIdx.x] = acc;
}
// Step 14's column pairs (kernels/src/gemm/14_wgmma_direct.rs, pair_of) for warp w, row k = q (+4 if hi).
static uint32_t step14(int lane, int w, bool hi) {
    int g = lane / 4, q = lane % 4, k = q + (hi ? 4 : 0);
    int n = 2 * (g % 2) + 4 * (g / 4) + 16 * ((g / 2) % 2) + 8 * (w % 2);
    return k * 128 + 16 * ((n / 4) ^ (k % 8)) + 4 * (n % 4);
}
int main() {
    const char* names[] = {"linear (lane i at 8i)", "8-lane groups swapped (lanes 8-15 <-> 16-23)", "even lanes first 128 B, odd second",
                           "step 14 warp 0, k = q", "step 14 warp 0, k = q + 4", "step 14 warp 1, k = q",
                           "each half-warp one 128 B row, rows 0 and 1", "lane pairs (2j, 2j+1) share a 16 B chunk, chunks by k-row as step 14 but g order 0..7"};
    float* out; cudaMalloc(&out, 128);
    for (int pi = 0; pi < 8; pi++) {
        Pattern p;
        for (int i = 0; i < 32; i++) {
            switch (pi) {
                case 0: p.off[i] = 8 * i; break;
                case 1: { int grp = i / 8; int sw = grp == 1 ? 2 : grp == 2 ? 1 : grp; p.off[i] = 8 * (8 * sw + i % 8); } break;
                case 2: p.off[i] = 8 * ((i % 2) * 16 + i / 2); break;
                case 3: p.off[i] = step14(i, 0, false); break;
                case 4: p.off[i] = step14(i, 0, true); break;
                case 5: p.off[i] = step14(i, 1, false); break;
                case 6: p.off[i] = (i / 16) * 128 + 8 * (i % 16); break;
                case 7: { int g = i / 4, q = i % 4; int n = 2 * g; p.off[i] = q * 128 + 16 * ((n / 4) ^ q) + 4 * (n % 4); } break;
            }
        }
        printf("pattern %d: %s:", pi, names[pi]);
        for (int i = 0; i < 32; i++) printf(" %u", p.off[i]);
        printf("\n");
        ld64<<<1, 32>>>(p, out);
    }
    cudaDeviceSynchronize();
    return 0;
}
