// Probe: softmax of long rows, a cluster of C blocks per row, the row in
// registers (what kernels/src/softmax/04_cluster.rs does), for C = 4, 8 and
// 16 (16 is a non-portable cluster size: the kernel opts in with
// cudaFuncAttributeNonPortableClusterSizeAllowed).
// Median of 30 CUDA-event timings after 5 warm-ups; % of cudaMemcpy DtoD of
// the same bytes in the same process; relerr: worst relative error against
// an f64 softmax over 3 rows, the output poisoned before each kernel.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>

#define CK(x) do{cudaError_t e=(x); if(e){printf("ERR %s line %d: %s\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ float warp_max(float v){ for(int o=16;o;o>>=1) v=fmaxf(v,__shfl_xor_sync(~0u,v,o)); return v;}
__device__ __forceinline__ float warp_sum(float v){ for(int o=16;o;o>>=1) v+=__shfl_xor_sync(~0u,v,o); return v;}
__device__ __forceinline__ unsigned cta_rank(){ unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned nclusterid(){ unsigned r; asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned clusterid(){ unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
__device__ __forceinline__ void mb_init(unsigned bar, unsigned n){ asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(n) : "memory"); }
__device__ __forceinline__ void mb_expect(unsigned bar, unsigned bytes){ asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mb_wait(unsigned bar, unsigned parity){
  unsigned done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void mb_wait_cluster(unsigned bar, unsigned parity){
  unsigned done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar){
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void send_pair(unsigned rank, unsigned slot, unsigned bar, float m, float s){
  unsigned rs, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(slot), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" :: "r"(rs), "f"(m), "f"(s), "r"(rb) : "memory");
}

// Block reduce of (m, s) pairs computed per thread over its registers.
template<int V>
__device__ __forceinline__ void reduce_block(float4 (&v)[V], float* red, float& m_out, float& s_out) {
  int t = threadIdx.x, w = t / 32, l = t % 32, W = blockDim.x / 32;
  float m = -INFINITY;
  #pragma unroll
  for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
  m = l < W ? red[l] : -INFINITY; m = warp_max(m);
  float s = 0.f;
  #pragma unroll
  for (int k = 0; k < V; k++) { v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m); v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m); s += v[k].x + v[k].y + v[k].z + v[k].w; }
  s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
  s = l < W ? red[l] : 0.f; s = warp_sum(s);
  m_out = m; s_out = s;
}

// Baseline: step 4 (M=3 of the 2026-11-25 probe).
template<int C, int V, int MAXT>
__global__ void __launch_bounds__(MAXT, 65536 / (64 * MAXT)) sm_reg(const float* __restrict__ in, float* __restrict__ out, int cols) {
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bar;
  __shared__ __align__(8) float2 slots[C];
  int rank = cta_rank();
  int row = blockIdx.x / C;
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  int t = threadIdx.x, T = blockDim.x;
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);
  float4 v[V];
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < n ? __ldcs(&src[g]) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
  if (t == 0) {
    mb_init(bar_a, 1); mb_expect(bar_a, 8 * (C - 1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  float m, s; reduce_block<V>(v, red, m, s);
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (t < C && t != rank) send_pair(t, (unsigned)__cvta_generic_to_shared(&slots[rank]), bar_a, m, s);
  if (t == rank) slots[rank] = make_float2(m, s);
  mb_wait_cluster(bar_a, 0);
  __syncthreads();
  float M = -INFINITY, S = 0.f;
  #pragma unroll
  for (int r = 0; r < C; r++) M = fmaxf(M, slots[r].x);
  #pragma unroll
  for (int r = 0; r < C; r++) S += slots[r].y * __expf(slots[r].x - M);
  float scale = __expf(m - M) / S;
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
}


static float median(std::vector<float> ts) { std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2]; }

template<typename F>
float timeit(F f, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 5; i++) {
    cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 5) ts.push_back(ms);
  }
  CK(cudaGetLastError());
  return median(ts);
}

// T: the dispatch's rule, ceil(slice groups / V) rounded up to a warp.
template<int C, int V, int MAXT>
float run_reg(const float* in, float* out, int rows, int cols, int& T, bool& ok, int& active) {
  int per = (cols / 4 + C - 1) / C;
  T = ((per + V - 1) / V + 31) / 32 * 32;
  if (T > MAXT) { ok = false; return 0; }
  ok = true;
  if (C > 8) CK(cudaFuncSetAttribute(sm_reg<C, V, MAXT>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T);
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  { cudaLaunchConfig_t c2 = cfg; c2.gridDim = dim3(132 * 8 * C); int cl = 0; CK(cudaOccupancyMaxActiveClusters(&cl, (void*)sm_reg<C, V, MAXT>, &c2)); active = cl; }
  return timeit([&]{ CK(cudaLaunchKernelEx(&cfg, sm_reg<C, V, MAXT>, in, out, cols)); }, 30);
}

int main() {
  int shapes[][2] = {{512, 100000}, {671, 100000}, {1024, 100000}, {1024, 65536}, {1342, 50000}, {1677, 40000}, {2048, 32768}, {2730, 24576}, {3640, 18432}, {4096, 16384}};
  size_t maxn = 1024ull * 100000;
  float *in, *out; CK(cudaMalloc(&in, maxn * 4)); CK(cudaMalloc(&out, maxn * 4));
  std::vector<float> h(maxn); srand(7); for (size_t i = 0; i < maxn; i++) h[i] = (float)rand() / RAND_MAX * 20.f - 10.f;
  CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  { float warm = timeit([&]{ cudaMemcpyAsync(out, in, maxn * 4, cudaMemcpyDeviceToDevice); }, 200); (void)warm; }
  for (auto& sh : shapes) {
    int rows = sh[0], cols = sh[1]; size_t n = (size_t)rows * cols;
    float dtod = timeit([&]{ cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); }, 30);
    printf("%dx%d dtod %.1f us (%.0f GB/s)\n", rows, cols, dtod * 1e3, 2.0 * n * 4 / dtod / 1e6);
    auto verify = [&](const char* name, int T, int clusters, float ms) {
      double worst = 0;
      for (int r : {0, rows / 2, rows - 1}) {
        std::vector<float> o(cols); CK(cudaMemcpy(o.data(), out + (size_t)r * cols, cols * 4, cudaMemcpyDeviceToHost));
        const float* x = h.data() + (size_t)r * cols; double M = -1e30, S = 0;
        for (int c = 0; c < cols; c++) M = std::max(M, (double)x[c]);
        for (int c = 0; c < cols; c++) S += exp(x[c] - M);
        for (int c = 0; c < cols; c++) { double want = exp(x[c] - M) / S; double e = fabs(o[c] - want) / want; if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : std::max(worst, e); }
      }
      printf(" %-8s T=%4d clusters(active) %4d %8.1f us  %5.1f%% of dtod  relerr %.2e\n", name, T, clusters, ms * 1e3, 100.0 * dtod / ms, worst);
    };
    bool ok; float ms; int cl, T;
#define POISON CK(cudaMemset(out, 0xff, n * 4));
#define REG(CC, VV, TT) POISON ms = run_reg<CC, VV, TT>(in, out, rows, cols, T, ok, cl); if (ok) { printf("  V=%d", VV); verify("c" #CC "x" #TT, T, cl, ms); }
    REG(8, 7, 256) REG(8, 7, 512) REG(16, 7, 256) REG(16, 7, 128) REG(16, 4, 256) REG(16, 4, 512) REG(8, 4, 512) REG(4, 7, 1024) REG(4, 7, 512) REG(16, 2, 512)
  }
  return 0;
}
