package win

import (
	"testing"

	"github.com/shmpi/shmpi/coll"
)

// The ops a program names at its call sites are known to a window across
// nodes (applied at the target); others are not (applied at the origin).
func TestNetOpOf(t *testing.T) {
	known := func(name string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: not known", name)
		}
	}
	_, ok := netOpOf[int64](coll.Sum)
	known("coll.Sum (int64)", ok)
	_, ok = netOpOf(coll.Op[float64](coll.Max[float64]))
	known("coll.Max[float64]", ok)
	_, ok = netOpOf[uint8](coll.Bxor)
	known("coll.Bxor (uint8)", ok)
	_, ok = netOpOf[complex128](Replace)
	known("Replace (complex128)", ok)
	a, _ := netOpOf[int32](coll.Sum)
	b, _ := netOpOf[int32](coll.Prod)
	c, _ := netOpOf[int64](coll.Sum)
	if a == b || a == c {
		t.Errorf("codes not distinct: Sum[int32] %#x, Prod[int32] %#x, Sum[int64] %#x", a, b, c)
	}
	if _, ok := netOpOf[int64](func(inout, in []int64) {}); ok {
		t.Error("a function of the program's is known")
	}
	type myInt int64
	if _, ok := netOpOf[myInt](coll.Sum); ok {
		t.Error("coll.Sum of a named type is known")
	}
	// Generic code gets the known op by name.
	if f, ok := PredefinedOp[int32]("bxor"); !ok {
		t.Error("PredefinedOp[int32](bxor) missing")
	} else if _, ok := netOpOf(f); !ok {
		t.Error("PredefinedOp[int32](bxor) not known")
	}
	if _, ok := PredefinedOp[float64]("band"); ok {
		t.Error("PredefinedOp[float64](band) exists")
	}
	if _, ok := PredefinedOp[myInt]("sum"); ok {
		t.Error("PredefinedOp of a named type exists")
	}
	// The server's function for a code does what the op does.
	f := netApplier(c)
	dst, src := []int64{1, 2}, []int64{10, 20}
	if !f(bytesOf(dst), bytesOf(src)) || dst[0] != 11 || dst[1] != 22 {
		t.Errorf("Sum[int64] at the server: %v", dst)
	}
	if f(bytesOf(dst), bytesOf(src[:1])) {
		t.Error("operands of different lengths applied")
	}
	// Replace and NoOp of another type, from PredefinedOp: applied to
	// the bytes; other ops of such a type and Replace named elsewhere
	// are not known.
	type pair struct {
		V int16
		L int32
	}
	rf, ok1 := PredefinedOp[pair]("replace")
	nf, ok2 := PredefinedOp[pair]("no_op")
	if !ok1 || !ok2 {
		t.Fatal("PredefinedOp[pair](replace, no_op) missing")
	}
	rc, ok1 := netOpOf(rf)
	nc, ok2 := netOpOf(nf)
	if !ok1 || !ok2 || rc == nc {
		t.Errorf("pair's replace and no_op: codes %#x %v, %#x %v", rc, ok1, nc, ok2)
	}
	if _, ok := PredefinedOp[pair]("sum"); ok {
		t.Error("PredefinedOp[pair](sum) exists")
	}
	if _, ok := netOpOf[pair](func(inout, in []pair) {}); ok {
		t.Error("a function of the program's on pairs is known")
	}
	pd, ps := []pair{{1, 2}}, []pair{{3, 4}}
	if !netApplier(nc)(bytesOf(pd), bytesOf(ps)) || pd[0] != (pair{1, 2}) {
		t.Errorf("no_op at the server: %v", pd)
	}
	if !netApplier(rc)(bytesOf(pd), bytesOf(ps)) || pd[0] != (pair{3, 4}) {
		t.Errorf("replace at the server: %v", pd)
	}
}
