package ranks_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// callLog records attribute callbacks: "copy k v" and "delete k v @c"
// with c the communicator's name.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// take returns the calls so far and forgets them.
func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

func commName(c *ranks.Comm) string {
	if c == nil {
		return "nil"
	}
	return c.Name()
}

var errCallback = errors.New("callback refuses")

// Attribute callbacks: Dup copies as each key's Copy says, deletes run
// on DeleteAttr, on SetAttr replacing a value and at Free (last set
// first), callbacks may call shmpi, a failing Delete keeps the value and
// fails the call, FreeKeyval keeps the callbacks of values still set.
func TestAttrCallbacks(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		var log callLog
		refuse := false
		del := func(name string) ranks.DeleteFunc {
			return func(c *ranks.Comm, k ranks.Keyval, v any) error {
				if refuse && v == "stuck" {
					return errCallback
				}
				// Callbacks may call shmpi, on the same communicator.
				if _, _, err := c.Attr(ranks.KeyTagUB); err != nil {
					return err
				}
				log.add("delete %s %v @%s", name, v, commName(c))
				return nil
			}
		}
		kNull := ranks.NewKeyval(ranks.KeyvalFuncs{Delete: del("null")})
		kDup := ranks.NewKeyval(ranks.KeyvalFuncs{Copy: ranks.DupCopy, Delete: del("dup")})
		kTimes := ranks.NewKeyval(ranks.KeyvalFuncs{
			Copy: func(old *ranks.Comm, k ranks.Keyval, v any) (any, bool, error) {
				log.add("copy times %v", v)
				if _, ok, err := old.Attr(k); !ok || err != nil { // shmpi from a callback
					return nil, false, fmt.Errorf("own attribute not found: %v", err)
				}
				return v.(int) * 10, v.(int)%2 == 0, nil
			},
			Delete: del("times"),
		})
		kBare := ranks.NewKeyval() // no callbacks: not copied, deleted silently

		p, err := r.Comm.Dup()
		r.Check(err, "dup")
		r.Check(p.SetName("p"), "name")
		r.Check(p.SetAttr(kNull, "n"), "set")
		r.Check(p.SetAttr(kDup, "d"), "set")
		r.Check(p.SetAttr(kTimes, 2), "set")
		r.Check(p.SetAttr(kBare, "b"), "set")
		if got := log.take(); len(got) != 0 {
			r.Errorf("callbacks on first sets: %v", got)
		}
		r.Check(p.SetAttr(kDup, "d2"), "replace")
		if got := log.take(); !slices.Equal(got, []string{"delete dup d @p"}) {
			r.Errorf("replacing: %v", got)
		}

		q, err := p.Dup()
		r.Check(err, "dup")
		r.Check(q.SetName("q"), "name")
		if got := log.take(); !slices.Equal(got, []string{"copy times 2"}) {
			r.Errorf("Dup's callbacks: %v", got)
		}
		for _, c := range []struct {
			k    ranks.Keyval
			want any
		}{{kNull, nil}, {kDup, "d2"}, {kTimes, 20}, {kBare, nil}} {
			v, ok, err := q.Attr(c.k)
			r.Check(err, "attr")
			if ok != (c.want != nil) || ok && v != c.want {
				r.Errorf("copy's attribute: %v %v; want %v", v, ok, c.want)
			}
		}
		// An odd value is not kept.
		r.Check(p.SetAttr(kTimes, 3), "replace")
		log.take()
		q2, err := p.Dup()
		r.Check(err, "dup")
		if _, ok, _ := q2.Attr(kTimes); ok {
			r.Errorf("Copy said keep=false but the value was copied")
		}
		log.take()

		// DeleteAttr runs Delete once; deleting again does nothing.
		r.Check(q.DeleteAttr(kTimes), "delete")
		r.Check(q.DeleteAttr(kTimes), "delete again")
		if got := log.take(); !slices.Equal(got, []string{"delete times 20 @q"}) {
			r.Errorf("DeleteAttr: %v", got)
		}

		// A Delete that fails keeps the value and fails the call.
		refuse = true
		r.Check(q.SetAttr(kNull, "stuck"), "set")
		r.Check(q.SetAttr(kBare, "after"), "set")
		if err := q.DeleteAttr(kNull); !errors.Is(err, errCallback) {
			r.Errorf("DeleteAttr with a failing Delete: %v", err)
		}
		if v, ok, _ := q.Attr(kNull); !ok || v != "stuck" {
			r.Errorf("value gone after a failed delete: %v %v", v, ok)
		}
		if err := q.SetAttr(kNull, "other"); !errors.Is(err, errCallback) {
			r.Errorf("SetAttr over a value whose Delete fails: %v", err)
		}
		// Free deletes the last set first; it stops at the failure and
		// the communicator stays usable.
		if err := q.Free(); !errors.Is(err, errCallback) {
			r.Errorf("Free with a failing Delete: %v", err)
		}
		if _, ok, _ := q.Attr(kBare); ok {
			r.Errorf("kBare, set last, was not deleted first")
		}
		peer := (r.Rank + 1) % r.Size
		from := (r.Rank + r.Size - 1) % r.Size
		got := make([]int, 1)
		_, err = ranks.Sendrecv(q, []int{r.Rank}, peer, 1, got, from, 1)
		r.Check(err, "the communicator works after a failed Free")
		refuse = false
		r.Check(q.Free(), "free")
		if got := log.take(); !slices.Equal(got, []string{"delete null stuck @q", "delete dup d2 @q"}) {
			r.Errorf("Free's deletes: %v", got)
		}

		// FreeKeyval: the key goes, values set under it keep their
		// callbacks.
		kOld := kDup
		r.Check(ranks.FreeKeyval(&kDup), "FreeKeyval")
		if kDup != (ranks.Keyval{}) {
			r.Errorf("FreeKeyval left the key %v", kDup)
		}
		if err := p.SetAttr(kOld, "x"); !errors.Is(err, ranks.ErrKeyval) {
			r.Errorf("SetAttr with a freed key: %v", err)
		}
		if _, _, err := p.Attr(kOld); !errors.Is(err, ranks.ErrKeyval) {
			r.Errorf("Attr with a freed key: %v", err)
		}
		if err := ranks.FreeKeyval(&kOld); !errors.Is(err, ranks.ErrKeyval) {
			r.Errorf("FreeKeyval twice: %v", err)
		}
		if err := p.SetAttr(ranks.KeyTagUB, 1); !errors.Is(err, ranks.ErrKeyval) {
			r.Errorf("SetAttr of a predefined key: %v", err)
		}
		q3, err := p.Dup() // the freed key's Copy still runs
		r.Check(err, "dup")
		r.Check(q3.SetName("q3"), "name")
		log.take()
		r.Check(q3.Free(), "free")
		if got := log.take(); !slices.Equal(got, []string{"delete dup d2 @q3"}) {
			r.Errorf("Free of a copy under a freed key: %v", got)
		}
		r.Check(q2.Free(), "free")
		log.take()
		r.Check(p.Free(), "free")
		if got := log.take(); !slices.Equal(got, []string{"delete times 3 @p", "delete dup d2 @p", "delete null n @p"}) {
			r.Errorf("Free's deletes: %v", got)
		}
		if _, _, err := p.Attr(kNull); !errors.Is(err, ranks.ErrComm) {
			r.Errorf("Attr of a freed communicator: %v", err)
		}
	})
}

