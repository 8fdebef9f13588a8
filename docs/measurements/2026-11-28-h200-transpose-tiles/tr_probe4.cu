// Transpose step 8 (vec4, grid over the output's tiles) with grouped block
// orders and cache-streaming hints, against cudaMemcpy DtoD (1 GiB) and a copy
// of one 16-byte vector a thread, at 8192^2 and 16384^2, one process.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void copy1(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) d[i] = s[i];
}

// vec4 as shipped: 64x64 tile, 16x16 threads, 65-float rows, row order (O=0) or column order (O=1).
template <int O>
__global__ void vec4(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[64 * 65];
  int gx = gridDim.x, gy = gridDim.y, L = blockIdx.y * gx + blockIdx.x;
  int bx = O ? L / gy : L % gx, by = O ? L % gy : L / gx;
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


// vec4 with block order O: 0 row (input tiles), 1 column (output tiles, step 8),
// 2 grouped: bands of G output tile-rows, column order inside a band.
// H: 0 plain, 1 ld.global.cs + st.global.cs, 2 ld.global.nc + st.global.cs, 3 st.global.cs only,
// 4 ld.global.nc.L1::no_allocate (L2 evict_first) + st (L2 evict_first) via createpolicy.
template <int O, int G, int H>
__global__ void vec4h(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[64 * 65];
  int gx = gridDim.x, gy = gridDim.y, L = blockIdx.y * gx + blockIdx.x;
  int bx, by;
  if (O == 0) { bx = L % gx; by = L / gx; }
  else if (O == 1) { bx = L / gy; by = L % gy; }
  else { int band = L / (G * gy), r = L % (G * gy); bx = band * G + r % G; by = r / G; }
  int tx = threadIdx.x, ty = threadIdx.y, row0 = by * 64, col0 = bx * 64;
  uint64_t pol = 0;
  if (H == 4) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  float4 v[4];
  for (int k = 0; k < 4; k++) {
    const float4* p = (const float4*)(in + (size_t)(row0 + ty + 16 * k) * cols + col0 + 4 * tx);
    if (H == 1) v[k] = __ldcs(p);
    else if (H == 2) v[k] = __ldg(p);
    else if (H == 4) asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v[k].x), "=f"(v[k].y), "=f"(v[k].z), "=f"(v[k].w) : "l"(p), "l"(pol));
    else v[k] = *p;
  }
  for (int k = 0; k < 4; k++) { float* t = tile + (ty + 16 * k) * 65 + 4 * tx; t[0] = v[k].x; t[1] = v[k].y; t[2] = v[k].z; t[3] = v[k].w; }
  __syncthreads();
  for (int k = 0; k < 4; k++) {
    int oc = ty + 16 * k; float4 w;
    w.x = tile[(4 * tx) * 65 + oc]; w.y = tile[(4 * tx + 1) * 65 + oc]; w.z = tile[(4 * tx + 2) * 65 + oc]; w.w = tile[(4 * tx + 3) * 65 + oc];
    float4* q = (float4*)(out + (size_t)(col0 + oc) * rows + row0 + 4 * tx);
    if (H == 1 || H == 2 || H == 3) __stcs(q, w);
    else if (H == 4) asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(q), "f"(w.x), "f"(w.y), "f"(w.z), "f"(w.w), "l"(pol) : "memory");
    else *q = w;
  }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
template <class F> float timeit(F f, int reps = 40) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 10; i++) f();
  std::vector<float> t;
  for (int i = 0; i < reps; i++) { CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms); }
  CK(cudaGetLastError());
  return median(t);
}

static float* g_d; static int g_bad;
static void check(const char* name, int n) {
  // Input element i is (i % 1000003); output [c][r] = input [r][c].
  std::mt19937_64 rng(n);
  std::vector<float> h(1);
  int bad = 0;
  std::vector<size_t> at(4096);
  for (auto& x : at) x = rng() % ((size_t)n * n);
  std::vector<float> got(at.size());
  for (size_t i = 0; i < at.size(); i++) CK(cudaMemcpy(&got[i], g_d + at[i], 4, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < at.size(); i++) {
    size_t oc = at[i] / n, orow = at[i] % n;  // output row oc = input column, output column = input row
    float want = (float)((orow * (size_t)n + oc) % 1000003);
    if (got[i] != want) bad++;
  }
  if (bad) { printf("WRONG %s at %d^2: %d of %zu\n", name, n, bad, at.size()); g_bad++; }
}

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  printf("%s, %d SMs\n", prop.name, sms);
  size_t big = (size_t)1 << 30;
  float *s, *d; CK(cudaMalloc(&s, big)); CK(cudaMalloc(&d, big)); g_d = d;
  { std::vector<float> h(big / 4); for (size_t i = 0; i < h.size(); i++) h[i] = (float)(i % 1000003); CK(cudaMemcpy(s, h.data(), big, cudaMemcpyHostToDevice)); }
  // Sustained warm-up: a second of copies before anything is timed.
  { cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); float ms = 0; CK(cudaEventRecord(a));
    while (ms < 1000) { for (int i = 0; i < 50; i++) CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); CK(cudaEventElapsedTime(&ms, a, b)); } }
  float roof_ms = timeit([&] { CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); });
  double roof = 2.0 * big / roof_ms / 1e6;
  printf("roof cudaMemcpy DtoD 1 GiB: %.4f ms %.1f GB/s\n", roof_ms, roof);
  for (int n : {8192, 16384}) {
    size_t bytes = (size_t)n * n * 4, n4 = bytes / 16;
    auto rep = [&](const char* name, float ms) { double gbs = 2.0 * bytes / ms / 1e6; printf("%5d^2 %-40s %.4f ms %7.1f GB/s %5.1f%%\n", n, name, ms, gbs, 100 * gbs / roof); };
    rep("cudaMemcpy DtoD", timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
    rep("copy one vector a thread", timeit([&] { copy1<<<n4 / 256, 256>>>((float4*)s, (float4*)d, n4); }));
    dim3 grid(n / 64, n / 64), block(16, 16);
#define V(O, G, H, NAME) CK(cudaMemset(d, 0xff, bytes)); rep(NAME, timeit([&] { vec4h<O, G, H><<<grid, block>>>(s, d, n, n); })); check(NAME, n);
    V(0, 1, 0, "row (step 7)") V(1, 1, 0, "col (step 8)")
    V(2, 2, 0, "col bands of 2") V(2, 4, 0, "col bands of 4") V(2, 8, 0, "col bands of 8") V(2, 16, 0, "col bands of 16") V(2, 32, 0, "col bands of 32")
    V(1, 1, 1, "col, ld.cs + st.cs") V(1, 1, 2, "col, ld.nc + st.cs") V(1, 1, 3, "col, st.cs") V(1, 1, 4, "col, evict_first both")
    V(0, 1, 1, "row, ld.cs + st.cs") V(0, 1, 4, "row, evict_first both")
    V(1, 1, 0, "col (step 8) again")
    rep("cudaMemcpy DtoD again", timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
  }
  printf("%s\n", g_bad ? "SOME WRONG" : "all checked outputs right");
  return 0;
}
