package main

/*
#include "cabi.h"
*/
import "C"

import (
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

// ULFM: the MPIX_ calls over package ulfm and the failure knowledge of
// package ranks.

//export shmpi_MPIX_Comm_revoke
func shmpi_MPIX_Comm_revoke(comm C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_revoke")
	if o == nil {
		return r
	}
	return fail(handle(comm), ulfm.Revoke(o.c), "MPIX_Comm_revoke")
}

//export shmpi_MPIX_Comm_is_revoked
func shmpi_MPIX_Comm_is_revoked(comm C.uintptr_t, flag *C.int) C.int {
	o, r := commArg(comm, "MPIX_Comm_is_revoked")
	if o == nil {
		return r
	}
	if flag == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_is_revoked")
	}
	*flag = 0
	if ulfm.IsRevoked(o.c) {
		*flag = 1
	}
	return 0
}

//export shmpi_MPIX_Comm_agree
func shmpi_MPIX_Comm_agree(comm C.uintptr_t, flag *C.int) C.int {
	o, r := commArg(comm, "MPIX_Comm_agree")
	if o == nil {
		return r
	}
	if flag == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_agree")
	}
	v, err := ulfm.Agree(o.c, int(*flag))
	*flag = C.int(int32(v))
	return fail(handle(comm), err, "MPIX_Comm_agree")
}

//export shmpi_MPIX_Comm_iagree
func shmpi_MPIX_Comm_iagree(comm C.uintptr_t, flag *C.int, req *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_iagree")
	if o == nil {
		return r
	}
	if flag == nil || req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_iagree")
	}
	v := new(int)
	*v = int(*flag)
	rq, err := ulfm.Iagree(o.c, v)
	if err != nil {
		return fail(handle(comm), err, "MPIX_Comm_iagree")
	}
	after := func(s *ranks.Status, err error) error {
		*flag = C.int(int32(*v))
		return err
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
	return 0
}

//export shmpi_MPIX_Comm_shrink
func shmpi_MPIX_Comm_shrink(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_shrink")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_shrink")
	}
	c, err := ulfm.Shrink(o.c)
	if err != nil {
		return fail(handle(comm), err, "MPIX_Comm_shrink")
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPIX_Comm_ishrink
func shmpi_MPIX_Comm_ishrink(comm C.uintptr_t, out *C.uintptr_t, req *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_ishrink")
	if o == nil {
		return r
	}
	if out == nil || req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_ishrink")
	}
	nc := new(*ranks.Comm)
	rq, err := ulfm.Ishrink(o.c, nc)
	if err != nil {
		return fail(handle(comm), err, "MPIX_Comm_ishrink")
	}
	after := func(s *ranks.Status, err error) error {
		if err == nil {
			*out = C.uintptr_t(newComm(*nc, o))
		}
		return err
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
	return 0
}

//export shmpi_MPIX_Comm_failure_ack
func shmpi_MPIX_Comm_failure_ack(comm C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_failure_ack")
	if o == nil {
		return r
	}
	return fail(handle(comm), o.c.FailureAck(), "MPIX_Comm_failure_ack")
}

// failedGroup hands out g, a group of failed members (of both groups of
// an intercommunicator).
func failedGroup(g ranks.Group, err error, out *C.uintptr_t, comm C.uintptr_t, fname string) C.int {
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPIX_Comm_failure_get_acked
func shmpi_MPIX_Comm_failure_get_acked(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_failure_get_acked")
	if o == nil {
		return r
	}
	g, err := o.c.AckedGroup()
	return failedGroup(g, err, out, comm, "MPIX_Comm_failure_get_acked")
}

//export shmpi_MPIX_Comm_get_failed
func shmpi_MPIX_Comm_get_failed(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPIX_Comm_get_failed")
	if o == nil {
		return r
	}
	g, err := o.c.FailedGroup()
	return failedGroup(g, err, out, comm, "MPIX_Comm_get_failed")
}

//export shmpi_MPIX_Comm_ack_failed
func shmpi_MPIX_Comm_ack_failed(comm C.uintptr_t, n C.int, acked *C.int) C.int {
	o, r := commArg(comm, "MPIX_Comm_ack_failed")
	if o == nil {
		return r
	}
	if acked == nil || n < 0 {
		return failCode(handle(comm), MPI_ERR_ARG, "MPIX_Comm_ack_failed")
	}
	k, err := ulfm.AckFailed(o.c, int(n))
	if err != nil {
		return fail(handle(comm), err, "MPIX_Comm_ack_failed")
	}
	*acked = C.int(k)
	return 0
}
