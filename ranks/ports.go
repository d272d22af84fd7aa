package ranks

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/job"
)

// Ports: Accept and Connect between groups of ranks of one job (the
// first world and spawned worlds share the segment), with port names in
// the segment (job's ports.go), and the name service.
//
// The roots meet on the ports' communicator, a communicator of every
// rank slot in the reserved context slot job.PortSlot, made here at the
// first use of a port and never freed: the connecting root reads the
// port's owner from the table and knocks at it (a message of the port's
// knock tag); the accepting root takes the first knock and offers itself
// to that connector (the offer tag), which confirms. From there the
// roots run IntercommCreate's leader exchange with each other over the
// ports' communicator, and each hands the result to its own group.
//
// The confirmation lets a connector give up: it waits for the offer only
// until its timeout, or until the port is closed, and then withdraws its
// knock (a message of the knock tag, so that it reaches the owner after
// the knock and before any later knock of the same rank). An acceptor
// that took the knock meanwhile finds the withdrawal where it waits for
// the confirmation and takes the next knock instead, so neither side is
// left in a leader exchange the other never joins. ClosePort rings the
// doorbell of every rank whose knock is still queued, and a connector
// re-reads the port's table after knocking, so a connector learns of a
// close whether its knock arrived before it or after.

// Error classes of ports and names.
var (
	// ErrPort: a port name that is not open (MPI_ERR_PORT).
	ErrPort = errors.New("invalid port")
	// ErrName: a service name that is not published (MPI_ERR_NAME), to
	// look up.
	ErrName = errors.New("service name not published")
	// ErrService: a service name that is not published with that port,
	// to unpublish (MPI_ERR_SERVICE).
	ErrService = errors.New("service not published with that port")
)

// portComm returns the ports' communicator, making it at the first call.
func (e *engine) portComm() *Comm {
	e.lock()
	defer e.unlock()
	if e.ports == nil {
		e.t.ClaimPortSlot()
		e.ports = e.newComm(job.PortSlot, job.PortGen, identityGroup(e.n), "ports")
		e.ports.permanent = true
	}
	return e.ports
}

// Kill points of ports (SHMPI_SPAWN_KILL, spawn.go): a connecting root
// that has knocked, an accepting root that has sent its offer.
const (
	portKnocked = "knocked"
	portOffered = "offered"
)

// Tags on the ports' communicator, per port index: knocks, confirmations
// and withdrawals travel on tagKnock, offers on tagOffer, and the
// leaders' exchange on tagLeader.
func tagKnock(idx int) int  { return 2 * idx }
func tagLeader(idx int) int { return 2*idx + 1 }
func tagOffer(idx int) int  { return tagJoin + 1 + idx }

// A message of the knock tag: the port's generation, its kind, and the
// connector's attempt number (engine.connects), which the offer echoes.
const (
	knockKnock    = iota // a connector asks for the port's owner
	knockConfirm         // the connector takes the owner's offer
	knockWithdraw        // the connector gave up before taking an offer
)

// defaultConnectTimeout bounds a Connect's wait for an accept (MPI 4.1,
// MPI_COMM_CONNECT: the attempt "will eventually time out"); MPICH's
// default.
const defaultConnectTimeout = 180 * time.Second

// connectTimeout is the environment's bound (job.EnvConnectTimeout), or
// the default; 0 waits for ever.
func connectTimeout() time.Duration {
	if v, err := strconv.ParseFloat(os.Getenv(job.EnvConnectTimeout), 64); err == nil && v >= 0 {
		return time.Duration(v * float64(time.Second))
	}
	return defaultConnectTimeout
}

// OpenPort opens a port at which this rank can Accept connections
// (MPI_Open_port), and returns its name. At most job.MaxPorts ports are
// open at once in a job.
func (w *World) OpenPort() (string, error) {
	e := w.e
	if err := w.world.usableLocked("OpenPort"); err != nil {
		return "", err
	}
	name, ok := e.t.OpenPort(e.me)
	if !ok {
		return "", newErr(ErrNoMem, "OpenPort", -1, "all %d ports of the job are open", job.MaxPorts)
	}
	e.portComm()
	return name, nil
}

