package ranks

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Large messages (above the chunk size) use a rendezvous. The sender
// publishes its buffer's address in one of its handshake slots and a
// descriptor in the receiver's inbox. When a receive matches, the
// receiver copies the data straight from the sender's memory with
// process_vm_readv (one copy) and marks the slot done. Where the kernel
// refuses cross-process copies, the receiver asks for a pipelined copy
// instead: the sender streams the data through its eager chunks, up to
// four in flight, and the receiver copies each out.

// rndvRecv starts the transfer of a rendezvous message of total bytes
// from world rank src (handshake slot hs of generation gen) into r.
func (e *engine) rndvRecv(r *Request, src, tag, hs int, gen uint32, total int) {
	p := e.hsPtr(src, hs)
	if hsU32(p, hsGen).Load() != gen {
		e.complete(r, newErr(ErrOther, r.op, int(r.c.toComm[src]), "stale rendezvous handshake"))
		return
	}
	accept := min(total, r.nbytes)
	e.setRecvStatus(r, src, tag, accept)
	if total > r.nbytes {
		r.st.Err = newErr(ErrTruncate, r.op, r.st.Source, "message of %d bytes, buffer of %d", total, r.nbytes)
	}
	r.wpeer = src
	if accept > 0 && e.cma {
		err := e.cmaRead(e.pid(src), r.buf, uintptr(hsU64(p, hsAddr).Load()), accept)
		switch err {
		case nil:
			accept = 0 // all copied
		case unix.EPERM, unix.ENOSYS, unix.EACCES:
			e.cma = false // refused here: pipeline from now on
		default:
			// The sender's memory is gone: it died or exited.
			e.refresh()
			if e.gone[src] {
				e.complete(r, e.goneErr(r.c, src, r.op))
			} else {
				e.complete(r, newErr(ErrOther, r.op, r.st.Source, "process_vm_readv: %v", err))
			}
			return
		}
	}
	if accept == 0 {
		hsU32(p, hsState).Store(hsDone)
		e.dbs[src].Ring()
		e.complete(r, nil)
		return
	}
	hsU64(p, hsAccept).Store(uint64(accept))
	hsU32(p, hsState).Store(hsPipe_)
	e.dbs[src].Ring()
	r.hs, r.gen, r.off, r.accept = hs, gen, 0, accept
	e.active.push(r)
	if e.gone[src] {
		e.needEval = true // the sender already ended: judge it now
	}
}

// cmaRead copies n bytes at raddr in process pid into dst.
func (e *engine) cmaRead(pid int, dst unsafe.Pointer, raddr uintptr, n int) error {
	for off := 0; off < n; {
		e.iov[0].Base = (*byte)(unsafe.Add(dst, off))
		e.iov[0].SetLen(n - off)
		e.riov[0] = unix.RemoteIovec{Base: raddr + uintptr(off), Len: n - off}
		k, err := unix.ProcessVMReadv(pid, e.iov[:], e.riov[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k <= 0 {
			return unix.EFAULT
		}
		off += k
	}
	return nil
}

// advance moves every transfer in the active list along.
func (e *engine) advance() {
	for r := e.active.head; r != nil; {
		next := r.next
		if r.send {
			e.advanceSend(r)
		} else {
			e.pullPipe(r)
		}
		r = next
	}
}

func (e *engine) advanceSend(r *Request) {
	p := e.hsPtr(e.me, r.hs)
	switch hsU32(p, hsState).Load() {
	case hsDone:
		e.active.remove(r)
		e.freeHS(r.hs)
		r.hs = -1
		e.complete(r, nil)
	case hsPipe_:
		e.pushPipe(r, p)
	}
}

// pushPipe fills the pipeline of a rendezvous send with chunks.
func (e *engine) pushPipe(r *Request, p unsafe.Pointer) {
	accept := int(hsU64(p, hsAccept).Load())
	tailW, headW := hsU32(p, hsPipeTail), hsU32(p, hsPipeHead)
	for r.off < accept {
		tail := tailW.Load()
		if tail-headW.Load() >= hsPipeLen {
			return
		}
		k := e.allocChunk(r.wpeer)
		if k < 0 {
			return
		}
		m := min(e.csz, accept-r.off)
		memmove(e.chunkPtr(e.me, k), unsafe.Add(r.buf, r.off), m)
		ent := unsafe.Add(p, hsPipe+8*uintptr(tail%hsPipeLen))
		*(*uint32)(ent) = uint32(k)
		*(*uint32)(unsafe.Add(ent, 4)) = uint32(m)
		tailW.Store(tail + 1)
		e.dbs[r.wpeer].Ring()
		r.off += m
	}
}

// pullPipe drains the pipeline of a rendezvous receive.
func (e *engine) pullPipe(r *Request) {
	src := r.wpeer
	p := e.hsPtr(src, r.hs)
	tailW, headW := hsU32(p, hsPipeTail), hsU32(p, hsPipeHead)
	moved := false
	for {
		head := headW.Load()
		if head == tailW.Load() {
			break
		}
		ent := unsafe.Add(p, hsPipe+8*uintptr(head%hsPipeLen))
		k := int(*(*uint32)(ent))
		m := int(*(*uint32)(unsafe.Add(ent, 4)))
		memmove(unsafe.Add(r.buf, r.off), e.chunkPtr(src, k), m)
		e.freeChunk(src, k)
		r.off += m
		headW.Store(head + 1)
		moved = true
	}
	if r.off >= r.accept {
		e.active.remove(r)
		hsU32(p, hsState).Store(hsDone)
		e.dbs[src].Ring()
		r.hs = -1
		e.complete(r, nil)
	} else if moved {
		e.dbs[src].Ring()
	}
}
