package ulfm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// ULFM on intercommunicators, as the chapter says: Agree returns the AND
// of the other group's flags, uniformly; a revoke from either group
// reaches both; after a member of either group dies, Agree raises the
// error everywhere alike, FailedGroup covers both groups, and Shrink
// makes an intercommunicator of the survivors of each group that works.
func TestIntercommULFM(t *testing.T) {
	for _, victim := range []int{1, 3} {
		for _, revoker := range []int{0, 4} {
			t.Run(fmt.Sprintf("victim=%d/revoker=%d", victim, revoker), func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{victim}, Quiet: true}, func(r *ranktest.R) {
					ic, inA := r.Intercomm(2)
					// A passes 6, B 5: A gets 5, B gets 6.
					flag := 5
					if inA {
						flag = 6
					}
					v, err := ulfm.Agree(ic, flag)
					r.Check(err, "agree")
					if want := map[bool]int{true: 5, false: 6}[inA]; v != want {
						r.Errorf("agree: %d, want %d", v, want)
					}
					// Revoke from one member reaches both groups.
					d, err := ic.Dup()
					r.Check(err, "dup")
					if r.Rank == revoker {
						r.Check(ulfm.Revoke(d), "revoke")
					} else {
						_, err := ranks.Recv(d, make([]byte, 1), ranks.AnySource, 1)
						if !errors.Is(err, ranks.ErrRevoked) {
							r.Errorf("recv on the revoked intercommunicator: %v", err)
						}
					}
					if err := coll.Barrier(d); !errors.Is(err, ranks.ErrRevoked) {
						r.Errorf("barrier on the revoked intercommunicator: %v", err)
					}
					// A death: agree raises it uniformly.
					if r.Rank == victim {
						r.Kill()
					}
					_, err = ulfm.Agree(ic, 1)
					if !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("agree with an unacknowledged death: %v", err)
					}
					r.Check(ic.FailureAck(), "ack")
					if _, err := ulfm.Agree(ic, 1); err != nil {
						r.Errorf("agree after the acknowledgement: %v", err)
					}
					g, err := ic.FailedGroup()
					r.Check(err, "failed group")
					if w := g.WorldRanks(); len(w) != 1 || w[0] != victim {
						r.Errorf("failed group %v, want [%d]", w, victim)
					}
					s, err := ulfm.Shrink(ic)
					r.Check(err, "shrink")
					lsize, rsize := 2, 3
					if !inA {
						lsize, rsize = 3, 2
					}
					if victim < 2 == inA {
						lsize--
					} else {
						rsize--
					}
					if !s.IsInter() || s.Size() != lsize || s.RemoteSize() != rsize {
						r.Fatalf("shrunk: inter %v size %d remote %d, want %d and %d", s.IsInter(), s.Size(), s.RemoteSize(), lsize, rsize)
					}
					got, err := coll.AllreduceValue(s, 1, coll.Sum[int])
					r.Check(err, "allreduce on the shrunk intercommunicator")
					if got != rsize {
						r.Errorf("allreduce on the shrunk: %d, want %d", got, rsize)
					}
					r.Check(s.Free(), "free")
				})
			})
		}
	}
}

// A revoke reaches members blocked in an intercommunicator Barrier or
// small Allreduce (which run on the internal union of both groups), both
// when the union exists already and when the revoke comes before the
// first collective made it.
func TestIntercommRevokeInCollective(t *testing.T) {
	for _, warm := range []bool{false, true} {
		for _, revoker := range []int{0, 4} {
			for _, op := range []string{"barrier", "allreduce"} {
				t.Run(fmt.Sprintf("warm=%v/revoker=%d/%s", warm, revoker, op), func(t *testing.T) {
					ranktest.RunOpts(t, ranktest.Options{N: 5, Quiet: true}, func(r *ranktest.R) {
						ic, _ := r.Intercomm(2)
						call := func() error {
							if op == "barrier" {
								return coll.Barrier(ic)
							}
							return coll.Allreduce(ic, []int64{1}, []int64{0}, coll.Sum[int64])
						}
						if warm {
							r.Check(call(), "first collective")
							// Nobody revokes before everyone left it.
							r.Check(coll.Barrier(r.Comm), "world barrier")
						}
						if r.Rank == revoker {
							r.Check(ulfm.Revoke(ic), "revoke")
						} else if err := call(); !errors.Is(err, ranks.ErrRevoked) {
							r.Errorf("%s on the revoked intercommunicator: %v, want ErrRevoked", op, err)
						}
						// The revoker stays until the others returned: the
						// revoke, not its finalize, must end their wait.
						r.Check(coll.Barrier(r.Comm), "world barrier at the end")
					})
				})
			}
		}
	}
}
