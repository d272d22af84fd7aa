# ULFM from Python: a rank dies (SIGKILL); the survivors see the failure,
# revoke, agree and shrink, and finish on the shrunk communicator.
import os, signal, sys
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD.Dup()
comm.Set_errhandler(MPI.ERRORS_RETURN)
rank, size = comm.Get_rank(), comm.Get_size()
victim = size - 1
x = np.zeros(1)
recovered = False
for it in range(50):
    if rank == victim and it == 10:
        print(f"rank {rank} dies", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        comm.Allreduce(np.ones(1), x, op=MPI.SUM)
        assert x[0] == comm.Get_size()
    except MPI.Exception as e:
        assert e.Get_error_class() in (MPI.ERR_PROC_FAILED, MPI.ERR_REVOKED), e
        comm.Revoke()
        try:
            comm.Agree(1)
        except MPI.Exception as e:  # uniform ERR_PROC_FAILED: shrink anyway
            assert e.Get_error_class() == MPI.ERR_PROC_FAILED, e
    if comm.Is_revoked():
        failed = comm.Get_failed()
        assert failed.Get_size() == 1
        new = comm.Shrink()
        comm.Free()
        comm = new
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        recovered = True
assert recovered and comm.Get_size() == size - 1, (recovered, comm.Get_size())
print(f"rank {rank}: recovered, {comm.Get_size()} survivors, ULFM OK", flush=True)
comm.Free()
