// Softmax of long rows: a cluster of C blocks per row, each block's slice held partly in
// registers (V float4 a thread) and the rest in shared memory (cp.async), pairs traded
// with st.async counted on an mbarrier (as kernels/src/softmax/04_cluster.rs).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_pipeline.h>

__device__ __forceinline__ float warp_max(float v){ for(int o=16;o;o>>=1) v=fmaxf(v,__shfl_xor_sync(~0u,v,o)); return v;}
__device__ __forceinline__ float warp_sum(float v){ for(int o=16;o;o>>=1) v+=__shfl_xor_sync(~0u,v,o); return v;}
__device__ __forceinline__ unsigned rank_() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }

template<int C, int V>
__global__ void sm_hyb(const float* __restrict__ in, float* __restrict__ out, int cols) {
  extern __shared__ __align__(16) float4 sm4[];
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bar;
  __shared__ __align__(8) float2 slots[C];
  int rank = rank_();
  int row = blockIdx.x / C;
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  int t = threadIdx.x, T = blockDim.x, w = t / 32, l = t % 32, W = T / 32;
  int nreg = min(n, T * V);  // groups [0, nreg) in registers, [nreg, n) in shared memory
  for (int g = nreg + t; g < n; g += T) __pipeline_memcpy_async(&sm4[g - nreg], &src[g], 16);
  __pipeline_commit();
  float4 v[V > 0 ? V : 1];
#pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < nreg ? __ldcs(&src[g]) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(8 * (C - 1)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  __pipeline_wait_prior(0);
  __syncthreads();
  for (int g = t; g < n - nreg; g += T) { float4 u = sm4[g]; m = fmaxf(m, fmaxf(fmaxf(u.x, u.y), fmaxf(u.z, u.w))); }
  m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
  m = l < W ? red[l] : -INFINITY; m = warp_max(m);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < V; k++) { v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m); v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m); s += v[k].x + v[k].y + v[k].z + v[k].w; }
  for (int g = t; g < n - nreg; g += T) { float4 u = sm4[g]; u.x = __expf(u.x - m); u.y = __expf(u.y - m); u.z = __expf(u.z - m); u.w = __expf(u.w - m); s += u.x + u.y + u.z + u.w; sm4[g] = u; }
  s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
  s = l < W ? red[l] : 0.f; s = warp_sum(s);
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (t < C && t != rank) {
    unsigned slot = (unsigned)__cvta_generic_to_shared(&slots[rank]), rs, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(slot), "r"(t));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar_a), "r"(t));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" :: "r"(rs), "f"(m), "f"(s), "r"(rb) : "memory");
  }
  if (t == rank) slots[rank] = make_float2(m, s);
  unsigned done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar_a) : "memory");
  __syncthreads();
  float M = -INFINITY, S = 0.f;
#pragma unroll
  for (int r = 0; r < C; r++) M = fmaxf(M, slots[r].x);
#pragma unroll
  for (int r = 0; r < C; r++) S += slots[r].y * __expf(slots[r].x - M);
  float scale = __expf(m - M) / S;
#pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; if (g < nreg) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
  for (int g = t; g < n - nreg; g += T) { float4 o = sm4[g]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[nreg + g], o); }
}

#define CK(x) do{cudaError_t e=(x); if(e){printf("ERR %s line %d: %s\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

template<int C, int V>
float runh(const float* in, float* out, int rows, int cols, int T, int reps, bool& ok, int& regs, int& per_sm) {
  int groups = cols / 4, per = (groups + C - 1) / C;
  int rest = std::max(0, per - T * V);
  size_t smem = (size_t)rest * 16;
  ok = false;
  if (smem > 200 * 1024) return 0;
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, sm_hyb<C, V>)); regs = fa.numRegs;
  if (fa.numRegs * T > 65536) return 0;
  CK(cudaFuncSetAttribute(sm_hyb<C, V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)std::max<size_t>(smem, 1)));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sm_hyb<C, V>, T, smem));
  ok = true;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 3; i++) {
    cudaEventRecord(a);
    CK(cudaLaunchKernelEx(&cfg, sm_hyb<C, V>, in, out, cols));
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}

int main() {
  int shapes[][2] = {{512, 100000}, {1024, 100000}, {1024, 50000}};
  size_t maxn = 1024ull * 100000;
  float *in, *out; CK(cudaMalloc(&in, maxn * 4)); CK(cudaMalloc(&out, maxn * 4));
  std::vector<float> h(maxn); for (size_t i = 0; i < maxn; i++) h[i] = (float)((i * 2654435761u) % 1000) / 100.f - 5.f;
  CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  for (auto& sh : shapes) {
    int rows = sh[0], cols = sh[1]; size_t n = (size_t)rows * cols;
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> ts;
    for (int i = 0; i < 23; i++) { cudaEventRecord(a); cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); float dtod = ts[ts.size() / 2];
    printf("%dx%d dtod %.1f us (%.0f GB/s)\n", rows, cols, dtod * 1e3, 2.0 * n * 4 / dtod / 1e6);
    for (int T : {256, 320, 384, 448, 512}) {
      bool ok; float ms; int regs = 0, per_sm = 0;
#define H(CC, VV) ms = runh<CC, VV>(in, out, rows, cols, T, 20, ok, regs, per_sm); if (ok) { \
        std::vector<float> o(cols); CK(cudaMemset(out, 0xff, 4)); ms = runh<CC, VV>(in, out, rows, cols, T, 20, ok, regs, per_sm); \
        cudaMemcpy(o.data(), out + (size_t)(rows - 1) * cols, cols * 4, cudaMemcpyDeviceToHost); \
        double M = -1e30, S = 0, err = 0; const float* x = h.data() + (size_t)(rows - 1) * cols; \
        for (int c = 0; c < cols; c++) M = std::max(M, (double)x[c]); for (int c = 0; c < cols; c++) S += exp(x[c] - M); \
        for (int c = 0; c < cols; c++) { double want = exp(x[c] - M) / S; err = std::max(err, fabs(o[c] - want) / want); } \
        float o0; cudaMemcpy(&o0, out, 4, cudaMemcpyDeviceToHost); \
        printf("  hyb C=%2d T=%3d V=%2d regs %3d blocks/SM %d smem %6d B %8.1f us  %.1f%% of dtod  relerr %.2e first %g\n", CC, T, VV, regs, per_sm, \
               std::max(0, (cols / 4 + CC - 1) / CC - T * VV) * 16, ms * 1e3, 100.0 * dtod / ms, err, o0); }
      H(8, 0) H(8, 4) H(8, 7) H(8, 8)
    }
  }
  return 0;
}
