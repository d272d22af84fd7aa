package ranks

import (
	"fmt"
	"slices"
	"sync"
)

// Attributes (MPI_Comm_set_attr and friends): values a program attaches
// to a communicator under keys from NewKeyval, with the key's callbacks:
// Copy decides what Dup, DupWithInfo, Idup and IdupWithInfo give the new
// communicator (by default nothing: MPI_COMM_NULL_COPY_FN), and Delete
// runs when a value leaves a communicator: DeleteAttr, SetAttr replacing
// it, and Free (then in the reverse of the order the values were first
// set). Callbacks run on the goroutine that made the call, with no lock
// of the runtime held, so they may call shmpi themselves. Predefined,
// read-only keys: KeyTagUB (the largest tag, an int) and KeyFT (whether
// failures are tolerated in this job, a bool: the FT attribute of
// DESIGN.md's rule 11).

// Keyval is an attribute key. The zero Keyval is no key
// (MPI_KEYVAL_INVALID).
type Keyval struct{ id int }

// Predefined attribute keys.
var (
	KeyTagUB = Keyval{-1}
	KeyFT    = Keyval{-2}
	// KeyUniverseSize: the job's rank slots, an int (MPI_UNIVERSE_SIZE;
	// World.UniverseSize).
	KeyUniverseSize = Keyval{-3}
	// KeyAppNum: World.AppNum, an int; unset in the first world
	// (MPI_APPNUM).
	KeyAppNum = Keyval{-4}
)

// CopyFunc decides, for a communicator being duplicated, what its copy
// gets under key k, whose value on old is v: keep false gives it
// nothing; keep true gives it out. An error fails the duplication: the
// values already copied for it are deleted (their keys' Delete runs) and
// the duplicating call returns the error.
type CopyFunc func(old *Comm, k Keyval, v any) (out any, keep bool, err error)

// DeleteFunc is told that value v leaves communicator c under key k. An
// error makes the call that removed it fail and keeps the value. c is
// nil only for a value that Idup copied for a communicator whose creation
// then failed.
type DeleteFunc func(c *Comm, k Keyval, v any) error

// KeyvalFuncs are a key's callbacks (MPI_Comm_create_keyval's copy and
// delete functions). A nil Copy is NullCopy; a nil Delete does nothing
// (MPI_COMM_NULL_DELETE_FN).
type KeyvalFuncs struct {
	Copy   CopyFunc
	Delete DeleteFunc
}

// NullCopy copies nothing (MPI_COMM_NULL_COPY_FN): Dup leaves the key
// unset on the new communicator.
func NullCopy(*Comm, Keyval, any) (any, bool, error) { return nil, false, nil }

// DupCopy gives the new communicator the same value (MPI_COMM_DUP_FN).
func DupCopy(_ *Comm, _ Keyval, v any) (any, bool, error) { return v, true, nil }

// keyval is a key and its callbacks. Values refer to it directly, so
// that FreeKeyval does not take the callbacks from values still set.
type keyval struct {
	k     Keyval
	funcs KeyvalFuncs
}

var keyvals struct {
	mu   sync.Mutex
	next int
	live map[int]*keyval // keys not freed
}

// NewKeyval returns a new attribute key (MPI_Comm_create_keyval), with
// the callbacks given, if any: at most one KeyvalFuncs.
func NewKeyval(f ...KeyvalFuncs) Keyval {
	if len(f) > 1 {
		panic("ranks: NewKeyval takes at most one KeyvalFuncs")
	}
	kv := &keyval{}
	if len(f) == 1 {
		kv.funcs = f[0]
	}
	keyvals.mu.Lock()
	defer keyvals.mu.Unlock()
	keyvals.next++
	kv.k = Keyval{keyvals.next}
	if keyvals.live == nil {
		keyvals.live = map[int]*keyval{}
	}
	keyvals.live[kv.k.id] = kv
	return kv.k
}

// FreeKeyval frees *k and sets it to the zero Keyval
// (MPI_Comm_free_keyval). Values set under it stay, and its callbacks
// still run for them; the key itself can no longer be used.
func FreeKeyval(k *Keyval) error {
	if k == nil {
		return newErr(ErrArg, "FreeKeyval", -1, "nil key")
	}
	if _, err := liveKeyval(*k, "FreeKeyval"); err != nil {
		return err
	}
	keyvals.mu.Lock()
	delete(keyvals.live, k.id)
	keyvals.mu.Unlock()
	*k = Keyval{}
	return nil
}

