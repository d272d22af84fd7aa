package main

/*
#include "cabi.h"
*/
import "C"

import "unsafe"

// The collectives' entry points: blocking, nonblocking (I), persistent
// (_init) and large-count (_c) forms of each, over the cores in coll.go.
// The info argument of the persistent forms carries hints, which are
// accepted and not used.

//export shmpi_MPI_Barrier
func shmpi_MPI_Barrier(comm C.uintptr_t) C.int {
	return barrierCall(comm, mBlock, nil, "MPI_Barrier")
}

//export shmpi_MPI_Ibarrier
func shmpi_MPI_Ibarrier(comm C.uintptr_t, req *C.uintptr_t) C.int {
	return barrierCall(comm, mNB, req, "MPI_Ibarrier")
}

//export shmpi_MPI_Barrier_init
func shmpi_MPI_Barrier_init(comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return barrierCall(comm, mPersist, req, "MPI_Barrier_init")
}

//export shmpi_MPI_Bcast
func shmpi_MPI_Bcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mBlock, nil, "MPI_Bcast")
}

//export shmpi_MPI_Bcast_c
func shmpi_MPI_Bcast_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mBlock, nil, "MPI_Bcast_c")
}

//export shmpi_MPI_Ibcast
func shmpi_MPI_Ibcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mNB, req, "MPI_Ibcast")
}

//export shmpi_MPI_Ibcast_c
func shmpi_MPI_Ibcast_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mNB, req, "MPI_Ibcast_c")
}

//export shmpi_MPI_Bcast_init
func shmpi_MPI_Bcast_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mPersist, req, "MPI_Bcast_init")
}

//export shmpi_MPI_Bcast_init_c
func shmpi_MPI_Bcast_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, mPersist, req, "MPI_Bcast_init_c")
}

//export shmpi_MPI_Gather
func shmpi_MPI_Gather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mBlock, nil, "MPI_Gather")
}

//export shmpi_MPI_Gather_c
func shmpi_MPI_Gather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mBlock, nil, "MPI_Gather_c")
}

//export shmpi_MPI_Igather
func shmpi_MPI_Igather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mNB, req, "MPI_Igather")
}

//export shmpi_MPI_Igather_c
func shmpi_MPI_Igather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mNB, req, "MPI_Igather_c")
}

//export shmpi_MPI_Gather_init
func shmpi_MPI_Gather_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mPersist, req, "MPI_Gather_init")
}

//export shmpi_MPI_Gather_init_c
func shmpi_MPI_Gather_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mPersist, req, "MPI_Gather_init_c")
}

//export shmpi_MPI_Scatter
func shmpi_MPI_Scatter(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mBlock, nil, "MPI_Scatter")
}

//export shmpi_MPI_Scatter_c
func shmpi_MPI_Scatter_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mBlock, nil, "MPI_Scatter_c")
}

//export shmpi_MPI_Iscatter
func shmpi_MPI_Iscatter(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mNB, req, "MPI_Iscatter")
}

//export shmpi_MPI_Iscatter_c
func shmpi_MPI_Iscatter_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mNB, req, "MPI_Iscatter_c")
}

//export shmpi_MPI_Scatter_init
func shmpi_MPI_Scatter_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mPersist, req, "MPI_Scatter_init")
}

//export shmpi_MPI_Scatter_init_c
func shmpi_MPI_Scatter_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, mPersist, req, "MPI_Scatter_init_c")
}

//export shmpi_MPI_Allgather
func shmpi_MPI_Allgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mBlock, nil, "MPI_Allgather")
}

//export shmpi_MPI_Allgather_c
func shmpi_MPI_Allgather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mBlock, nil, "MPI_Allgather_c")
}

//export shmpi_MPI_Iallgather
func shmpi_MPI_Iallgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mNB, req, "MPI_Iallgather")
}

//export shmpi_MPI_Iallgather_c
func shmpi_MPI_Iallgather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mNB, req, "MPI_Iallgather_c")
}

//export shmpi_MPI_Allgather_init
func shmpi_MPI_Allgather_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mPersist, req, "MPI_Allgather_init")
}

//export shmpi_MPI_Allgather_init_c
func shmpi_MPI_Allgather_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mPersist, req, "MPI_Allgather_init_c")
}

//export shmpi_MPI_Alltoall
func shmpi_MPI_Alltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mBlock, nil, "MPI_Alltoall")
}

//export shmpi_MPI_Alltoall_c
func shmpi_MPI_Alltoall_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mBlock, nil, "MPI_Alltoall_c")
}

//export shmpi_MPI_Ialltoall
func shmpi_MPI_Ialltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mNB, req, "MPI_Ialltoall")
}

//export shmpi_MPI_Ialltoall_c
func shmpi_MPI_Ialltoall_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mNB, req, "MPI_Ialltoall_c")
}

//export shmpi_MPI_Alltoall_init
func shmpi_MPI_Alltoall_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mPersist, req, "MPI_Alltoall_init")
}

//export shmpi_MPI_Alltoall_init_c
func shmpi_MPI_Alltoall_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, mPersist, req, "MPI_Alltoall_init_c")
}

