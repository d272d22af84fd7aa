package win

// Window attributes (MPI_Win_get_attr's predefined keys) and names.

// Flavor is how a window was created (MPI_WIN_CREATE_FLAVOR).
type Flavor int

// Flavors.
const (
	FlavorCreate   Flavor = iota + 1 // Create (MPI_WIN_FLAVOR_CREATE)
	FlavorAllocate                   // Allocate (MPI_WIN_FLAVOR_ALLOCATE)
	FlavorDynamic                    // CreateDynamic (MPI_WIN_FLAVOR_DYNAMIC)
	FlavorShared                     // AllocateShared (MPI_WIN_FLAVOR_SHARED)
)

func (f Flavor) String() string {
	switch f {
	case FlavorCreate:
		return "create"
	case FlavorAllocate:
		return "allocate"
	case FlavorDynamic:
		return "dynamic"
	case FlavorShared:
		return "shared"
	}
	return "unknown"
}

// Model is a window's memory model (MPI_WIN_MODEL).
type Model int

// Memory models. Every window here is unified: the RMA calls and this
// rank's loads and stores act on the same memory (package doc).
const (
	ModelSeparate Model = iota + 1 // MPI_WIN_SEPARATE
	ModelUnified                   // MPI_WIN_UNIFIED
)

func (m Model) String() string {
	switch m {
	case ModelSeparate:
		return "separate"
	case ModelUnified:
		return "unified"
	}
	return "unknown"
}

// Base is this member's memory in the window (MPI_WIN_BASE, and
// MPI_WIN_SIZE as its length): its part of an Allocate or AllocateShared
// window, the buffer given to Create, and nil for a dynamic window (whose
// base is MPI_BOTTOM and size 0) or a freed one. (Size is the number of
// members, not this.)
func (w *Win) Base() []byte {
	if w == nil || w.freed.Load() {
		return nil
	}
	switch w.flavor {
	case FlavorAllocate, FlavorShared:
		if w.net != nil {
			return w.own
		}
		return w.parts[w.rank]
	case FlavorCreate:
		return w.own
	}
	return nil
}

// DispUnit is this member's displacement unit (MPI_WIN_DISP_UNIT): 1 in
// a dynamic window.
func (w *Win) DispUnit() int { return w.dispUnit[w.rank] }

// DispUnitOf is member r's displacement unit, by which the RMA calls
// scale a displacement at target r (members may give different units);
// 0 for a rank out of range.
func (w *Win) DispUnitOf(r int) int {
	if r < 0 || r >= len(w.dispUnit) {
		return 0
	}
	return w.dispUnit[r]
}

// unit is what the RMA calls multiply a displacement at target t by: its
// displacement unit, or 1 (ByteDisplacements).
func (w *Win) unit(t int) int {
	if w.byteDisp {
		return 1
	}
	return w.dispUnit[t]
}

// Flavor is how the window was created (MPI_WIN_CREATE_FLAVOR).
func (w *Win) Flavor() Flavor { return w.flavor }

// Model is the window's memory model (MPI_WIN_MODEL): ModelUnified.
func (w *Win) Model() Model { return ModelUnified }

// SetName names the window at this member (MPI_Win_set_name): a local
// label, for the program's messages; it starts empty.
func (w *Win) SetName(name string) error {
	if err := w.usable("Win.SetName"); err != nil {
		return err
	}
	w.name.Store(&name)
	return nil
}

// Name is the window's name at this member (MPI_Win_get_name): empty
// until SetName.
func (w *Win) Name() string {
	if w == nil {
		return ""
	}
	if p := w.name.Load(); p != nil {
		return *p
	}
	return ""
}

// sharedQueryNull is SharedQuery(ranks.ProcNull), as MPI 4.0 defines it:
// the part of the lowest member whose part is not empty, or, if every
// part is, an empty one (member 0's, and its unit).
func (w *Win) sharedQueryNull() ([]byte, int, error) {
	for r := range w.size {
		if w.length[r] > 0 {
			return w.part(r), w.dispUnit[r], nil
		}
	}
	return w.part(0), w.dispUnit[0], nil
}