// liveKeyval is k's record, if k is a key of NewKeyval not freed.
func liveKeyval(k Keyval, op string) (*keyval, error) {
	if k.id <= 0 {
		if k.id == 0 {
			return nil, newErr(ErrKeyval, op, -1, "the zero key")
		}
		return nil, newErr(ErrKeyval, op, -1, "predefined key %d is read-only", k.id)
	}
	keyvals.mu.Lock()
	kv := keyvals.live[k.id]
	keyvals.mu.Unlock()
	if kv == nil {
		return nil, newErr(ErrKeyval, op, -1, "key %d was freed", k.id)
	}
	return kv, nil
}

// attr is one value set on a communicator.
type attr struct {
	kv  *keyval
	val any
}

// commLocal is a communicator's state that only this rank sees and that
// the hot paths never touch: attributes, hints, and the queue of its
// creations (Dup, Idup, Split).
type commLocal struct {
	mu    sync.Mutex // guards attrs and hints; never held while a callback runs
	attrs []*attr    // in the order first set
	hints commHints
	queue createQueue
}

func (l *commLocal) find(id int) *attr {
	for _, a := range l.attrs {
		if a.kv.k.id == id {
			return a
		}
	}
	return nil
}

// remove drops a, if it is still set; it reports whether it was.
func (l *commLocal) remove(a *attr) bool {
	if i := slices.Index(l.attrs, a); i >= 0 {
		l.attrs = slices.Delete(l.attrs, i, i+1)
		return true
	}
	return false
}

// callbackErr names the call whose callback failed; errors.Is and
// errors.As still find the callback's own error.
func callbackErr(op, which string, k Keyval, err error) error {
	return fmt.Errorf("shmpi: %s: %s callback of attribute key %d: %w", op, which, k.id, err)
}

// deleteValue runs kv's Delete for v leaving c.
func (kv *keyval) deleteValue(c *Comm, v any, op string) error {
	if kv.funcs.Delete == nil {
		return nil
	}
	if err := kv.funcs.Delete(c, kv.k, v); err != nil {
		return callbackErr(op, "delete", kv.k, err)
	}
	return nil
}

// usableLocked checks, taking the engine lock, that c may be used.
func (c *Comm) usableLocked(op string) error {
	if c == nil {
		return nilComm(op)
	}
	c.e.lock()
	defer c.e.unlock()
	return c.usable(op)
}

