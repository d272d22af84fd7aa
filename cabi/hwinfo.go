package main

/*
#include "cabi.h"
*/
import "C"

import "github.com/shmpi/shmpi/ranks"

// MPI_Get_hw_resource_info: ranks.HWResourceInfo's keys ("hwloc://Core"
// -> "true" when the process runs within one core...), in a new info
// object the caller frees. The keys are values MPI_Comm_split_type's
// MPI_COMM_TYPE_HW_GUIDED takes for "mpi_hw_resource_type".

//export shmpi_MPI_Get_hw_resource_info
func shmpi_MPI_Get_hw_resource_info(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Get_hw_resource_info")
	}
	h := newInfo(ranks.HWResourceInfo())
	if h == 0 {
		return failNone(MPI_ERR_INTERN, "MPI_Get_hw_resource_info")
	}
	*out = C.uintptr_t(h)
	return 0
}