// ClosePort closes a port this rank opened (MPI_Close_port).
func (w *World) ClosePort(port string) error {
	idx, gen, err := job.ParsePort(port)
	if err != nil {
		return newErr(ErrPort, "ClosePort", -1, "%v", err)
	}
	if owner, ok := w.e.t.PortOwner(idx, gen); !ok || owner != w.e.me {
		return newErr(ErrPort, "ClosePort", -1, "port %q is not open here", port)
	}
	e := w.e
	if !e.t.ClosePort(idx, gen) {
		return newErr(ErrPort, "ClosePort", -1, "port %q is not open", port)
	}
	// Connectors whose knocks wait here may sleep: wake them to read
	// the table. A knock published before the close is in the queue
	// after this progress; one published after it is the connector's
	// own to find (meet reads the table after knocking).
	pc := e.portComm()
	e.lock()
	e.progress()
	for m := pc.unexp.head; m != nil; m = m.next {
		if m.tag == tagKnock(idx) && !e.lay.Remote(m.src) {
			e.dbs[m.src].Ring()
		}
	}
	e.unlock()
	return nil
}

// Accept waits for a group of ranks to Connect to port, which root
// opened, and returns an intercommunicator with them (MPI_Comm_accept).
// It is collective over c; port matters at root only. A failure of the
// connecting root makes the root return ErrProcFailed (a root's error
// reaches the other members of c as ErrProcFailed).
func (c *Comm) Accept(port string, root int) (*Comm, error) {
	return c.portCreate(port, root, true, 0, "Accept")
}

// Connect connects c's group to the group that Accepts at port
// (MPI_Comm_connect), and returns an intercommunicator with it. It is
// collective over c; port matters at root only. It waits until the
// port's owner accepts; a port that is not open, or that is closed
// while the root waits, makes it return ErrPort, and so does a wait
// longer than job.EnvConnectTimeout's seconds (default 180).
func (c *Comm) Connect(port string, root int) (*Comm, error) {
	return c.portCreate(port, root, false, connectTimeout(), "Connect")
}

// ConnectTimeout is Connect with the root's wait for an accept bounded
// by timeout instead (0: no bound), MPI's "timeout" info key.
func (c *Comm) ConnectTimeout(port string, root int, timeout time.Duration) (*Comm, error) {
	if timeout < 0 {
		return nil, newErr(ErrArg, "Connect", -1, "timeout %v", timeout)
	}
	return c.portCreate(port, root, false, timeout, "Connect")
}

func (c *Comm) portCreate(port string, root int, accept bool, timeout time.Duration, op string) (*Comm, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if c.inter != nil {
		return nil, newErr(ErrComm, op, -1, "an intercommunicator")
	}
	if root < 0 || root >= c.size {
		return nil, newErr(ErrRank, op, -1, "root %d in a communicator of %d", root, c.size)
	}
	if c.rank != root {
		// IntercommCreate's member side: the root's error reaches here
		// as the leader's failure.
		nc, err := IntercommCreate(c, root, nil, 0, 0)
		return nc, relabel(err, op)
	}
	e := c.e
	idx, gen, err := job.ParsePort(port)
	var peer int
	if err == nil {
		peer, err = e.meet(idx, gen, accept, timeout, op)
	} else {
		err = newErr(ErrPort, op, -1, "%v", err)
	}
	if err != nil {
		// The members wait in IntercommCreate: they are told (ErrPort,
		// or the error's own class for a failure).
		if errors.Is(err, ErrPort) {
			intercommCreate(c, root, nil, 0, 0, err)
		} else {
			IntercommCreate(c, root, nil, 0, 0)
		}
		return nil, err
	}
	nc, err := IntercommCreate(c, root, e.portComm(), peer, tagLeader(idx))
	return nc, relabel(err, op)
}

