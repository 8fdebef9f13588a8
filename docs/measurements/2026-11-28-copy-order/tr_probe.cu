// Transpose block order, and the copy's geometry, against cudaMemcpy DtoD (1 GiB).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void gs(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = s[i];
}
// vec4's kernel (64x64 tile, 16x16 threads, 65-float rows), tiles visited in groups of G tile rows.
__global__ void tr(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int G) {
  __shared__ float tile[64 * 65];
  int gx = gridDim.x, gy = gridDim.y;
  int L = blockIdx.y * gx + blockIdx.x;
  int group = L / (G * gx), first = group * G, size = min(gy - first, G), r = L % (G * gx);
  int by = first + r % size, bx = r / size;
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
// The same with cache-streaming hints on both sides.
__global__ void tr_cs(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int G) {
  __shared__ float tile[64 * 65];
  int gx = gridDim.x, gy = gridDim.y;
  int L = blockIdx.y * gx + blockIdx.x;
  int group = L / (G * gx), first = group * G, size = min(gy - first, G), r = L % (G * gx);
  int by = first + r % size, bx = r / size;
  int tx = threadIdx.x, ty = threadIdx.y, row0 = by * 64, col0 = bx * 64;
  float4 v[4];
  for (int k = 0; k < 4; k++) v[k] = __ldcs((const float4*)(in + (size_t)(row0 + ty + 16 * k) * cols + col0 + 4 * tx));
  for (int k = 0; k < 4; k++) { float* t = tile + (ty + 16 * k) * 65 + 4 * tx; t[0] = v[k].x; t[1] = v[k].y; t[2] = v[k].z; t[3] = v[k].w; }
  __syncthreads();
  for (int k = 0; k < 4; k++) {
    int oc = ty + 16 * k; float4 w;
    w.x = tile[(4 * tx) * 65 + oc]; w.y = tile[(4 * tx + 1) * 65 + oc]; w.z = tile[(4 * tx + 2) * 65 + oc]; w.w = tile[(4 * tx + 3) * 65 + oc];
    __stcs((float4*)(out + (size_t)(col0 + oc) * rows + row0 + 4 * tx), w);
  }
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
  int sms = prop.multiProcessorCount;
  printf("%s, %d SMs\n", prop.name, sms);
  size_t big = (size_t)1 << 30;
  float *s, *d; CK(cudaMalloc(&s, big)); CK(cudaMalloc(&d, big));
  { std::vector<float> h(big / 4); for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 1000003); CK(cudaMemcpy(s, h.data(), big, cudaMemcpyHostToDevice)); }
  float roof_ms = timeit([&] { CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); });
  double roof = 2.0 * big / roof_ms / 1e6;
  printf("roof cudaMemcpy DtoD 1 GiB: %.4f ms %.1f GB/s\n", roof_ms, roof);
  for (int n : {8192, 16384}) {
    size_t bytes = (size_t)n * n * 4, n4 = bytes / 16;
    auto rep = [&](const char* name, float ms) { double gbs = 2.0 * bytes / ms / 1e6; printf("%5d^2 %-30s %.4f ms %7.1f GB/s %5.1f%%\n", n, name, ms, gbs, 100 * gbs / roof); };
    rep("cudaMemcpy DtoD", timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
    rep("copy gs 8x256/SM", timeit([&] { gs<<<sms * 8, 256>>>((float4*)s, (float4*)d, n4); }));
    rep("copy one vector a thread", timeit([&] { gs<<<n4 / 256, 256>>>((float4*)s, (float4*)d, n4); }));
    rep("copy two vectors a thread", timeit([&] { gs<<<n4 / 512, 256>>>((float4*)s, (float4*)d, n4); }));
    dim3 grid(n / 64, n / 64), block(16, 16);
    for (int G : {1, 2, 4, 8, 16, 32, 64, 256}) {
      char name[64]; snprintf(name, 64, "vec4 G%d", G); rep(name, timeit([&] { tr<<<grid, block>>>(s, d, n, n, G); }));
      if (G == 1) { std::vector<float> h(4096); CK(cudaMemcpy(h.data(), d + (size_t)(n - 1) * n, 4096 * 4, cudaMemcpyDeviceToHost));
        for (int j = 0; j < 4096; j++) if (h[j] != (float)(((size_t)j * n + n - 1) % 1000003)) { printf("WRONG at %d\n", j); break; } }
      snprintf(name, 64, "vec4 cs G%d", G); rep(name, timeit([&] { tr_cs<<<grid, block>>>(s, d, n, n, G); }));
    }
  }
  return 0;
}
