// Transpose tile shapes, and a transpose through registers alone, against cudaMemcpy DtoD (1 GiB).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void copy1(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) d[i] = s[i];
}
// Tile of TR input rows x TC input columns through shared memory (rows of TC+1 floats);
// NT threads; loads: thread t reads vec4 (row t / (TC/4) + k*NT/(TC/4), col 4*(t % (TC/4))).
// Stores: output tile TC rows x TR cols, thread t writes vec4 (orow t/(TR/4) + k*NT/(TR/4), ocol 4*(t % (TR/4))).
template <int TR, int TC, int NT>
__global__ void __launch_bounds__(NT) tile_tr(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ float tile[];
  constexpr int S = TC + 1, LW = TC / 4, LR = NT / LW, KL = TR / LR, SW = TR / 4, SR = NT / SW, KS = TC / SR;
  int t = threadIdx.x, row0 = blockIdx.y * TR, col0 = blockIdx.x * TC;
  float4 v[KL];
  int lr = t / LW, lc = 4 * (t % LW);
#pragma unroll
  for (int k = 0; k < KL; k++) v[k] = *(const float4*)(in + (size_t)(row0 + lr + LR * k) * cols + col0 + lc);
#pragma unroll
  for (int k = 0; k < KL; k++) { float* p = tile + (lr + LR * k) * S + lc; p[0] = v[k].x; p[1] = v[k].y; p[2] = v[k].z; p[3] = v[k].w; }
  __syncthreads();
  int sr = t / SW, sc = 4 * (t % SW);
#pragma unroll
  for (int k = 0; k < KS; k++) {
    int oc = sr + SR * k; float4 w;
    w.x = tile[(sc) * S + oc]; w.y = tile[(sc + 1) * S + oc]; w.z = tile[(sc + 2) * S + oc]; w.w = tile[(sc + 3) * S + oc];
    *(float4*)(out + (size_t)(col0 + oc) * rows + row0 + sc) = w;
  }
}
// Registers only: each thread moves a 4x4 block (4 vec4 loads from 4 rows, 4 vec4 stores to 4 output rows).
// A warp: 8 lanes along columns (128 B) x 4 along rows (each output row gets 64 contiguous bytes);
// W warps stacked along rows (block tile 16W rows x 32 cols); Q 4x4 blocks a thread, further along rows.
template <int W, int Q>
__global__ void __launch_bounds__(32 * W) reg_tr(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32, lx = lane % 8, ly = lane / 8;
  int col = blockIdx.x * 32 + 4 * lx;
  int rowb = blockIdx.y * (16 * W * Q) + 16 * w + 4 * ly;
  float4 a[Q][4];
#pragma unroll
  for (int q = 0; q < Q; q++)
#pragma unroll
    for (int i = 0; i < 4; i++) a[q][i] = *(const float4*)(in + (size_t)(rowb + 16 * W * q + i) * cols + col);
#pragma unroll
  for (int q = 0; q < Q; q++) {
    int r = rowb + 16 * W * q;
    *(float4*)(out + (size_t)(col + 0) * rows + r) = make_float4(a[q][0].x, a[q][1].x, a[q][2].x, a[q][3].x);
    *(float4*)(out + (size_t)(col + 1) * rows + r) = make_float4(a[q][0].y, a[q][1].y, a[q][2].y, a[q][3].y);
    *(float4*)(out + (size_t)(col + 2) * rows + r) = make_float4(a[q][0].z, a[q][1].z, a[q][2].z, a[q][3].z);
    *(float4*)(out + (size_t)(col + 3) * rows + r) = make_float4(a[q][0].w, a[q][1].w, a[q][2].w, a[q][3].w);
  }
}
__global__ void check(const float* __restrict__ out, int n, unsigned* bad) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i >= (size_t)n * n) return;
  size_t r = i / n, c = i % n;  // out[r][c] = in[c][r] = (c*n + r) % 1000003
  if (out[i] != (float)((c * n + r) % 1000003)) atomicAdd(bad, 1u);
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
template <class F> float timeit(F f, int reps = 30) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; i++) f();
  std::vector<float> t;
  for (int i = 0; i < reps; i++) { CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms); }
  CK(cudaGetLastError());
  return median(t);
}

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  size_t big = (size_t)1 << 30;
  float *s, *d; unsigned* bad; CK(cudaMalloc(&s, big)); CK(cudaMalloc(&d, big)); CK(cudaMalloc(&bad, 4));
  { std::vector<float> h(big / 4); for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 1000003); CK(cudaMemcpy(s, h.data(), big, cudaMemcpyHostToDevice)); }
  float roof_ms = timeit([&] { CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); });
  double roof = 2.0 * big / roof_ms / 1e6;
  printf("roof cudaMemcpy DtoD 1 GiB: %.4f ms %.1f GB/s\n", roof_ms, roof);
  for (int n : {8192, 16384}) {
    size_t bytes = (size_t)n * n * 4, n4 = bytes / 16;
    auto rep = [&](const char* name, float ms, bool verify) {
      unsigned nb = 0;
      if (verify) { CK(cudaMemset(bad, 0, 4)); check<<<(unsigned)(((size_t)n * n + 255) / 256), 256>>>(d, n, bad); CK(cudaMemcpy(&nb, bad, 4, cudaMemcpyDeviceToHost)); }
      double gbs = 2.0 * bytes / ms / 1e6;
      printf("%5d^2 %-34s %.4f ms %7.1f GB/s %5.1f%%%s\n", n, name, ms, gbs, 100 * gbs / roof, verify ? (nb ? "  WRONG" : "  ok") : "");
    };
    rep("cudaMemcpy DtoD", timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }), false);
    rep("copy one vector a thread", timeit([&] { copy1<<<n4 / 256, 256>>>((float4*)s, (float4*)d, n4); }), false);
#define TILE(TR, TC, NT) { auto k = tile_tr<TR, TC, NT>; int sm = TR * (TC + 1) * 4; \
      CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, sm)); dim3 g(n / TC, n / TR); \
      CK(cudaMemset(d, 0xff, bytes)); \
      float ms = timeit([&] { k<<<g, NT, sm>>>(s, d, n, n); }); char nm[64]; snprintf(nm, 64, "tile %dx%d %d threads", TR, TC, NT); rep(nm, ms, true); }
    TILE(64, 64, 256) TILE(64, 64, 512) TILE(64, 64, 128) TILE(32, 32, 256) TILE(32, 32, 64) TILE(32, 128, 256) TILE(128, 32, 256)
    TILE(128, 128, 1024) TILE(128, 128, 512) TILE(64, 128, 512) TILE(128, 64, 512) TILE(32, 64, 256) TILE(64, 32, 256)
#define REG(W, Q) { dim3 g(n / 32, n / (16 * W * Q)); CK(cudaMemset(d, 0xff, bytes)); \
      float ms = timeit([&] { reg_tr<W, Q><<<g, 32 * W>>>(s, d, n, n); }); char nm[64]; snprintf(nm, 64, "registers %d warps x %d", W, Q); rep(nm, ms, true); }
    REG(8, 1) REG(4, 1) REG(8, 2) REG(4, 2) REG(16, 1) REG(2, 4)
  }
  return 0;
}