// meet is the roots' rendezvous at port idx of generation gen: it
// returns the other root's rank slot. A connector waits for an offer at
// most timeout (0: no bound).
func (e *engine) meet(idx int, gen uint32, accept bool, timeout time.Duration, op string) (int, error) {
	pc := e.portComm()
	owner, ok := e.t.PortOwner(idx, gen)
	if !ok {
		return 0, newErr(ErrPort, op, -1, "port shmpi-port:%d:%d is not open", idx, gen)
	}
	if !accept {
		if owner == e.me {
			return 0, newErr(ErrPort, op, -1, "connecting to a port of this rank")
		}
		return owner, e.connectAt(pc, owner, idx, gen, timeout, op)
	}
	if owner != e.me {
		return 0, newErr(ErrPort, op, -1, "the port was opened by rank slot %d, not by the root", owner)
	}
	for {
		// Any rank of the job may knock, so any failure in the job
		// fails a receive from AnySource until it is acknowledged: the
		// failures of others do not concern this wait.
		pc.FailureAck()
		var k [3]uint32
		st, err := Recv(pc, k[:], AnySource, tagKnock(idx))
		switch {
		case err == nil && k[0] == gen && k[1] == knockKnock:
			taken, err := e.offer(pc, st.Source, idx, gen, k[2], op)
			if err != nil || taken {
				return st.Source, err
			}
			// The connector gave up: take the next knock.
		case err == nil:
			// A knock for an earlier opening of this port (its
			// connector learns of the close from the table), or a
			// withdrawal of one: nothing to answer.
		case errors.Is(err, ErrProcFailed) && st.Source == AnySource:
		default:
			return 0, relabel(err, op)
		}
		if _, ok := e.t.PortOwner(idx, gen); !ok {
			return 0, newErr(ErrPort, op, -1, "the port was closed")
		}
	}
}

// offer answers the knock of attempt try from rank slot x: it offers
// this root to x and returns whether x took the offer (false: x had
// given up and withdrawn). x's failure is an error.
func (e *engine) offer(pc *Comm, x, idx int, gen, try uint32, op string) (bool, error) {
	if err := Send(pc, []uint32{gen, try}, x, tagOffer(idx)); err != nil {
		return false, relabel(err, op)
	}
	e.spawnHook(portOffered)
	// x's next message of the knock tag answers this offer, or withdrew
	// the knock before it: the tag's messages from x arrive in order.
	var a [3]uint32
	if _, err := Recv(pc, a[:], x, tagKnock(idx)); err != nil {
		return false, relabel(err, op)
	}
	return a[1] == knockConfirm && a[2] == try, nil
}

// connectAt knocks at port idx of generation gen, which owner opened,
// and waits for its offer: then it confirms, and the roots go on to the
// leaders' exchange. If the port is closed, the wait passes timeout or
// the owner fails first, it withdraws its knock and fails.
func (e *engine) connectAt(pc *Comm, owner, idx int, gen uint32, timeout time.Duration, op string) error {
	e.lock()
	e.connects++
	try := e.connects
	e.unlock()
	if err := Send(pc, []uint32{gen, knockKnock, try}, owner, tagKnock(idx)); err != nil {
		return relabel(err, op)
	}
	e.spawnHook(portKnocked)
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		got, err := e.awaitOffer(pc, owner, idx, gen, ctx, op)
		if err != nil {
			if !errors.Is(err, ErrProcFailed) {
				// Withdraw, so that an acceptor that takes the knock
				// later does not wait for this root in the exchange.
				Send(pc, []uint32{gen, knockWithdraw, try}, owner, tagKnock(idx))
			}
			return err
		}
		var o [2]uint32
		if _, err := Recv(pc, o[:], owner, tagOffer(idx)); err != nil {
			return relabel(err, op)
		}
		if got && o[0] == gen && o[1] == try {
			return relabel(Send(pc, []uint32{gen, knockConfirm, try}, owner, tagKnock(idx)), op)
		}
		// An offer to an attempt that had given up: discard it.
	}
}

// awaitOffer waits until an offer from owner is queued (true), or fails:
// ErrPort when port idx is no longer open in generation gen or ctx ends,
// the owner's failure as a receive from it would report it.
func (e *engine) awaitOffer(pc *Comm, owner, idx int, gen uint32, ctx context.Context, op string) (bool, error) {
	e.lock()
	defer e.unlock()
	var ended *atomic.Bool
	if ctx.Done() != nil {
		var stop func() bool
		ended, stop = e.wakeOnEnd(ctx)
		defer stop()
	}
	var err error
	e.block(func() bool {
		if pc.matchUnexp(owner, tagOffer(idx), false) != nil {
			return true
		}
		// The table is read after the knock was published (the wait
		// fences before it sleeps), so a close either sees the knock
		// queued and rings, or is seen here.
		if _, ok := e.t.PortOwner(idx, gen); !ok {
			err = newErr(ErrPort, op, -1, "the port was closed before its owner accepted")
			return true
		}
		if ended != nil && ended.Load() {
			err = newErr(ErrPort, op, -1, "no accept at the port within the connect timeout")
			return true
		}
		if e.drained && e.gone[owner] {
			err = e.goneErr(pc, owner, op)
			return true
		}
		return false
	}, job.OpRecv, owner, tagOffer(idx), pc.ctx, owner)
	return err == nil, err
}

