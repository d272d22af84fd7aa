package mpio

import (
	"runtime"
	"sync"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Nonblocking data access. Each call returns a *ranks.Request at once;
// Wait, Test and the many-request forms of package ranks complete it.
// The buffer must not be touched until then. A nil file, a closed one
// and bad arguments of the independent calls are reported at once; a
// revoke, a failure and I/O errors at completion (DESIGN.md rule 2), and
// so are a collective call's bad arguments, since the member still takes
// part in it. n, if not nil, receives the number of elements transferred
// when the request completes (the count a status gives in MPI).
//
// The file pointer a call uses moves when the call starts. An
// independent call runs on a goroutine of its own (or on the goroutine
// that waits for it, if that comes first), so several run at once; a
// collective one runs in the file's queue of collective calls, in the
// order this rank made them. Close waits for this rank's calls to end.

// startIndependent runs job as an independent nonblocking call.
func (f *File) startIndependent(op string, n *int, job func() (int, error)) *ranks.Request {
	req, complete := ext.NewRequest(f.c, op)
	f.pending.Add(1)
	run := sync.OnceFunc(func() {
		k, err := job()
		if n != nil {
			*n = k
		}
		complete(err)
		f.pending.Done() // after complete: Close frees the request's communicator
	})
	ext.SetHelp(req, run)
	go func() {
		// At most ioSlots calls of the rank run on goroutines of their
		// own at once: each blocked in the kernel holds a thread. A
		// waiter runs its call itself meanwhile (help), so a call never
		// waits for a slot that others hold.
		ioSlots <- struct{}{}
		run()
		<-ioSlots
	}()
	return req.(*ranks.Request)
}

var ioSlots = make(chan struct{}, 2*runtime.NumCPU())

// startCollective queues job as a nonblocking collective call.
func (f *File) startCollective(op string, n *int, job func() (int, error)) *ranks.Request {
	req, complete := ext.NewRequest(f.c, op)
	k := f.q.enqueue(func() {
		c, err := job()
		if n != nil {
			*n = c
		}
		complete(err)
	}, true)
	ext.SetHelp(req, func() { f.q.help(k) })
	return req.(*ranks.Request)
}

// revokedLater is the job of a call on a revoked file: it completes with
// ErrRevoked.
func (f *File) revokedLater(op string) func() (int, error) {
	return func() (int, error) { return 0, f.usable(op) }
}

// independent starts an independent nonblocking access: p0 says where
// (and moves a file pointer), at the call.
func independent[T any](f *File, op string, buf []T, write bool, how int, n *int,
	where func(a *access) (int64, error)) (*ranks.Request, error) {
	if err := f.local(op); err != nil {
		return nil, err
	}
	if f.revoked() {
		return f.startIndependent(op, n, f.revokedLater(op)), nil
	}
	a, err := prep(f, op, buf, write, how)
	if err != nil {
		return nil, err
	}
	p0, err := where(&a)
	if err != nil {
		return nil, err
	}
	return f.startIndependent(op, n, func() (int, error) {
		if err := f.usable(op); err != nil {
			return 0, err
		}
		if write {
			if err := f.writeAt(op, &a.v, p0, a.b); err != nil {
				return 0, err
			}
			return a.elems, nil
		}
		got, err := f.readAt(op, &a.v, p0, a.b)
		return a.count(got), err
	}), nil
}

// IreadAt is the nonblocking ReadAt.
func IreadAt[T any](f *File, off int64, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IreadAt"
	return independent(f, op, buf, false, byOffset, n, func(a *access) (int64, error) { return a.at(op, off) })
}

// IwriteAt is the nonblocking WriteAt.
func IwriteAt[T any](f *File, off int64, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IwriteAt"
	return independent(f, op, buf, true, byOffset, n, func(a *access) (int64, error) { return a.at(op, off) })
}

// Iread is the nonblocking Read.
func Iread[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.Iread"
	return independent(f, op, buf, false, byOffset, n, func(a *access) (int64, error) { return f.advance(op, a) })
}

// Iwrite is the nonblocking Write.
func Iwrite[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.Iwrite"
	return independent(f, op, buf, true, byOffset, n, func(a *access) (int64, error) { return f.advance(op, a) })
}

// IreadShared is the nonblocking ReadShared.
func IreadShared[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IreadShared"
	return independent(f, op, buf, false, byShared, n, func(a *access) (int64, error) {
		start, err := f.claim(op, a.etypes())
		return start * a.v.etype, err
	})
}

// IwriteShared is the nonblocking WriteShared.
func IwriteShared[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IwriteShared"
	return independent(f, op, buf, true, byShared, n, func(a *access) (int64, error) {
		start, err := f.claim(op, a.etypes())
		return start * a.v.etype, err
	})
}

// collectiveNB starts a nonblocking collective access.
func collectiveNB[T any](f *File, op string, buf []T, write bool, n *int,
	where func(a *access) (int64, error)) (*ranks.Request, error) {
	if err := f.local(op); err != nil {
		return nil, err
	}
	if f.revoked() {
		return f.startCollective(op, n, f.revokedLater(op)), nil
	}
	a, local := prep(f, op, buf, write, byOffset)
	var p0 int64
	if local == nil {
		p0, local = where(&a)
	}
	return f.startCollective(op, n, func() (int, error) {
		got, err := f.accessAll(op, &a, p0, local, write)
		if err != nil {
			return 0, err
		}
		if write {
			return a.elems, nil
		}
		return a.count(got), nil
	}), nil
}

// IreadAtAll is the nonblocking ReadAtAll.
func IreadAtAll[T any](f *File, off int64, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IreadAtAll"
	return collectiveNB(f, op, buf, false, n, func(a *access) (int64, error) { return a.at(op, off) })
}

// IwriteAtAll is the nonblocking WriteAtAll.
func IwriteAtAll[T any](f *File, off int64, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IwriteAtAll"
	return collectiveNB(f, op, buf, true, n, func(a *access) (int64, error) { return a.at(op, off) })
}

// IreadAll is the nonblocking ReadAll.
func IreadAll[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IreadAll"
	return collectiveNB(f, op, buf, false, n, func(a *access) (int64, error) { return f.advance(op, a) })
}

// IwriteAll is the nonblocking WriteAll.
func IwriteAll[T any](f *File, buf []T, n *int) (*ranks.Request, error) {
	const op = "File.IwriteAll"
	return collectiveNB(f, op, buf, true, n, func(a *access) (int64, error) { return f.advance(op, a) })
}
