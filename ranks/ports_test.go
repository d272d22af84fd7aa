package ranks_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Two groups of the world meet at a port: A's root opens it and
// publishes it, B's root looks it up; Accept and Connect make an
// intercommunicator with point-to-point and collectives across;
// afterwards the port is closed and the name unpublished, and using
// them again is an error.
func TestPortsAcceptConnect(t *testing.T) {
	const n, na = 5, 2
	ranktest.RunOpts(t, ranktest.Options{N: n, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		inA := r.Rank < na
		color := 1
		if inA {
			color = 0
		}
		local, err := r.Comm.Split(color, 0)
		r.Check(err, "split")
		var port string
		if r.Rank == 0 {
			port, err = r.World.OpenPort()
			r.Check(err, "OpenPort")
			r.Check(r.World.PublishName("shmpi-test", port), "PublishName")
			if err := r.World.PublishName("shmpi-test", port); !errors.Is(err, ranks.ErrArg) {
				r.Errorf("second PublishName: %v", err)
			}
		}
		r.Check(coll.Barrier(r.Comm), "barrier after publishing")
		var ic *ranks.Comm
		if inA {
			ic, err = local.Accept(port, 0)
			r.Check(err, "Accept")
		} else {
			if local.Rank() == 0 {
				port, err = r.World.LookupName("shmpi-test")
				r.Check(err, "LookupName")
			}
			ic, err = local.Connect(port, 0)
			r.Check(err, "Connect")
		}
		rsize := n - na
		if !inA {
			rsize = na
		}
		if !ic.IsInter() || ic.RemoteSize() != rsize || ic.Rank() != local.Rank() {
			r.Fatalf("intercomm: inter %v remote %d rank %d", ic.IsInter(), ic.RemoteSize(), ic.Rank())
		}
		// Each member sends its world rank to remote rank 0.
		r.Check(ranks.Send(ic, []int{r.Rank}, 0, 1), "send")
		if ic.Rank() == 0 {
			for range rsize {
				b := []int{-1}
				st, err := ranks.Recv(ic, b, ranks.AnySource, 1)
				r.Check(err, "recv")
				if inA && b[0] != na+st.Source || !inA && b[0] != st.Source {
					r.Errorf("remote rank %d says world rank %d", st.Source, b[0])
				}
			}
		}
		sum := []int{0}
		r.Check(coll.Allreduce(ic, []int{1}, sum, coll.Sum[int]), "allreduce")
		if sum[0] != rsize {
			r.Errorf("allreduce %d, want %d", sum[0], rsize)
		}
		r.Check(ic.Disconnect(), "disconnect")
		r.Check(coll.Barrier(r.Comm), "barrier after disconnecting")
		if r.Rank == 0 {
			r.Check(r.World.UnpublishName("shmpi-test", port), "UnpublishName")
			if err := r.World.UnpublishName("shmpi-test", port); !errors.Is(err, ranks.ErrService) {
				r.Errorf("second UnpublishName: %v, want ErrService", err)
			}
			r.Check(r.World.ClosePort(port), "ClosePort")
			if err := r.World.ClosePort(port); !errors.Is(err, ranks.ErrPort) {
				r.Errorf("second ClosePort: %v", err)
			}
		}
		r.Check(coll.Barrier(r.Comm), "barrier after closing")
		if _, err := r.World.LookupName("shmpi-test"); !errors.Is(err, ranks.ErrName) {
			r.Errorf("LookupName after unpublishing: %v", err)
		}
		if r.Rank == na {
			self, err := r.World.Self()
			r.Check(err, "self")
			if _, err := self.Connect(port, 0); !errors.Is(err, ranks.ErrPort) {
				r.Errorf("Connect to a closed port: %v", err)
			}
			if _, err := self.Connect("not a port", 0); !errors.Is(err, ranks.ErrPort) {
				r.Errorf("Connect to a bad name: %v", err)
			}
		}
		r.Check(local.Free(), "free local")
	})
}

// The connecting root dies after knocking: the accepting root gets
// ErrProcFailed, not a hang (15.2.3), and so does the other acceptor.
func TestPortsConnectorKilled(t *testing.T) {
	const n = 4
	ranktest.RunOpts(t, ranktest.Options{N: n, Timeout: spawnTimeout, Quiet: true, Dies: []int{2},
		Env: []string{"SHMPI_SPAWN_KILL=2@knocked"}}, func(r *ranktest.R) {
		inA := r.Rank < 2
		local, port := halvesWithPort(r, inA)
		if r.Rank == 0 {
			r.Check(ranks.Send(r.Comm, port, 2, 1), "send the port name")
		}
		if inA {
			_, err := local.Accept(cstring(port), 0)
			if !errors.Is(err, ranks.ErrProcFailed) {
				r.Errorf("Accept with a dead connector: %v", err)
			}
			return
		}
		if r.Rank == 2 {
			_, err := ranks.Recv(r.Comm, port, 0, 1)
			r.Check(err, "receive the port name")
		}
		_, err := local.Connect(cstring(port), 0)
		if !errors.Is(err, ranks.ErrProcFailed) {
			r.Errorf("Connect whose root died: %v", err)
		}
	})
}