// SetAttr attaches v to c under k. A value already set under k is
// deleted first (k's Delete); if that fails, the old value stays and
// SetAttr returns the error.
func (c *Comm) SetAttr(k Keyval, v any) error {
	if err := c.usableLocked("SetAttr"); err != nil {
		return err
	}
	kv, err := liveKeyval(k, "SetAttr")
	if err != nil {
		return err
	}
	l := &c.local
	l.mu.Lock()
	old := l.find(k.id)
	l.mu.Unlock()
	if old != nil {
		if err := kv.deleteValue(c, old.val, "SetAttr"); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.find(k.id); a != nil {
		a.val = v
	} else {
		l.attrs = append(l.attrs, &attr{kv: kv, val: v})
	}
	return nil
}

// Attr returns c's attribute under k, and whether it is set.
func (c *Comm) Attr(k Keyval) (any, bool, error) {
	if err := c.usableLocked("Attr"); err != nil {
		return nil, false, err
	}
	switch k {
	case KeyTagUB:
		return TagUB, true, nil
	case KeyFT:
		return jobFT, true, nil
	case KeyUniverseSize:
		return c.e.n, true, nil
	case KeyAppNum:
		return appNum, appNum >= 0, nil
	}
	if _, err := liveKeyval(k, "Attr"); err != nil {
		return nil, false, err
	}
	l := &c.local
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.find(k.id); a != nil {
		return a.val, true, nil
	}
	return nil, false, nil
}

// DeleteAttr removes c's attribute under k, after k's Delete accepted it
// (if Delete fails, the value stays and DeleteAttr returns the error).
// Deleting a key that is not set does nothing.
func (c *Comm) DeleteAttr(k Keyval) error {
	if err := c.usableLocked("DeleteAttr"); err != nil {
		return err
	}
	if _, err := liveKeyval(k, "DeleteAttr"); err != nil {
		return err
	}
	l := &c.local
	l.mu.Lock()
	a := l.find(k.id)
	l.mu.Unlock()
	if a == nil {
		return nil
	}
	if err := a.kv.deleteValue(c, a.val, "DeleteAttr"); err != nil {
		return err
	}
	l.mu.Lock()
	l.remove(a)
	l.mu.Unlock()
	return nil
}

// freeAttrs deletes c's attributes at the start of Free, if Free will
// free c (else Free reports why not).
func (c *Comm) freeAttrs() error {
	c.e.lock()
	ok := c.usable("Free") == nil && !c.permanent
	c.e.unlock()
	if !ok {
		return nil
	}
	return c.deleteAttrs("Free", false)
}

// deleteAttrs deletes every attribute of c, the last set first. For
// Free, a Delete that fails stops it: that value and the ones set before
// it stay, and the error is returned, so that Free gives up (MPICH does
// the same for MPI_Comm_free). With all (Finalize), a value whose Delete
// fails is dropped all the same and the first error returned at the end.
func (c *Comm) deleteAttrs(op string, all bool) error {
	l := &c.local
	var first error
	for {
		l.mu.Lock()
		if len(l.attrs) == 0 {
			l.mu.Unlock()
			return first
		}
		a := l.attrs[len(l.attrs)-1]
		l.mu.Unlock()
		if err := a.kv.deleteValue(c, a.val, op); err != nil {
			if !all {
				return err
			}
			if first == nil {
				first = err
			}
		}
		l.mu.Lock()
		l.remove(a)
		l.mu.Unlock()
	}
}

// finalizeAttrs deletes the attributes of self at the start of Finalize,
// as MPI does (a program's way to run code at Finalize: MPI 4.0 section
// 11.2.4), the last set first; it returns the first Delete's error.
func (w *World) finalizeAttrs() error {
	w.e.lock()
	self := w.self
	closed := w.e.closed
	w.e.unlock()
	if self == nil || closed {
		return nil
	}
	return self.deleteAttrs("Finalize", true)
}

// copyAttrs runs the Copy callback of each of c's attributes, in the
// order they were set, and returns the values a duplicate keeps. At the
// first error it stops and returns the error with the values copied so
// far (which the caller deletes).
func (c *Comm) copyAttrs(op string) ([]*attr, error) {
	l := &c.local
	l.mu.Lock()
	src := slices.Clone(l.attrs)
	l.mu.Unlock()
	var out []*attr
	for _, a := range src {
		if a.kv.funcs.Copy == nil {
			continue
		}
		v, keep, err := a.kv.funcs.Copy(c, a.kv.k, a.val)
		if err != nil {
			return out, callbackErr(op, "copy", a.kv.k, err)
		}
		if keep {
			out = append(out, &attr{kv: a.kv, val: v})
		}
	}
	return out, nil
}

// discardCopies deletes copied values that no communicator will hold:
// the duplicate nc (nil if its creation failed) gets each Delete, the
// last copied first. Their errors are dropped: the duplication has
// failed already.
func discardCopies(nc *Comm, copies []*attr, op string) {
	for _, a := range slices.Backward(copies) {
		a.kv.deleteValue(nc, a.val, op)
	}
}

// Info returns the hints c uses (MPI_Comm_get_info): MPI 4.0's
// communicator assertions, each "true" or "false". shmpi accepts them
// and exploits none, which is allowed: they only promise what the
// program will not do.
func (c *Comm) Info() (*Info, error) {
	if err := c.usableLocked("Info"); err != nil {
		return nil, err
	}
	c.local.mu.Lock()
	h := c.local.hints
	c.local.mu.Unlock()
	return h.info(), nil
}

// SetInfo updates c's hints from info (MPI_Comm_set_info): the
// assertions it sets to "true" or "false" change; other keys, and values
// that are not booleans, are ignored, as MPI allows for hints; hints info
// does not mention keep their values. A nil info changes nothing.
func (c *Comm) SetInfo(info *Info) error {
	if err := c.usableLocked("SetInfo"); err != nil {
		return err
	}
	c.local.mu.Lock()
	defer c.local.mu.Unlock()
	c.local.hints.apply(info)
	return nil
}

// Communicator hints: MPI 4.0's assertions (section 7.4.4). All default
// to false.
var hintKeys = [...]string{
	"mpi_assert_no_any_tag",
	"mpi_assert_no_any_source",
	"mpi_assert_exact_length",
	"mpi_assert_allow_overtaking",
	// MPI 4.1: persistent collectives are started in the order of their
	// Init calls at every member (persistentComm).
	"mpi_assert_strict_persistent_collective_ordering",
}

// hintStrictPersistent indexes mpi_assert_strict_persistent_collective_ordering.
const hintStrictPersistent = 4

type commHints [len(hintKeys)]bool

func (h *commHints) apply(info *Info) {
	for i, k := range hintKeys {
		if v, ok := info.lookup(k); ok {
			switch v {
			case "true":
				h[i] = true
			case "false":
				h[i] = false
			}
		}
	}
}

func (h commHints) info() *Info {
	in := NewInfo()
	for i, k := range hintKeys {
		v := "false"
		if h[i] {
			v = "true"
		}
		in.keys = append(in.keys, k)
		in.vals = append(in.vals, v)
	}
	return in
}

func hintsOf(info *Info) commHints {
	var h commHints
	h.apply(info)
	return h
}
