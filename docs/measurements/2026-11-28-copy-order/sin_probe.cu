// A nested-sin-like map (sinf, then a degree-17 odd polynomial: about 40 instructions an element),
// and four __sinf (about 11): how the walk over the array (a resident wave looping, one vector a
// thread, U vectors a thread grid-strided, U vectors a thread in a block-contiguous tile with the
// loads first) sets the speed against cudaMemcpy DtoD.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ float poly(float x) {
  float s = sinf(x), t = s * s;
  float p = 1.1e-12f;
  p = fmaf(p, t, -2.3e-11f); p = fmaf(p, t, 4.1e-10f); p = fmaf(p, t, -7.2e-9f); p = fmaf(p, t, 1.1e-7f);
  p = fmaf(p, t, -1.7e-6f); p = fmaf(p, t, 2.4e-5f); p = fmaf(p, t, -3.1e-4f); p = fmaf(p, t, -0.5f);
  return fmaf(p * t, s, s);
}
__device__ __forceinline__ float fast(float x) { return __sinf(__sinf(__sinf(__sinf(x)))); }
template <int K> __device__ __forceinline__ float f(float x) { return K == 0 ? poly(x) : fast(x); }
template <int K> __device__ __forceinline__ float4 f4(float4 v) { return make_float4(f<K>(v.x), f<K>(v.y), f<K>(v.z), f<K>(v.w)); }

template <int K> __global__ void gs(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = f4<K>(s[i]);
}
template <int K, int U> __global__ void tile(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  size_t t0 = blockIdx.x * (size_t)U * blockDim.x + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; u++) v[u] = s[t0 + u * blockDim.x];
#pragma unroll
  for (int u = 0; u < U; u++) d[t0 + u * blockDim.x] = f4<K>(v[u]);
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
  size_t bytes = (size_t)1 << 30, n4 = bytes / 16;
  float *s, *d; CK(cudaMalloc(&s, bytes)); CK(cudaMalloc(&d, bytes));
  { std::vector<float> h(bytes / 4); for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 1000003) * 1e-3f; CK(cudaMemcpy(s, h.data(), bytes, cudaMemcpyHostToDevice)); }
  float roof_ms = timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); });
  double roof = 2.0 * bytes / roof_ms / 1e6;
  printf("roof cudaMemcpy DtoD 1 GiB: %.4f ms %.1f GB/s\n", roof_ms, roof);
  auto rep = [&](const char* name, float ms) { double gbs = 2.0 * bytes / ms / 1e6; printf("2^28 %-34s %.4f ms %7.1f GB/s %5.1f%%\n", name, ms, gbs, 100 * gbs / roof); };
#define KERNELS(K, NAME) { \
    int occ; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gs<K>, 256, 0)); char name[64]; \
    snprintf(name, 64, "%s wave (%d blocks/SM)", NAME, occ); rep(name, timeit([&] { gs<K><<<sms * occ, 256>>>((float4*)s, (float4*)d, n4); })); \
    for (int u : {1, 2, 4, 8, 16}) { snprintf(name, 64, "%s gs, %d vectors a thread", NAME, u); rep(name, timeit([&] { gs<K><<<n4 / (256 * u), 256>>>((float4*)s, (float4*)d, n4); })); } \
    snprintf(name, 64, "%s tile U2", NAME); rep(name, timeit([&] { tile<K, 2><<<n4 / 512, 256>>>((float4*)s, (float4*)d, n4); })); \
    snprintf(name, 64, "%s tile U4", NAME); rep(name, timeit([&] { tile<K, 4><<<n4 / 1024, 256>>>((float4*)s, (float4*)d, n4); })); \
    snprintf(name, 64, "%s tile U8", NAME); rep(name, timeit([&] { tile<K, 8><<<n4 / 2048, 256>>>((float4*)s, (float4*)d, n4); })); }
  KERNELS(0, "poly-like")
  KERNELS(1, "fast-like")
  return 0;
}
