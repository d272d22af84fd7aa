package mpio

import (
	"math/bits"
	"sort"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Filetype is the part of the file a view shows (MPI's filetype): all of
// it (Contiguous, the zero value); a block of Block etypes out of every
// Stride etypes, tiled from the view's displacement; or, for any other
// shape, Runs: the visible byte runs of a tile of Extent bytes, tiled
// likewise. The strided form is MPI's resized(contiguous(Block, etype),
// 0, Stride*extent(etype)), or a vector of one block resized to the
// stride: a block-cyclic distribution of an array over P members is
// Filetype{Block: b, Stride: P * b} with the displacement of member r at
// r*b etypes. Runs describe the rest (indexed, darray, subarray
// filetypes): their offsets count from the tile's start, increase, leave
// no overlap, and their lengths are whole etypes; Block and Stride are
// then 0.
type Filetype struct {
	Block  int // etypes in each visible block (0: contiguous, or Runs)
	Stride int // etypes from one block's start to the next's (at least Block)

	Runs   []Run // a general filetype's visible bytes in one tile
	Extent int64 // a general filetype's tile, in bytes
}

// Run is Len visible bytes at byte Off of a filetype's tile.
type Run struct{ Off, Len int64 }

// Contiguous is the filetype that shows the whole file.
var Contiguous = Filetype{}

// view maps the positions of a view's data stream (bytes, counted from
// the view's start through the visible bytes only) to file offsets: a
// tile of ext bytes repeats from disp, and its visible bytes are runs.
// A contiguous view has no runs.
type view struct {
	disp  int64 // the view's start, in bytes of the file
	etype int64 // bytes per etype
	runs  []vrun
	vis   int64 // visible bytes per tile
	ext   int64 // bytes per tile
	ft    Filetype
}

// vrun is a visible run of a tile: n bytes at off, after before visible
// bytes of the tile.
type vrun struct{ off, n, before int64 }

// byteView is a file's view at Open: bytes, from its start, contiguous.
var byteView = view{etype: 1}

// maxOffset bounds file offsets (the kernel's is 2^63-1; this leaves
// room for sums).
const maxOffset = 1 << 62

// Etype is the size of T as an etype (for SetView), or 0 if T is not a
// plain type.
func Etype[T any]() int {
	n, err := ranks.ElemSize[T]()
	if err != nil {
		return 0
	}
	return n
}

// at is the tile and the run of stream byte p (p >= 0, runs set), and p's
// place in its tile's visible bytes.
func (v *view) at(p int64) (tile int64, i int, q int64) {
	tile, q = p/v.vis, p%v.vis
	if len(v.runs) > 1 {
		i = sort.Search(len(v.runs), func(i int) bool { return v.runs[i].before+v.runs[i].n > q })
	}
	return tile, i, q
}

// file is the file offset of stream byte p.
func (v *view) file(p int64) int64 {
	if v.runs == nil {
		return v.disp + p
	}
	t, i, q := v.at(p)
	r := &v.runs[i]
	return v.disp + t*v.ext + r.off + q - r.before
}

// stream is the stream position of the first visible byte at file
// offset x or after it: the number of the view's bytes before x.
func (v *view) stream(x int64) int64 {
	if x <= v.disp {
		return 0
	}
	d := x - v.disp
	if v.runs == nil {
		return d
	}
	t, w := d/v.ext, d%v.ext
	i := sort.Search(len(v.runs), func(i int) bool { return v.runs[i].off+v.runs[i].n > w })
	if i == len(v.runs) {
		return (t + 1) * v.vis
	}
	r := &v.runs[i]
	return t*v.vis + r.before + max(0, w-r.off)
}

// fits reports whether stream bytes up to p1 have file offsets below
// maxOffset.
func (v *view) fits(p1 int64) bool {
	if p1 < 0 || p1 > maxOffset {
		return false
	}
	if v.runs == nil {
		return v.disp+p1 <= maxOffset
	}
	hi, lo := bits.Mul64(uint64(p1/v.vis+1), uint64(v.ext))
	return hi == 0 && lo <= uint64(maxOffset-v.disp)
}

// pieces calls fn for each run of stream bytes [p0, p1) that is
// contiguous in the file: at file offset x, stream position p, n bytes.
// It stops at fn's first error.
func (v *view) pieces(p0, p1 int64, fn func(x, p, n int64) error) error {
	if p0 >= p1 {
		return nil
	}
	if v.runs == nil {
		return fn(v.disp+p0, p0, p1-p0)
	}
	for p := p0; p < p1; {
		t, i, q := v.at(p)
		r := &v.runs[i]
		n := min(r.before+r.n-q, p1-p)
		if err := fn(v.disp+t*v.ext+r.off+q-r.before, p, n); err != nil {
			return err
		}
		p += n
	}
	return nil
}

// contiguous reports whether stream bytes [p0, p1) (p0 < p1) are one run
// of the file.
func (v *view) contiguous(p0, p1 int64) bool {
	if v.runs == nil {
		return true
	}
	t0, i0, _ := v.at(p0)
	t1, i1, _ := v.at(p1 - 1)
	return t0 == t1 && i0 == i1
}

// extent is the file range [lo, hi) that stream bytes [p0, p1) touch
// (p0 < p1).
func (v *view) extent(p0, p1 int64) (lo, hi int64) {
	return v.file(p0), v.file(p1-1) + 1
}

// tiling checks ft and returns the view's tile: its visible runs, with
// the visible bytes and the bytes of one tile; nil runs if ft shows the
// whole file.
func tiling(ft Filetype, etype int64) (runs []vrun, vis, ext int64, ok bool) {
	if ft.Runs == nil {
		if ft.Block == 0 || ft.Block == ft.Stride {
			return nil, 0, 0, true
		}
		b := int64(ft.Block) * etype
		return []vrun{{0, b, 0}}, b, int64(ft.Stride) * etype, true
	}
	if ft.Block != 0 || ft.Stride != 0 || ft.Extent <= 0 || ft.Extent > maxOffset {
		return nil, 0, 0, false
	}
	var end int64
	for i, r := range ft.Runs {
		if r.Len <= 0 || r.Len%etype != 0 || r.Off < end || r.Off > ft.Extent-r.Len {
			return nil, 0, 0, false
		}
		if i > 0 && r.Off == end {
			runs[len(runs)-1].n += r.Len // adjacent: one run
		} else {
			runs = append(runs, vrun{r.Off, r.Len, vis})
		}
		vis += r.Len
		end = r.Off + r.Len
	}
	if vis == 0 {
		return nil, 0, 0, false
	}
	if len(runs) == 1 && runs[0].off == 0 && runs[0].n == ft.Extent {
		return nil, 0, 0, true // all of every tile: contiguous
	}
	return runs, vis, ft.Extent, true
}

// SetView sets this rank's view of the file (MPI_File_set_view): the
// data a rank sees starts at byte disp of the file, counts in etypes of
// etype bytes (offsets, file pointers and counts of the data calls are
// in etypes; Etype[T] gives a type's size), and shows the parts of the
// file that ft says. It is collective; disp and ft may differ between
// members, etype may not (ErrNotSame). It resets the individual file
// pointers and the shared file pointer to zero. The data representation
// is always "native".
func (f *File) SetView(disp int64, etype int, ft Filetype) error {
	const op = "File.SetView"
	if err := f.usable(op); err != nil {
		return err
	}
	var local error
	switch {
	case disp < 0 || disp > maxOffset:
		local = errf(ranks.ErrArg, op, -1, "displacement %d", disp)
	case etype <= 0 || etype > 1<<30:
		local = errf(ranks.ErrArg, op, -1, "etype of %d bytes", etype)
	case ft.Block < 0 || ft.Stride < 0 || ft.Block > 0 && ft.Stride < ft.Block || ft.Block == 0 && ft.Stride != 0:
		local = errf(ranks.ErrArg, op, -1, "filetype %+v: want Block 0 and Stride 0 (contiguous), or 0 < Block <= Stride", ft)
	case ft.Block > 0 && (int64(ft.Stride) > maxOffset/int64(etype)):
		local = errf(ranks.ErrArg, op, -1, "filetype %+v: stride too large", ft)
	}
	runs, vis, ext, ok := tiling(ft, int64(etype))
	if local == nil && !ok {
		local = errf(ranks.ErrArg, op, -1, "filetype runs %v in a tile of %d bytes: want increasing offsets, no overlap, whole etypes of %d bytes", ft.Runs, ft.Extent, etype)
	}
	v := view{disp: disp, etype: int64(etype), ft: ft, runs: runs, vis: vis, ext: ext}
	var err error
	f.q.do(func() {
		if err = f.usable(op); err != nil && local == nil {
			local = err
		}
		all := make([]int64, 2*f.size)
		if err = coll.Allgather(f.c, []int64{codeOf(local), int64(etype)}, all); err != nil {
			err = relabel(err, op)
			return
		}
		if err = agreeArgs(op, local, all, 2); err != nil {
			return
		}
		for k := range f.size {
			if all[2*k+1] != int64(etype) {
				err = errf(ErrNotSame, op, k, "member %d passed an etype of %d bytes, this member %d", k, all[2*k+1], etype)
				return
			}
		}
		f.mu.Lock()
		f.view, f.pos = v, 0
		f.mu.Unlock()
		err = f.install(op, 0)
	})
	return err
}

// GetView returns this rank's view: displacement, etype size, filetype.
func (f *File) GetView() (disp int64, etype int, ft Filetype, err error) {
	if err := f.local("File.GetView"); err != nil {
		return 0, 0, Filetype{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view.disp, int(f.view.etype), f.view.ft, nil
}

// GetByteOffset returns the file offset, in bytes, of the etype at
// offset off of this rank's view (MPI_File_get_byte_offset).
func (f *File) GetByteOffset(off int64) (int64, error) {
	const op = "File.GetByteOffset"
	if err := f.local(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	v := f.view
	f.mu.Unlock()
	if off < 0 || off > maxOffset/v.etype || !v.fits(off*v.etype) {
		return 0, errf(ranks.ErrArg, op, -1, "offset %d", off)
	}
	return v.file(off * v.etype), nil
}

// agreeArgs returns the error of a collective call whose members'
// argument checks are in all (stride int64s per member, the first of
// each its code): this member's own error, or the first other member's.
func agreeArgs(op string, local error, all []int64, stride int) error {
	if local != nil {
		return local
	}
	for k := 0; k*stride < len(all); k++ {
		if code := all[k*stride]; code != 0 {
			return memberErr(op, k, code, "invalid arguments")
		}
	}
	return nil
}
