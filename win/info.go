package win

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shmpi/shmpi/ranks"
)

// Info is a set of hints: MPI's info keys for windows, with values. A
// window's creation takes them as Options; Win.Info reads back the ones in effect and Win.SetInfo changes
// those that can change after creation. Keys this package does not know
// are ignored and not read back, as MPI allows; a known key with a value
// it does not accept is ErrArg.
//
//	key                     values (default first)           effect here
//	no_locks                false, true                      true: this member's Lock and LockAll return ErrRMASync
//	accumulate_ordering     rar,raw,war,waw; a subset; none  accepted: accumulates always complete in order here
//	accumulate_ops          same_op_no_op, same_op           accepted: accumulates are as fast whatever the ops
//	same_size               false, true                      with same_disp_unit: no allgather of sizes at creation
//	same_disp_unit          false, true                      (alone for Create; CreateDynamic never gathers them)
//	alloc_shared_noncontig  false, true                      true at every member: each part on pages of its own
//
// Why some save nothing: the lock state of a target is one word and a
// bitmap in the window's control area, zero until used, and no RMA call
// looks at it, so there is no lock work for no_locks to skip; an
// accumulate completes before it returns, so reordering them (a weaker
// accumulate_ordering) gains nothing; and every accumulate on an element
// is one compare-and-swap, or runs under the target's accumulate lock,
// whatever the op, so concurrent different ops (accumulate_ops) cost
// nothing extra either.
//
// same_size and same_disp_unit promise that every member passes the same
// size (displacement unit) and the same hint, as MPI says. Member 0 then
// sends its size and unit with the window memory's descriptor (a
// broadcast the creation makes anyway) instead of every member gathering
// everyone's; a member whose own differ makes the creation fail at every
// member (ErrArg, in the agreement the creation also makes anyway)
// rather than go unnoticed. Members that give them when others do not are
// the program's error, as MPI says: the members then make different
// collective calls.
//
// A bad value is refused before any communication: when every member
// passes it, as usually, every member gets ErrArg and none waits.
type Info map[string]string

// Option is a hint given to a window's creation: an Info or a Flag.
type Option interface {
	apply(h *hints) error
}

// ByteDisplacements makes this member's RMA calls on the window take
// displacements in bytes at every target, whatever displacement units the
// members gave (DispUnit and DispUnitOf still report those). It serves a
// layer that scales displacements itself, such as the C interface, whose
// datatypes may place elements between two of a target's units.
func ByteDisplacements() Option { return byteDisplacements{} }

type byteDisplacements struct{}

func (byteDisplacements) apply(h *hints) error { h.byteDisp = true; return nil }

// Flag is a boolean hint set to true: Flag(k) is Info{k: "true"}.
type Flag string

// Flags.
const (
	// NonContiguous is alloc_shared_noncontig: AllocateShared may place
	// each member's part where it suits the member (here: on pages of its
	// own, so that each is first touched, and placed, by its member)
	// rather than right after the previous member's part. It takes effect
	// only if every member asks for it (the layout is the same at all).
	NonContiguous Flag = keyNoncontig
	// NoLocks is no_locks: this member will not call Lock or LockAll.
	NoLocks Flag = keyNoLocks
	// SameSize and SameDispUnit are same_size and same_disp_unit: every
	// member passes the same size (displacement unit), and this hint.
	SameSize     Flag = keySameSize
	SameDispUnit Flag = keySameDispUnit
)

const (
	keyNoLocks      = "no_locks"
	keyOrdering     = "accumulate_ordering"
	keyAccOps       = "accumulate_ops"
	keySameSize     = "same_size"
	keySameDispUnit = "same_disp_unit"
	keyNoncontig    = "alloc_shared_noncontig"

	orderingDefault = "rar,raw,war,waw"
	accOpsDefault   = "same_op_no_op"
)

// hints are the parsed hints of a window at this member. A window's are
// replaced as a whole (SetInfo), never changed in place, so that Info
// and Lock read them with one atomic load.
type hints struct {
	noLocks      bool
	ordering     string // canonical: "none" or a sub-list of orderingDefault in its order
	accOps       string
	sameSize     bool
	sameDispUnit bool
	noncontig    bool // asked here; Win.noncontig is what every member agreed
	byteDisp     bool // ByteDisplacements
}

