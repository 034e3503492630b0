# The Python-level host cost of a few single operations on the H200 (run 5 of RUNS.md):
#   PYTHONPATH=build-gpu/python python3 run5-alloc-probe.py
import time, statistics, torch, torch.nn.functional as F, fftconv
dev = torch.device('cuda')
def med(f, batch=25, rounds=40):
    s = []
    for r in range(rounds + 3):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for _ in range(batch): f()
        t1 = time.perf_counter()
        if r >= 3: s.append((t1 - t0) / batch * 1e6)
    return statistics.median(s)
x = torch.randn(64, 1, 96, 96, device=dev); w = torch.randn(1, 1, 45, 45, device=dev)
wg = w.clone().requires_grad_()
xc = torch.randn(1, 1, 16, 16); wc = torch.randn(1, 1, 3, 3).requires_grad_()
direct = fftconv.functional._conv2d_direct
ng = torch.no_grad()
calls = {
  'empty_cuda_y': lambda: torch.empty((64, 1, 96, 96), device=dev),
  'empty_cuda_8MB': lambda: torch.empty(8 << 20, dtype=torch.uint8, device=dev),
  'empty_cpu': lambda: torch.empty((64, 1, 96, 96)),
  'cur_stream': lambda: torch.cuda.current_stream(),
  'direct_grad_cuda': lambda: direct(x, wg, None, [22, 22], [22, 22], [1, 1], 1, 'auto') if False else direct(x, wg, None, [1, 1], [22, 22], [1, 1], 1, 'auto'),
  'direct_grad_cpu_algo_cudnn': lambda: direct(xc, wc, None, [1, 1], [1, 1], [1, 1], 1, 'cudnn'),
  'direct_grad_cpu_auto': lambda: direct(xc, wc, None, [1, 1], [1, 1], [1, 1], 1, 'auto'),
  'add_cuda': lambda: x.add(1.0),
  'F_conv_cpu': lambda: F.conv2d(xc, wc, padding=1),
}
for k in calls: calls[k]()
res = {k: [] for k in calls}
for rep in range(3):
    for k, f in calls.items(): res[k].append(med(f))
for k, v in res.items(): print(f'{k:28s} ' + ' '.join(f'{u:6.2f}' for u in v))