// A Copy that fails fails the Dup at every member that has the value
// (here all of them): the values copied before it are deleted from the
// new communicator, which is freed, and no context slot leaks.
func TestAttrCopyError(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		var log callLog
		settle := func() { settleAmong(r, []int{0, 1, 2}) }
		copyOK := ranks.NewKeyval(ranks.KeyvalFuncs{Copy: ranks.DupCopy,
			Delete: func(c *ranks.Comm, k ranks.Keyval, v any) error {
				log.add("delete %v @%s", v, commName(c))
				return nil
			}})
		copyBad := ranks.NewKeyval(ranks.KeyvalFuncs{Copy: func(*ranks.Comm, ranks.Keyval, any) (any, bool, error) {
			return nil, false, errCallback
		}})
		p, err := r.Comm.Dup()
		r.Check(err, "dup")
		r.Check(p.SetName("p"), "name")
		r.Check(p.SetAttr(copyOK, "a"), "set")
		r.Check(p.SetAttr(copyBad, "b"), "set")
		settle()
		before := r.World.FreeContexts()
		settle()
		for _, op := range []string{"Dup", "Idup"} {
			var q *ranks.Comm
			var err error
			if op == "Dup" {
				q, err = p.Dup()
			} else {
				var rq *ranks.Request
				rq, err = p.Idup(&q)
				r.Check(err, "Idup")
				_, err = rq.Wait()
			}
			if !errors.Is(err, errCallback) || q != nil {
				r.Errorf("%s with a failing Copy: %v %v", op, q, err)
			}
			// The copy of "a" went to the new communicator, which had no
			// name yet.
			if got := log.take(); !slices.Equal(got, []string{"delete a @"}) {
				r.Errorf("%s: deletes of the copies: %v", op, got)
			}
		}
		settle()
		if after := r.World.FreeContexts(); after != before {
			r.Errorf("free context slots: %d before, %d after", before, after)
		}
		settle() // nobody allocates again before all have counted
		r.Check(p.DeleteAttr(copyBad), "delete")
		q, err := p.Dup()
		r.Check(err, "dup once Copy no longer fails")
		r.Check(q.Free(), "free")
		r.Check(p.Free(), "free")
	})
}

// The attributes of self are deleted at Finalize, the last set first.
func TestAttrSelfAtFinalize(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		var log callLog
		self, err := r.World.Self()
		r.Check(err, "self")
		for _, name := range []string{"first", "second", "third"} {
			k := ranks.NewKeyval(ranks.KeyvalFuncs{Delete: func(c *ranks.Comm, _ ranks.Keyval, v any) error {
				// Still usable: Finalize has not started its own work.
				if _, err := c.Group(); err != nil {
					return err
				}
				log.add("%v", v)
				return nil
			}})
			r.Check(self.SetAttr(k, name), "set")
		}
		r.Check(r.World.Finalize(), "finalize")
		if got := log.take(); !slices.Equal(got, []string{"third", "second", "first"}) {
			r.Errorf("deletes at Finalize: %v", got)
		}
	})
}
