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
# Counted in Allreduces that succeeded, so that every survivor makes as
# many on the shrunk communicator: one may see the revoke after its
# Allreduce succeeded, another in its next one, which fails.
done = 0
while done < 50:
    if rank == victim and done == 10:
        print(f"rank {rank} dies", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        comm.Allreduce(np.ones(1), x, op=MPI.SUM)
        assert x[0] == comm.Get_size()
        done += 1
    except MPI.Exception as e:
        assert e.Get_error_class() in (MPI.ERR_PROC_FAILED, MPI.ERR_REVOKED), e
        comm.Revoke()
    # Every survivor comes here, also one whose Allreduce succeeded before
    # another revoked: they all make the same calls (Agree, then Shrink).
    if comm.Is_revoked():
        try:
            comm.Agree(1)
        except MPI.Exception as e:  # uniform ERR_PROC_FAILED: shrink anyway
            assert e.Get_error_class() == MPI.ERR_PROC_FAILED, e
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
