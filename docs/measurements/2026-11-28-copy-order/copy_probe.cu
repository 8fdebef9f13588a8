// Copy variants against cudaMemcpyDtoD: what a kernel needs to reach the copy engines' bandwidth.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ uint64_t policy_first() { uint64_t p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p; }

// 1: grid-stride float4 (our copy_f32).
__global__ void gs(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = s[i];
}
// 2: grid-stride, streaming hints: ld.global.nc.L1::no_allocate, st.global.cs
__global__ void gs_cs(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = __ldcs(s + i); __stcs(d + i, v);
  }
}
// 3: grid-stride, L2 evict_first policy on both loads and stores.
__global__ void gs_ef(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  uint64_t p = policy_first();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(s + i), "l"(p));
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(d + i), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "l"(p) : "memory");
  }
}
// 4: U float4 loads in flight per thread, block-contiguous tiles (U*blockDim vectors a tile), grid-stride over tiles.
template <int U, bool EF>
__global__ void unrolled(const float4* __restrict__ s, float4* __restrict__ d, size_t n) {
  uint64_t p = policy_first();
  size_t tile = (size_t)U * blockDim.x;
  for (size_t t0 = blockIdx.x * tile; t0 < n; t0 += (size_t)gridDim.x * tile) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) { size_t i = t0 + u * blockDim.x + threadIdx.x; if (i < n) {
      if (EF) asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v[u].x), "=f"(v[u].y), "=f"(v[u].z), "=f"(v[u].w) : "l"(s + i), "l"(p));
      else v[u] = __ldcs(s + i); } }