// PublishName publishes port under service (MPI_Publish_name), for
// LookupName anywhere in the job. A service published already is
// ErrArg.
func (w *World) PublishName(service, port string) error {
	const op = "PublishName"
	if service == "" || len(service) > job.MaxServiceLen {
		return newErr(ErrArg, op, -1, "service name of %d bytes (1 to %d)", len(service), job.MaxServiceLen)
	}
	if _, _, err := job.ParsePort(port); err != nil {
		return newErr(ErrPort, op, -1, "%v", err)
	}
	ok, full := w.e.t.Publish(service, port)
	switch {
	case full:
		return newErr(ErrNoMem, op, -1, "all %d names of the job are published", job.MaxNames)
	case !ok:
		return newErr(ErrArg, op, -1, "service %q is published already", service)
	}
	return nil
}

// LookupName returns the port published under service
// (MPI_Lookup_name); ErrName if none is.
func (w *World) LookupName(service string) (string, error) {
	p, ok := w.e.t.Lookup(service)
	if !ok {
		return "", newErr(ErrName, "LookupName", -1, "service %q", service)
	}
	return p, nil
}

// UnpublishName removes service's name for port (MPI_Unpublish_name);
// ErrService if it is not published with that port.
func (w *World) UnpublishName(service, port string) error {
	if !w.e.t.Unpublish(service, port) {
		return newErr(ErrService, "UnpublishName", -1, "service %q with port %q", service, port)
	}
	return nil
}

// tagJoin is Join's leader exchange on the ports' communicator (above
// every port's tags).
const tagJoin = 2 * job.MaxPorts

// Join makes an intercommunicator between this rank and the process at
// the other end of the connected socket fd, which calls Join too
// (MPI_Comm_join). Both must be ranks of this job (the first world or a
// spawned one): they tell each other their job and rank slot over the
// socket, then meet on the ports' communicator. A peer that closed the
// socket without answering (it failed, or is not a shmpi rank) gives a
// nil communicator and no error, as the ULFM chapter says; a rank of
// another job gives ErrArg.
func (w *World) Join(fd int) (*Comm, error) {
	const op = "Join"
	e := w.e
	if err := w.world.usableLocked(op); err != nil {
		return nil, err
	}
	var mine, theirs [16]byte
	binary.LittleEndian.PutUint64(mine[:], e.seg.JobID())
	binary.LittleEndian.PutUint64(mine[8:], uint64(e.me))
	// The peer's end closed (it failed, or gave up): no communicator.
	gone := func(err error) bool {
		return errors.Is(err, io.EOF) || errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)
	}
	if err := fdIO(fd, mine[:], true); err != nil {
		if gone(err) {
			return nil, nil
		}
		return nil, newErr(ErrArg, op, -1, "write to the socket: %v", err)
	}
	if err := fdIO(fd, theirs[:], false); err != nil {
		if gone(err) {
			return nil, nil
		}
		return nil, newErr(ErrArg, op, -1, "read from the socket: %v", err)
	}
	peer := binary.LittleEndian.Uint64(theirs[8:])
	if binary.LittleEndian.Uint64(theirs[:]) != e.seg.JobID() || peer >= uint64(e.n) || int(peer) == e.me {
		return nil, newErr(ErrArg, op, -1, "the peer is not another rank of this job")
	}
	self, err := w.Self()
	if err != nil {
		return nil, err
	}
	nc, err := IntercommCreate(self, 0, e.portComm(), int(peer), tagJoin)
	return nc, relabel(err, op)
}

// fdIO writes or reads all of b on descriptor fd, blocking or not.
func fdIO(fd int, b []byte, write bool) error {
	for len(b) > 0 {
		var n int
		var err error
		if write {
			n, err = unix.Write(fd, b)
		} else {
			n, err = unix.Read(fd, b)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			ev := int16(unix.POLLIN)
			if write {
				ev = unix.POLLOUT
			}
			if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: ev}}, -1); err != nil && err != unix.EINTR {
				return err
			}
			continue
		case err != nil:
			return err
		case n == 0 && !write:
			return io.EOF
		}
		b = b[n:]
	}
	return nil
}
