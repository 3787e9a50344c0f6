# scipy side of bench_spmv_kernel.cpp: same matrix shapes (2-D Poisson 2000^2, random 1e6 x 1e6 / 1e7 nnz),
# int32 indices; prints wall and process-CPU milliseconds (best of 8) for A @ x and A.T @ x.
import warnings; warnings.simplefilter('ignore')
import time, numpy as np, scipy.sparse as sp
cb=[1e9]
def best(f, n=8):
    f(); b=1e9; cb[0]=1e9
    for _ in range(n):
        t=time.perf_counter(); c=time.process_time(); f(); b=min(b, time.perf_counter()-t); cb[0]=min(cb[0], time.process_time()-c)
    return b
g=2000
T=sp.diags([-1,-1,4,-1,-1],[-g,-1,0,1,g],shape=(g*g,g*g),format='csr')  # not exact 5-pt boundary but same size
one=sp.eye(g, format='csr'); d=sp.diags([-1,2,-1],[-1,0,1],shape=(g,g))
P=(sp.kron(one,d)+sp.kron(d,one)).tocsr()
rng=np.random.default_rng(0)
n=10**6; nnz=10**7
r=rng.integers(0,n,nnz); c=rng.integers(0,n,nnz)
R=sp.csr_matrix((np.ones(nnz),(r,c)),shape=(n,n)); R.sum_duplicates()
for name,A in (("poisson2d",P),("random1e6",R)):
    for dt in (np.float32,np.float64):
        B=A.astype(dt); B.indices=B.indices.astype(np.int32); B.indptr=B.indptr.astype(np.int32)
        x=rng.standard_normal(B.shape[1]).astype(dt)
        tn=best(lambda: B@x); cn=cb[0]; tt=best(lambda: B.T@x); ct=cb[0]
        print(f"{name} {np.dtype(dt).name} nnz={B.nnz} N wall {tn*1e3:.2f} ms cpu {cn*1e3:.2f} | T wall {tt*1e3:.2f} ms cpu {ct*1e3:.2f}", flush=True)
