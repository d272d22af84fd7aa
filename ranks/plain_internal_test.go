package ranks

import (
	"errors"
	"testing"
)

// elemSize takes types smaller than a pointer as plain without looking
// them up; a small payload beside a zero-length array of pointers is
// not smaller than a pointer, and is refused like any pointer.
func TestElemSizeSmallTypes(t *testing.T) {
	type pair struct{ A, B int16 }
	type flags [3]bool
	type tricky struct {
		X byte
		P [0]*int
	}
	check := func(name string, sz int, err error, want int, bad bool) {
		t.Helper()
		if bad != errors.Is(err, ErrType) || !bad && sz != want {
			t.Errorf("%s: size %d, %v; want %d, refused %v", name, sz, err, want, bad)
		}
	}
	sz, err := elemSize[byte]()
	check("byte", sz, err, 1, false)
	sz, err = elemSize[pair]()
	check("pair of int16", sz, err, 4, false)
	sz, err = elemSize[flags]()
	check("[3]bool", sz, err, 3, false)
	sz, err = elemSize[float32]()
	check("float32", sz, err, 4, false)
	sz, err = elemSize[tricky]()
	check("byte beside [0]*int", sz, err, 0, true)
}