// The accepting root dies after offering itself to the connector: the
// connecting root, which takes the offer, and its other member get
// ErrProcFailed from the leaders' exchange, and so does the other
// acceptor (15.2.3), none of them a hang.
func TestPortsAcceptorKilledAfterOffer(t *testing.T) {
	const n = 4
	ranktest.RunOpts(t, ranktest.Options{N: n, Timeout: spawnTimeout, Quiet: true, Dies: []int{0},
		Env: []string{"SHMPI_SPAWN_KILL=0@offered"}}, func(r *ranktest.R) {
		inA := r.Rank < 2
		local, port := halvesWithPort(r, inA)
		// Only the connecting root needs the name. Not a Bcast: rank 0
		// may die before a slow member's Bcast ends, which then fails
		// there (a member failed during it), as ULFM allows; 1 run in
		// about 150 under load.
		if r.Rank == 0 {
			r.Check(ranks.Send(r.Comm, port, 2, 1), "send the port name")
		}
		if r.Rank == 2 {
			_, err := ranks.Recv(r.Comm, port, 0, 1)
			r.Check(err, "receive the port name")
		}
		var err error
		if inA {
			_, err = local.Accept(cstring(port), 0)
		} else {
			_, err = local.Connect(cstring(port), 0)
		}
		if !errors.Is(err, ranks.ErrProcFailed) {
			r.Errorf("rank %d: %v, want ErrProcFailed", r.Rank, err)
		}
	})
}

// A group connects to a port that is not open: its root gets ErrPort
// and so do the other members (not ErrProcFailed: nobody failed).
func TestPortsConnectClosed(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		port := make([]byte, 64)
		if r.Rank == 0 {
			p, err := r.World.OpenPort()
			r.Check(err, "OpenPort")
			r.Check(r.World.ClosePort(p), "ClosePort")
			copy(port, p)
		}
		err := coll.Bcast(r.Comm, port, 0)
		r.Check(err, "bcast the port name")
		if _, err := r.Comm.Connect(cstring(port), 1); !errors.Is(err, ranks.ErrPort) {
			r.Errorf("Connect to a closed port: %v, want ErrPort", err)
		}
		// The communicator works after.
		err = coll.Bcast(r.Comm, port, 2)
		r.Check(err, "bcast after")
	})
}

// A Connect that nobody accepts ends with ErrPort: by its timeout (the
// whole group learns), and when the port's owner closes the port while
// the connector's knock waits in its queue. A withdrawn knock does not
// trap a later Accept: ranks 1 and 2 connect again after their timeout,
// and rank 0's Accept pairs with that second attempt.
func TestPortsConnectTimeoutAndClose(t *testing.T) {
	// Sleeps are not cut short by their usual 100 ms bound, so only the
	// close's wake-up can end the third part's wait.
	ranktest.RunOpts(t, ranktest.Options{N: 3, Timeout: spawnTimeout, Quiet: true,
		Env: []string{job.EnvSleepTimeout + "=600000"}}, func(r *ranktest.R) {
		inB := r.Rank > 0
		local, port := halvesWithPort(r, !inB)
		r.Check(coll.Bcast(r.Comm, port, 0), "bcast the port name")
		name := cstring(port)

		// 1. Nobody accepts: the timeout.
		if inB {
			t0 := time.Now()
			if _, err := local.ConnectTimeout(name, 0, 50*time.Millisecond); !errors.Is(err, ranks.ErrPort) {
				r.Errorf("Connect with no accept: %v, want ErrPort", err)
			}
			if local.Rank() == 0 && time.Since(t0) < 50*time.Millisecond {
				r.Errorf("Connect gave up after %v, before its timeout", time.Since(t0))
			}
		}
		r.Check(coll.Barrier(r.Comm), "barrier after the timeout")

		// 2. The withdrawn knock waits at rank 0; a new attempt pairs.
		var ic *ranks.Comm
		var err error
		if inB {
			ic, err = local.ConnectTimeout(name, 0, 0)
			r.Check(err, "Connect after a withdrawn knock")
		} else {
			ic, err = local.Accept(name, 0)
			r.Check(err, "Accept after a withdrawn knock")
		}
		sum := []int{0}
		r.Check(coll.Allreduce(ic, []int{1}, sum, coll.Sum[int]), "allreduce across")
		if want := 1; inB && sum[0] != want || !inB && sum[0] != 2 {
			r.Errorf("allreduce across: %d", sum[0])
		}
		r.Check(ic.Disconnect(), "disconnect")

		// 3. No timeout; the owner closes the port once the knock is
		// queued (and without waiting for it, in the third attempt).
		for _, wait := range []bool{true, false} {
			if inB {
				if _, err := local.ConnectTimeout(name, 0, 0); !errors.Is(err, ranks.ErrPort) {
					r.Errorf("Connect to a port closed while it waited (wait %v): %v, want ErrPort", wait, err)
				}
				if r.Rank == 1 {
					r.Check(ranks.Send(r.Comm, []int{1}, 0, 9), "tell rank 0")
				}
			} else {
				for wait && r.World.KnocksQueued(name) == 0 {
					runtime.Gosched() // polling the queue, not ordering ranks
				}
				r.Check(r.World.ClosePort(name), "ClosePort")
				// Nothing reaches rank 1 from here until it returns:
				// only the close's wake-up can end its sleep.
				_, err := ranks.Recv(r.Comm, []int{0}, 1, 9)
				r.Check(err, "hear from rank 1")
			}
			r.Check(coll.Barrier(r.Comm), "barrier after the close")
			if r.Rank == 0 && wait {
				p, err := r.World.OpenPort()
				r.Check(err, "OpenPort again")
				clear(port)
				copy(port, p)
			}
			r.Check(coll.Bcast(r.Comm, port, 0), "bcast the new port name")
			name = cstring(port)
		}
		r.Check(local.Free(), "free local")
	})
}

