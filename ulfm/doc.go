// Package ulfm is MPI's User-Level Failure Mitigation over ranks.Comm:
// Revoke and IsRevoked, Agree (and AgreeBool, Iagree), Shrink (and
// Ishrink), and AckFailed; package ranks has the rest (Comm.FailureAck,
// Comm.FailureGetAcked, Comm.GetFailed, the error classes).
//
// The typical repair, as in the spec's Example 15.5:
//
//	if errors.Is(err, ranks.ErrProcFailed) {
//		ulfm.Revoke(comm)
//	}
//	ok, aerr := ulfm.AgreeBool(comm, err == nil)
//	if aerr != nil || !ok {
//		next, _ := ulfm.Shrink(comm)
//		comm.Free()
//		comm = next
//	}
//
// Agreement runs in shared memory with the kernel as a perfect failure
// detector; agree.go explains the algorithm and why it is uniform.
package ulfm