#pragma unroll
    for (int u = 0; u < U; u++) { size_t i = t0 + u * blockDim.x + threadIdx.x; if (i < n) {
      if (EF) asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(d + i), "f"(v[u].x), "f"(v[u].y), "f"(v[u].z), "f"(v[u].w), "l"(p) : "memory");
      else __stcs(d + i, v[u]); } }
  }
}
// 5: bulk copies through shared memory (copy_bulk's design): one thread, STAGES chunks of CHUNK bytes, optional L2 evict_first hint.
template <int STAGES, int CHUNK, bool EF>
__global__ void bulk(const char* __restrict__ s, char* __restrict__ d, size_t bytes) {
  extern __shared__ __align__(128) char sm[];
  uint64_t* bar = (uint64_t*)(sm + (size_t)STAGES * CHUNK);
  if (threadIdx.x != 0) return;
  uint64_t p = policy_first();
  size_t chunks = bytes / CHUNK, G = gridDim.x, b = blockIdx.x;
  size_t mine = chunks > b ? (chunks - b + G - 1) / G : 0;
  for (int i = 0; i < STAGES; i++) { uint32_t a = (uint32_t)__cvta_generic_to_shared(bar + i); asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(a)); }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  auto fill = [&](size_t j) {
    int st = j % STAGES; uint32_t a = (uint32_t)__cvta_generic_to_shared(bar + st); uint32_t dst = (uint32_t)__cvta_generic_to_shared(sm + (size_t)st * CHUNK);
    const char* src = s + (b + j * G) * CHUNK;
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(a), "r"(CHUNK));
    if (EF) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" :: "r"(dst), "l"(src), "r"(CHUNK), "r"(a), "l"(p) : "memory");
    else asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(dst), "l"(src), "r"(CHUNK), "r"(a) : "memory");
  };
  for (size_t j = 0; j < mine && j < STAGES; j++) fill(j);
  for (size_t j = 0; j < mine; j++) {
    int st = j % STAGES; uint32_t a = (uint32_t)__cvta_generic_to_shared(bar + st); uint32_t ph = (j / STAGES) & 1;
    asm volatile("{ .reg .pred P; W: mbarrier.try_wait.parity.shared.b64 P, [%0], %1; @!P bra W; }" :: "r"(a), "r"(ph) : "memory");
    uint32_t src = (uint32_t)__cvta_generic_to_shared(sm + (size_t)st * CHUNK);
    char* dst = d + (b + j * G) * CHUNK;
    if (EF) asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;" :: "l"(dst), "r"(src), "r"(CHUNK), "l"(p) : "memory");
    else asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst), "r"(src), "r"(CHUNK) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (j >= 1 && j - 1 + STAGES < mine) { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); fill(j - 1 + STAGES); }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
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
  char *s, *d; CK(cudaMalloc(&s, big)); CK(cudaMalloc(&d, big));
  CK(cudaMemset(s, 1, big)); CK(cudaMemset(d, 0, big));
  float roof_ms = timeit([&] { CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); });
  double roof = 2.0 * big / roof_ms / 1e6;
  printf("roof cudaMemcpy DtoD 1 GiB: %.4f ms %.1f GB/s\n", roof_ms, roof);
  for (size_t bytes : {(size_t)1 << 28, (size_t)1 << 30}) {
    size_t n4 = bytes / 16;
    auto report = [&](const char* name, float ms) {
      // check
      std::vector<unsigned char> h(4096); CK(cudaMemcpy(h.data(), d + bytes - 4096, 4096, cudaMemcpyDeviceToHost));
      bool ok = std::all_of(h.begin(), h.end(), [](unsigned char c) { return c == 1; });
      double gbs = 2.0 * bytes / ms / 1e6;
      printf("%5zu MiB %-34s %.4f ms %7.1f GB/s %5.1f%% %s\n", bytes >> 20, name, ms, gbs, 100 * gbs / roof, ok ? "" : "WRONG");
      CK(cudaMemset(d, 0, bytes));
    };
    report("cudaMemcpy DtoD", timeit([&] { CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice)); }));
    for (int bps : {4, 8, 16}) {
      char name[64];
      snprintf(name, 64, "gs 256x%d/SM", bps); report(name, timeit([&] { gs<<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
      snprintf(name, 64, "gs_cs 256x%d/SM", bps); report(name, timeit([&] { gs_cs<<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
      snprintf(name, 64, "gs_ef 256x%d/SM", bps); report(name, timeit([&] { gs_ef<<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
    }
    for (int bps : {2, 4, 8}) {
      char name[64];
      snprintf(name, 64, "unroll4 cs 256x%d/SM", bps); report(name, timeit([&] { unrolled<4, false><<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
      snprintf(name, 64, "unroll8 cs 256x%d/SM", bps); report(name, timeit([&] { unrolled<8, false><<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
      snprintf(name, 64, "unroll8 ef 256x%d/SM", bps); report(name, timeit([&] { unrolled<8, true><<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
      snprintf(name, 64, "unroll16 cs 256x%d/SM", bps); report(name, timeit([&] { unrolled<16, false><<<sms * bps, 256>>>((float4*)s, (float4*)d, n4); }));
    }
    // one block per chunk (no grid-stride) for the unrolled kernel
    { size_t blocks = n4 / (8 * 256); report("unroll8 cs, one tile a block", timeit([&] { unrolled<8, false><<<blocks, 256>>>((float4*)s, (float4*)d, n4); })); }
#define BULK(ST, CH, EF, BPS) { auto k = bulk<ST, CH, EF>; size_t sh = (size_t)ST * CH + 8 * ST; CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh)); \
      char name[64]; snprintf(name, 64, "bulk %dx%dK%s %d/SM", ST, CH / 1024, EF ? " ef" : "", BPS); report(name, timeit([&] { k<<<sms * BPS, 32, sh>>>(s, d, bytes); })); }
    BULK(4, 16384, false, 2) BULK(4, 16384, true, 2) BULK(8, 16384, false, 1) BULK(8, 16384, true, 1)
    BULK(12, 16384, false, 1) BULK(12, 16384, true, 1) BULK(6, 32768, false, 1) BULK(6, 32768, true, 1)
    BULK(4, 8192, false, 4) BULK(4, 8192, true, 4) BULK(3, 16384, true, 4) BULK(2, 32768, true, 3)
  }
  return 0;
}