// halvesWithPort splits the world into the ranks with first set and the
// others, and opens a port at rank 0, whose name it returns there (64
// bytes, NUL padded; zeros elsewhere).
func halvesWithPort(r *ranktest.R, first bool) (*ranks.Comm, []byte) {
	color := 1
	if first {
		color = 0
	}
	local, err := r.Comm.Split(color, 0)
	r.Check(err, "split")
	port := make([]byte, 64)
	if r.Rank == 0 {
		p, err := r.World.OpenPort()
		r.Check(err, "OpenPort")
		copy(port, p)
	}
	return local, port
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Join over a Unix socket: ranks 0 and 1 get an intercommunicator of
// the two of them; a socket whose other end is closed gives nil and no
// error; a descriptor that is not a socket gives an error.
func TestJoin(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Timeout: spawnTimeout, Quiet: true}, func(r *ranktest.R) {
		name := make([]byte, 64)
		switch r.Rank {
		case 0:
			// An abstract socket: nothing to remove afterwards.
			addr := fmt.Sprintf("@shmpi-join-test-%d", os.Getpid())
			l, err := net.Listen("unix", addr)
			r.Check(err, "listen")
			defer l.Close()
			copy(name, addr)
			r.Check(ranks.Send(r.Comm, name, 1, 1), "send the address")
			conn, err := l.Accept()
			r.Check(err, "accept")
			defer conn.Close()
			joinAndTalk(r, conn.(*net.UnixConn), 1)
		case 1:
			_, err := ranks.Recv(r.Comm, name, 0, 1)
			r.Check(err, "receive the address")
			conn, err := net.Dial("unix", cstring(name))
			r.Check(err, "dial")
			defer conn.Close()
			joinAndTalk(r, conn.(*net.UnixConn), 0)
		case 2:
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			r.Check(err, "socketpair")
			unix.Close(fds[1])
			ic, err := r.World.Join(fds[0])
			if ic != nil || err != nil {
				r.Errorf("Join with a closed peer: %v, %v", ic, err)
			}
			unix.Close(fds[0])
			f, err := os.Open(os.DevNull)
			r.Check(err, "open /dev/null")
			if ic, err := r.World.Join(int(f.Fd())); ic != nil || err == nil {
				r.Errorf("Join on /dev/null: %v, %v", ic, err)
			}
			f.Close()
		}
	})
}

func joinAndTalk(r *ranktest.R, conn *net.UnixConn, peer int) {
	f, err := conn.File()
	r.Check(err, "socket file")
	defer f.Close()
	ic, err := r.World.Join(int(f.Fd()))
	r.Check(err, "Join")
	if ic == nil || !ic.IsInter() || ic.Size() != 1 || ic.RemoteSize() != 1 {
		r.Fatalf("Join gave %v", ic)
	}
	rg, err := ic.RemoteGroup()
	r.Check(err, "remote group")
	if w := rg.WorldRanks(); len(w) != 1 || w[0] != peer {
		r.Errorf("remote group %v, want [%d]", w, peer)
	}
	b := []int{-1}
	_, err = ranks.Sendrecv(ic, []int{r.Rank}, 0, 2, b, 0, 2)
	r.Check(err, "sendrecv")
	if b[0] != peer {
		r.Errorf("peer says %d", b[0])
	}
	r.Check(ic.Disconnect(), "disconnect")
}
