#include <cstdio>
#include <chrono>
#include <cuda_runtime.h>
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main(){
  cudaFree(0); cudaStream_t s; cudaStreamCreateWithFlags(&s,cudaStreamNonBlocking);
  size_t sizes[]={1<<20, 64<<20, 512<<20, (size_t)4<<30};
  for(size_t b: sizes){
    for(int rep=0;rep<2;rep++){
    void*p; double t0=now(); cudaMalloc(&p,b); double t1=now();
    cudaMemsetAsync(p,0,b,s); cudaStreamSynchronize(s); double t2=now();
    cudaMemsetAsync(p,1,b,s); cudaStreamSynchronize(s); double t3=now();
    cudaFree(p); double t4=now();
    printf("cudaMalloc %8.1f MB: alloc %.3f ms, first memset %.3f ms, second %.3f ms, free %.3f ms\n", b/1e6,(t1-t0)*1e3,(t2-t1)*1e3,(t3-t2)*1e3,(t4-t3)*1e3);
    }
  }
  cudaMemPool_t pool; cudaDeviceGetDefaultMemPool(&pool,0);
  for(int keep=0; keep<2; keep++){
    uint64_t k= keep? (uint64_t)64<<30 : 0; cudaMemPoolSetAttribute(pool,cudaMemPoolAttrReleaseThreshold,&k);
    for(size_t b: sizes) for(int rep=0;rep<2;rep++){
      void*p; double t0=now(); cudaMallocAsync(&p,b,s); double t1=now();
      cudaMemsetAsync(p,0,b,s); cudaStreamSynchronize(s); double t2=now();
      cudaFreeAsync(p,s); cudaStreamSynchronize(s); double t3=now();
      printf("pool keep=%d %8.1f MB: alloc %.3f ms, alloc+memset %.3f ms, free+sync %.3f ms\n", keep, b/1e6,(t1-t0)*1e3,(t2-t0)*1e3,(t3-t2)*1e3);
    }
  }
  return 0;
}
