package job

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Ports and published names (MPI_Open_port, MPI_Publish_name), between
// ranks of one segment.
//
// A port is a record of the port table: its generation (odd while open,
// bumped on every open and close, so that a stale name never reaches the
// next opener) and its owner. Its name, "shmpi-port:INDEX:GEN", says
// both. The ranks meet through the ports context slot (PortSlot): a
// communicator of every rank slot of the segment that each rank creates
// the first time it uses a port, and which is never freed; the
// connecting root knocks there at the owner, and the two roots then make
// the intercommunicator as IntercommCreate's leaders do.

// PortRec is one port (8 bytes, at the port table + index*8):
//
//	+0 gen   uint32  odd while open
//	+4 owner uint32  world rank slot that opened it
type PortRec struct {
	gen   atomic.Uint32
	owner atomic.Uint32
}

// NameRec is one published name (128 bytes, at the name table +
// index*128):
//
//	+0  state   uint32    0 free, 1 being written, 2 published
//	+4  (pad)
//	+8  port    [24]byte  the port name, NUL-padded
//	+32 service [96]byte  the service name, NUL-padded
type NameRec struct {
	state   atomic.Uint32
	_       uint32
	port    [24]byte
	service [96]byte
}

const (
	// MaxPorts is how many ports may be open at once in a job.
	MaxPorts = 64
	// MaxNames is how many names may be published at once in a job.
	MaxNames = 64
	// MaxServiceLen bounds a published service name.
	MaxServiceLen = 96
	portRecSize   = 8
	nameRecSize   = 128
	portsOff      = spawnOff + spawnRecSize + SpawnPayloadMax
	namesOff      = portsOff + MaxPorts*portRecSize
	// PortSlot is the context slot of the ports' communicator. Context
	// allocation never takes it; it is marked owned at the first use of
	// a port (ClaimPortSlot), so a job without ports counts it free.
	PortSlot = MaxContexts - 1
	// PortGen is the ports' communicator's generation.
	PortGen = 1
)

func init() {
	if unsafe.Sizeof(PortRec{}) != portRecSize || unsafe.Sizeof(NameRec{}) != nameRecSize ||
		unsafe.Offsetof(NameRec{}.service) != 32 || portsOff%64 != 0 {
		panic("job: PortRec or NameRec drifted from its documentation")
	}
}

func (m *Map) port(i int) *PortRec {
	return (*PortRec)(m.Seg.Ptr(m.Seg.Area(areaGlobal).Off + portsOff + uint64(i)*portRecSize))
}

func (m *Map) name(i int) *NameRec {
	return (*NameRec)(m.Seg.Ptr(m.Seg.Area(areaGlobal).Off + namesOff + uint64(i)*nameRecSize))
}

// ClaimPortSlot marks the ports' context slot owned (once per job).
func (m *Map) ClaimPortSlot() {
	rec := m.ctxRec(PortSlot)
	rec.gen.CompareAndSwap(0, PortGen)
}

// OpenPort opens a port owned by rank slot owner and returns its name.
func (m *Map) OpenPort(owner int) (string, bool) {
	for i := range MaxPorts {
		p := m.port(i)
		g := p.gen.Load()
		if g&1 == 0 && p.gen.CompareAndSwap(g, g+1) {
			p.owner.Store(uint32(owner))
			return "shmpi-port:" + strconv.Itoa(i) + ":" + strconv.FormatUint(uint64(g+1), 10), true
		}
	}
	return "", false
}

// ParsePort splits a port name into its index and generation.
func ParsePort(name string) (idx int, gen uint32, err error) {
	rest, ok := strings.CutPrefix(name, "shmpi-port:")
	is, gs, ok2 := strings.Cut(rest, ":")
	i, err1 := strconv.Atoi(is)
	g, err2 := strconv.ParseUint(gs, 10, 32)
	if !ok || !ok2 || err1 != nil || err2 != nil || i < 0 || i >= MaxPorts || g&1 == 0 {
		return 0, 0, fmt.Errorf("%q is not a port name of this runtime", name)
	}
	return i, uint32(g), nil
}

// PortOwner returns the owner of port idx if it is still open in
// generation gen.
func (m *Map) PortOwner(idx int, gen uint32) (int, bool) {
	p := m.port(idx)
	if p.gen.Load() != gen {
		return 0, false
	}
	o := int(p.owner.Load())
	if p.gen.Load() != gen {
		return 0, false
	}
	return o, true
}

// ClosePort closes port idx of generation gen; false if it was not open
// in that generation.
func (m *Map) ClosePort(idx int, gen uint32) bool {
	return m.port(idx).gen.CompareAndSwap(gen, gen+1)
}

// Publish publishes port under service; false if the service is
// published already or the table is full (full reports which).
func (m *Map) Publish(service, port string) (ok, full bool) {
	if _, found := m.Lookup(service); found {
		return false, false
	}
	for i := range MaxNames {
		n := m.name(i)
		if n.state.CompareAndSwap(0, 1) {
			clear(n.port[:])
			clear(n.service[:])
			copy(n.port[:], port)
			copy(n.service[:], service)
			n.state.Store(2)
			// Two publishers of one service may both have found it
			// absent: the one at the higher index gives way.
			for k := range i {
				if o := m.name(k); o.state.Load() == 2 && cstr(o.service[:]) == service {
					n.state.Store(0)
					return false, false
				}
			}
			return true, false
		}
	}
	return false, true
}

// Lookup returns the port published under service.
func (m *Map) Lookup(service string) (string, bool) {
	for i := range MaxNames {
		n := m.name(i)
		if n.state.Load() == 2 && cstr(n.service[:]) == service {
			p := cstr(n.port[:])
			if n.state.Load() == 2 {
				return p, true
			}
		}
	}
	return "", false
}

// Unpublish removes service's name if it names port.
func (m *Map) Unpublish(service, port string) bool {
	for i := range MaxNames {
		n := m.name(i)
		if n.state.Load() == 2 && cstr(n.service[:]) == service && cstr(n.port[:]) == port {
			return n.state.CompareAndSwap(2, 0)
		}
	}
	return false
}

func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
