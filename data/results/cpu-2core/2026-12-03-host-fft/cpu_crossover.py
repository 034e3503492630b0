# Forward times of fftconv.conv2d (the host FFT) and F.conv2d on the CPU by kernel size; see RUNS.md.
import time, statistics, torch, torch.nn.functional as F, fftconv
torch.set_num_threads(2)
def t(f, n=5):
    f(); s=[]
    for _ in range(n):
        t0=time.perf_counter(); f(); s.append(time.perf_counter()-t0)
    return statistics.median(s)*1e3
for (N,C,H,K,g) in [(1,16,64,16,1),(1,32,64,32,32),(4,64,56,64,1),(8,3,128,3,3),(1,1,96,1,1)]:
    for k in [3,5,7,9,11,15,21,31]:
        x=torch.randn(N,C,H,H); w=torch.randn(K,C//g,k,k)
        a=t(lambda: fftconv.conv2d(x,w,padding=k//2,groups=g)); b=t(lambda: F.conv2d(x,w,padding=k//2,groups=g))
        print(f"N{N} C{C} H{H} K{K} g{g} k{k}: fftconv {a:8.3f} torch {b:8.3f} ratio {a/b:6.2f}", flush=True)