//export shmpi_MPI_Gatherv
func shmpi_MPI_Gatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, false, mBlock, nil, "MPI_Gatherv")
}

//export shmpi_MPI_Gatherv_c
func shmpi_MPI_Gatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, true, mBlock, nil, "MPI_Gatherv_c")
}

//export shmpi_MPI_Igatherv
func shmpi_MPI_Igatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, false, mNB, req, "MPI_Igatherv")
}

//export shmpi_MPI_Igatherv_c
func shmpi_MPI_Igatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, true, mNB, req, "MPI_Igatherv_c")
}

//export shmpi_MPI_Gatherv_init
func shmpi_MPI_Gatherv_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, false, mPersist, req, "MPI_Gatherv_init")
}

//export shmpi_MPI_Gatherv_init_c
func shmpi_MPI_Gatherv_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, true, mPersist, req, "MPI_Gatherv_init_c")
}

//export shmpi_MPI_Scatterv
func shmpi_MPI_Scatterv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, false, mBlock, nil, "MPI_Scatterv")
}

//export shmpi_MPI_Scatterv_c
func shmpi_MPI_Scatterv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, true, mBlock, nil, "MPI_Scatterv_c")
}

//export shmpi_MPI_Iscatterv
func shmpi_MPI_Iscatterv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, false, mNB, req, "MPI_Iscatterv")
}

//export shmpi_MPI_Iscatterv_c
func shmpi_MPI_Iscatterv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, true, mNB, req, "MPI_Iscatterv_c")
}

//export shmpi_MPI_Scatterv_init
func shmpi_MPI_Scatterv_init(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, false, mPersist, req, "MPI_Scatterv_init")
}

//export shmpi_MPI_Scatterv_init_c
func shmpi_MPI_Scatterv_init_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, true, mPersist, req, "MPI_Scatterv_init_c")
}

//export shmpi_MPI_Allgatherv
func shmpi_MPI_Allgatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mBlock, nil, "MPI_Allgatherv")
}

//export shmpi_MPI_Allgatherv_c
func shmpi_MPI_Allgatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mBlock, nil, "MPI_Allgatherv_c")
}

//export shmpi_MPI_Iallgatherv
func shmpi_MPI_Iallgatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mNB, req, "MPI_Iallgatherv")
}

//export shmpi_MPI_Iallgatherv_c
func shmpi_MPI_Iallgatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mNB, req, "MPI_Iallgatherv_c")
}

//export shmpi_MPI_Allgatherv_init
func shmpi_MPI_Allgatherv_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mPersist, req, "MPI_Allgatherv_init")
}

//export shmpi_MPI_Allgatherv_init_c
func shmpi_MPI_Allgatherv_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mPersist, req, "MPI_Allgatherv_init_c")
}

//export shmpi_MPI_Alltoallv
func shmpi_MPI_Alltoallv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mBlock, nil, "MPI_Alltoallv")
}

//export shmpi_MPI_Alltoallv_c
func shmpi_MPI_Alltoallv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mBlock, nil, "MPI_Alltoallv_c")
}

//export shmpi_MPI_Ialltoallv
func shmpi_MPI_Ialltoallv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mNB, req, "MPI_Ialltoallv")
}

//export shmpi_MPI_Ialltoallv_c
func shmpi_MPI_Ialltoallv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mNB, req, "MPI_Ialltoallv_c")
}

//export shmpi_MPI_Alltoallv_init
func shmpi_MPI_Alltoallv_init(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, false, mPersist, req, "MPI_Alltoallv_init")
}

//export shmpi_MPI_Alltoallv_init_c
func shmpi_MPI_Alltoallv_init_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, true, mPersist, req, "MPI_Alltoallv_init_c")
}

//export shmpi_MPI_Alltoallw
func shmpi_MPI_Alltoallw(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mBlock, nil, "MPI_Alltoallw")
}

//export shmpi_MPI_Alltoallw_c
func shmpi_MPI_Alltoallw_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mBlock, nil, "MPI_Alltoallw_c")
}

//export shmpi_MPI_Ialltoallw
func shmpi_MPI_Ialltoallw(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mNB, req, "MPI_Ialltoallw")
}

//export shmpi_MPI_Ialltoallw_c
func shmpi_MPI_Ialltoallw_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mNB, req, "MPI_Ialltoallw_c")
}

//export shmpi_MPI_Alltoallw_init
func shmpi_MPI_Alltoallw_init(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mPersist, req, "MPI_Alltoallw_init")
}

//export shmpi_MPI_Alltoallw_init_c
func shmpi_MPI_Alltoallw_init_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return alltoallwCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mPersist, req, "MPI_Alltoallw_init_c")
}

//export shmpi_MPI_Allreduce
func shmpi_MPI_Allreduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Allreduce")
}

//export shmpi_MPI_Allreduce_c
func shmpi_MPI_Allreduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Allreduce_c")
}

//export shmpi_MPI_Iallreduce
func shmpi_MPI_Iallreduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iallreduce")
}

//export shmpi_MPI_Iallreduce_c
func shmpi_MPI_Iallreduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iallreduce_c")
}