func defaultHints() hints { return hints{ordering: orderingDefault, accOps: accOpsDefault} }

func (f Flag) apply(h *hints) error { return h.set(string(f), "true") }

// apply sets the keys of i in key order, so that of several bad values
// the error names the same one every time.
func (i Info) apply(h *hints) error {
	keys := make([]string, 0, len(i))
	for k := range i {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := h.set(k, i[k]); err != nil {
			return err
		}
	}
	return nil
}

// set sets one hint; unknown keys are ignored.
func (h *hints) set(key, value string) error {
	v := strings.ToLower(strings.TrimSpace(value))
	var b *bool
	switch key {
	case keyNoLocks:
		b = &h.noLocks
	case keySameSize:
		b = &h.sameSize
	case keySameDispUnit:
		b = &h.sameDispUnit
	case keyNoncontig:
		b = &h.noncontig
	case keyAccOps:
		if v != "same_op" && v != "same_op_no_op" {
			return badValue(key, value, `"same_op_no_op" or "same_op"`)
		}
		h.accOps = v
		return nil
	case keyOrdering:
		o, ok := canonicalOrdering(v)
		if !ok {
			return badValue(key, value, `"none" or a comma-separated list of rar, raw, war, waw`)
		}
		h.ordering = o
		return nil
	default:
		return nil
	}
	switch v {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return badValue(key, value, `"true" or "false"`)
	}
	return nil
}

// canonicalOrdering is an accumulate_ordering value with its items in
// the default's order, each once.
func canonicalOrdering(v string) (string, bool) {
	if v == "none" {
		return v, true
	}
	var have [4]bool
	all := strings.Split(orderingDefault, ",")
	for item := range strings.SplitSeq(v, ",") {
		i := slices.Index(all, strings.TrimSpace(item))
		if i < 0 {
			return "", false
		}
		have[i] = true
	}
	var out []string
	for i, x := range all {
		if have[i] {
			out = append(out, x)
		}
	}
	return strings.Join(out, ","), true
}

func badValue(key, value, want string) error {
	return &ranks.Error{Class: ranks.ErrArg, Op: "Win.Info", Rank: -1, Detail: fmt.Sprintf("info key %s: value %q, want %s", key, value, want)}
}

// parseOptions reads a creation's options (before any communication, so
// that a bad value fails every member that passes it alike).
func parseOptions(op string, opts []Option) (*hints, error) {
	h := defaultHints()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&h); err != nil {
			if e, ok := err.(*ranks.Error); ok {
				e.Op = op
			}
			return nil, err
		}
	}
	return &h, nil
}

// Info returns the window's hints in effect at this member
// (MPI_Win_get_info): every key this package knows, with its default
// where none was given. alloc_shared_noncontig is true only if the parts
// are on pages of their own (every member of an AllocateShared or
// Allocate asked for it).
func (w *Win) Info() Info {
	if w == nil {
		return nil
	}
	h := w.hints.Load()
	return Info{
		keyNoLocks:      boolString(h.noLocks),
		keyOrdering:     h.ordering,
		keyAccOps:       h.accOps,
		keySameSize:     boolString(h.sameSize),
		keySameDispUnit: boolString(h.sameDispUnit),
		keyNoncontig:    boolString(w.noncontig),
	}
}

// SetInfo changes the window's hints at this member (MPI_Win_set_info):
// no_locks, accumulate_ordering and accumulate_ops take effect; the keys
// that shape the window at its creation (same_size, same_disp_unit,
// alloc_shared_noncontig) are checked and then ignored, as MPI allows,
// and keep their values. Keys not in info keep theirs. MPI makes the
// call collective; here it needs no communication, and each member's
// hints are its own.
func (w *Win) SetInfo(info Info) error {
	const op = "Win.SetInfo"
	if err := w.usable(op); err != nil {
		return err
	}
	w.infoMu.Lock()
	defer w.infoMu.Unlock()
	old := w.hints.Load()
	h := *old
	if err := info.apply(&h); err != nil {
		err.(*ranks.Error).Op = op
		return err
	}
	h.sameSize, h.sameDispUnit, h.noncontig = old.sameSize, old.sameDispUnit, old.noncontig
	w.hints.Store(&h)
	return nil
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
