# An allreduce of numpy arrays (buffer interface) and of Python objects.
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
a = np.arange(1000, dtype='d') * (rank + 1)
b = np.empty_like(a)
comm.Allreduce(a, b, op=MPI.SUM)
assert np.allclose(b, np.arange(1000) * size * (size + 1) / 2), b[:4]
i = np.full(7, rank, dtype='i')
comm.Allreduce(MPI.IN_PLACE, i, op=MPI.MAX)
assert (i == size - 1).all()
assert comm.allreduce(rank) == size * (size - 1) // 2
r = comm.Iallreduce(a, b, op=MPI.SUM)
r.Wait()
assert np.allclose(b, np.arange(1000) * size * (size + 1) / 2)
print(f"rank {rank}: allreduce OK ({MPI.Get_library_version().splitlines()[0]})")