//export shmpi_MPI_Allreduce_init
func shmpi_MPI_Allreduce_init(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Allreduce_init")
}

//export shmpi_MPI_Allreduce_init_c
func shmpi_MPI_Allreduce_init_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Allreduce_init_c")
}

//export shmpi_MPI_Reduce
func shmpi_MPI_Reduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mBlock, nil, "MPI_Reduce")
}

//export shmpi_MPI_Reduce_c
func shmpi_MPI_Reduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mBlock, nil, "MPI_Reduce_c")
}

//export shmpi_MPI_Ireduce
func shmpi_MPI_Ireduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mNB, req, "MPI_Ireduce")
}

//export shmpi_MPI_Ireduce_c
func shmpi_MPI_Ireduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mNB, req, "MPI_Ireduce_c")
}

//export shmpi_MPI_Reduce_init
func shmpi_MPI_Reduce_init(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mPersist, req, "MPI_Reduce_init")
}

//export shmpi_MPI_Reduce_init_c
func shmpi_MPI_Reduce_init_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, false, mPersist, req, "MPI_Reduce_init_c")
}

//export shmpi_MPI_Scan
func shmpi_MPI_Scan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Scan")
}

//export shmpi_MPI_Scan_c
func shmpi_MPI_Scan_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Scan_c")
}

//export shmpi_MPI_Iscan
func shmpi_MPI_Iscan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iscan")
}

//export shmpi_MPI_Iscan_c
func shmpi_MPI_Iscan_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iscan_c")
}

//export shmpi_MPI_Scan_init
func shmpi_MPI_Scan_init(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Scan_init")
}

//export shmpi_MPI_Scan_init_c
func shmpi_MPI_Scan_init_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Scan_init_c")
}

//export shmpi_MPI_Exscan
func shmpi_MPI_Exscan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Exscan")
}

//export shmpi_MPI_Exscan_c
func shmpi_MPI_Exscan_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Exscan_c")
}

//export shmpi_MPI_Iexscan
func shmpi_MPI_Iexscan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iexscan")
}

//export shmpi_MPI_Iexscan_c
func shmpi_MPI_Iexscan_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Iexscan_c")
}

//export shmpi_MPI_Exscan_init
func shmpi_MPI_Exscan_init(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Exscan_init")
}

//export shmpi_MPI_Exscan_init_c
func shmpi_MPI_Exscan_init_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Exscan_init_c")
}

//export shmpi_MPI_Reduce_scatter_block
func shmpi_MPI_Reduce_scatter_block(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Reduce_scatter_block")
}

//export shmpi_MPI_Reduce_scatter_block_c
func shmpi_MPI_Reduce_scatter_block_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mBlock, nil, "MPI_Reduce_scatter_block_c")
}

//export shmpi_MPI_Ireduce_scatter_block
func shmpi_MPI_Ireduce_scatter_block(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Ireduce_scatter_block")
}

//export shmpi_MPI_Ireduce_scatter_block_c
func shmpi_MPI_Ireduce_scatter_block_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mNB, req, "MPI_Ireduce_scatter_block_c")
}

//export shmpi_MPI_Reduce_scatter_block_init
func shmpi_MPI_Reduce_scatter_block_init(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Reduce_scatter_block_init")
}

//export shmpi_MPI_Reduce_scatter_block_init_c
func shmpi_MPI_Reduce_scatter_block_init_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, false, mPersist, req, "MPI_Reduce_scatter_block_init_c")
}

//export shmpi_MPI_Reduce_scatter
func shmpi_MPI_Reduce_scatter(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, false, mBlock, nil, "MPI_Reduce_scatter")
}

//export shmpi_MPI_Reduce_scatter_c
func shmpi_MPI_Reduce_scatter_c(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, true, mBlock, nil, "MPI_Reduce_scatter_c")
}

//export shmpi_MPI_Ireduce_scatter
func shmpi_MPI_Ireduce_scatter(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, false, mNB, req, "MPI_Ireduce_scatter")
}

//export shmpi_MPI_Ireduce_scatter_c
func shmpi_MPI_Ireduce_scatter_c(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, true, mNB, req, "MPI_Ireduce_scatter_c")
}

//export shmpi_MPI_Reduce_scatter_init
func shmpi_MPI_Reduce_scatter_init(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, false, mPersist, req, "MPI_Reduce_scatter_init")
}

//export shmpi_MPI_Reduce_scatter_init_c
func shmpi_MPI_Reduce_scatter_init_c(s, r unsafe.Pointer, counts unsafe.Pointer, dt, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, true, mPersist, req, "MPI_Reduce_scatter_init_c")
}

//export shmpi_MPI_Reduce_local
func shmpi_MPI_Reduce_local(in, inout unsafe.Pointer, count C.int, dt, op C.uintptr_t) C.int {
	return reduceLocal(in, inout, int64(count), dt, op, "MPI_Reduce_local")
}

//export shmpi_MPI_Reduce_local_c
func shmpi_MPI_Reduce_local_c(in, inout unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t) C.int {
	return reduceLocal(in, inout, int64(count), dt, op, "MPI_Reduce_local_c")
}
