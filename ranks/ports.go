package ranks

import (
	"encoding/binary"
	"errors"
	"io"

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
// knock tag); the accepting root takes the first knock. From there the
// roots run IntercommCreate's leader exchange with each other over the
// ports' communicator, and each hands the result to its own group.

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

// portKnocked is the kill point of a connecting root that has knocked
// (SHMPI_SPAWN_KILL, spawn.go).
const portKnocked = "knocked"

// Tags on the ports' communicator, per port index.
func tagKnock(idx int) int  { return 2 * idx }
func tagLeader(idx int) int { return 2*idx + 1 }

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
	if !w.e.t.ClosePort(idx, gen) {
		return newErr(ErrPort, "ClosePort", -1, "port %q is not open", port)
	}
	return nil
}

// Accept waits for a group of ranks to Connect to port, which root
// opened, and returns an intercommunicator with them (MPI_Comm_accept).
// It is collective over c; port matters at root only. A failure of the
// connecting root makes the root return ErrProcFailed (a root's error
// reaches the other members of c as ErrProcFailed).
func (c *Comm) Accept(port string, root int) (*Comm, error) {
	return c.portCreate(port, root, true, "Accept")
}

// Connect connects c's group to the group that Accepts at port
// (MPI_Comm_connect), and returns an intercommunicator with it. It is
// collective over c; port matters at root only. It waits until the
// port's owner accepts; a port that is not open makes it return ErrPort.
func (c *Comm) Connect(port string, root int) (*Comm, error) {
	return c.portCreate(port, root, false, "Connect")
}

func (c *Comm) portCreate(port string, root int, accept bool, op string) (*Comm, error) {
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
		peer, err = e.meet(idx, gen, accept, op)
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
// returns the other root's rank slot.
func (e *engine) meet(idx int, gen uint32, accept bool, op string) (int, error) {
	pc := e.portComm()
	owner, ok := e.t.PortOwner(idx, gen)
	if !ok {
		return 0, newErr(ErrPort, op, -1, "port shmpi-port:%d:%d is not open", idx, gen)
	}
	if !accept {
		if owner == e.me {
			return 0, newErr(ErrPort, op, -1, "connecting to a port of this rank")
		}
		if err := Send(pc, []uint32{gen}, owner, tagKnock(idx)); err != nil {
			return 0, relabel(err, op)
		}
		e.spawnHook(portKnocked)
		return owner, nil
	}
	if owner != e.me {
		return 0, newErr(ErrPort, op, -1, "the port was opened by rank slot %d, not by the root", owner)
	}
	for {
		// Any rank of the job may knock, so any failure in the job
		// fails a receive from AnySource until it is acknowledged: the
		// failures of others do not concern this wait.
		pc.FailureAck()
		var g [1]uint32
		st, err := Recv(pc, g[:], AnySource, tagKnock(idx))
		switch {
		case err == nil && g[0] == gen:
			return st.Source, nil
		case err == nil:
			// A knock for an earlier opening of this port: its
			// connector is told nothing and stays waiting, as at a
			// port nobody accepts on.
		case errors.Is(err, ErrProcFailed) && st.Source == AnySource:
		default:
			return 0, relabel(err, op)
		}
		if _, ok := e.t.PortOwner(idx, gen); !ok {
			return 0, newErr(ErrPort, op, -1, "the port was closed")
		}
	}
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
