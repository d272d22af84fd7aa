package main

import (
	"reflect"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/win"
)

// The C layer's predefined ops are the functions win knows (so that a
// window across nodes applies them at the target), where win has them.
func TestOpsAreWinsOps(t *testing.T) {
	same := func(name string, a, b any) {
		t.Helper()
		if reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
			t.Errorf("%s: the C layer's op is not win's", name)
		}
	}
	known := func(name string) coll.Op[int32] {
		f, ok := win.PredefinedOp[int32](name)
		if !ok {
			t.Fatalf("win.PredefinedOp[int32](%q) missing", name)
		}
		return f
	}
	same("MPI_SUM on MPI_INT", opsI32.get(MPI_SUM, false), known("sum"))
	same("MPI_BXOR on MPI_INT", opsI32.get(MPI_BXOR, false), known("bxor"))
	same("MPI_REPLACE on MPI_INT", opsI32.get(MPI_REPLACE, false), known("replace"))
	f, _ := win.PredefinedOp[float64]("max")
	same("MPI_MAX on MPI_DOUBLE", opsF64.get(MPI_MAX), f)
	if opsByte.get(MPI_SUM) != nil {
		t.Error("MPI_SUM on MPI_BYTE exists")
	}
}
