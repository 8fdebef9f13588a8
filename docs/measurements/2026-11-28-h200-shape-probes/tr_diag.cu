// vec4's transpose (64x64 tile, 16x16 threads, 65-float rows) with its tiles visited in row order,
// diagonal order (NVIDIA's transposeDiagonal: tile column (bx + by) mod the tile columns), and in
// row order with the tile column rotated by 8 per tile row; against cudaMemcpy DtoD (1 GiB).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
template <int ORDER>
__global__ void tr(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[64 * 65];
  int by = blockIdx.y, bx = blockIdx.x;
  if (ORDER == 1) bx = (blockIdx.x + blockIdx.y) % gridDim.x;
  if (ORDER == 2) bx = (blockIdx.x + 8 * blockIdx.y) % gridDim.x;
  int tx = threadIdx.x, ty = threadIdx.y, row0 = by * 64, col0 = bx * 64;
  float4 v[4];
  for (int k = 0; k < 4; k++) v[k] = *(const float4*)(in + (size_t)(row0 + ty + 16 * k) * cols + col0 + 4 * tx);
  for (int k = 0; k < 4; k++) { float* t = tile + (ty + 16 * k) * 65 + 4 * tx; t[0] = v[k].x; t[1] = v[k].y; t[2] = v[k].z; t[3] = v[k].w; }
  __syncthreads();
  for (int k = 0; k < 4; k++) {
    int oc = ty + 16 * k; float4 w;
    w.x = tile[(4 * tx) * 65 + oc]; w.y = tile[(4 * tx + 1) * 65 + oc]; w.z = tile[(4 * tx + 2) * 65 + oc]; w.w = tile[(4 * tx + 3) * 65 + oc];
    *(float4*)(out + (size_t)(col0 + oc) * rows + row0 + 4 * tx) = w;
  }
}
__global__ void check(const float* __restrict__ out, int n, unsigned* bad) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i >= (size_t)n * n) return;
  size_t r = i / n, c = i % n;
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
  for (int round = 1; round <= 2; round++)
  for (int n : {8192, 16384}) {
    size_t bytes = (size_t)n * n * 4;
    dim3 grid(n / 64, n / 64), block(16, 16);
    auto rep = [&](const char* name, float ms) {
      unsigned nb = 0; CK(cudaMemset(bad, 0, 4)); check<<<(unsigned)(((size_t)n * n + 255) / 256), 256>>>(d, n, bad); CK(cudaMemcpy(&nb, bad, 4, cudaMemcpyDeviceToHost));
      double gbs = 2.0 * bytes / ms / 1e6; printf("%5d^2 %-22s %.4f ms %7.1f GB/s %5.1f%%  %s (round %d)\n", n, name, ms, gbs, 100 * gbs / roof, nb ? "WRONG" : "ok", round); };
    CK(cudaMemset(d, 0xff, bytes)); rep("vec4 row order", timeit([&] { tr<0><<<grid, block>>>(s, d, n, n); }));
    CK(cudaMemset(d, 0xff, bytes)); rep("vec4 diagonal", timeit([&] { tr<1><<<grid, block>>>(s, d, n, n); }));
    CK(cudaMemset(d, 0xff, bytes)); rep("vec4 rotated by 8", timeit([&] { tr<2><<<grid, block>>>(s, d, n, n); }));
  }
  return 0;
}
