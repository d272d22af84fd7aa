package ranks

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Plain element types are fixed-size and hold no pointers, so their bytes
// mean the same in another process: numbers, bool, and arrays and structs
// of plain types. Strings, slices, maps, pointers, interfaces, channels
// and functions are refused with ErrType.

// plainCache holds one *plainEntry per element type ever checked;
// recentPlain is a direct-mapped table over it keyed by the type word of
// a nil *T in an interface, so the common case costs a load and a
// compare, and a miss allocates nothing after a type's first use.
var (
	plainCache  sync.Map // type word -> *plainEntry
	recentPlain [16]atomic.Pointer[plainEntry]
)

type plainEntry struct {
	typ  unsafe.Pointer
	size int
	err  error
}

func typeWord(x any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[0] }

// elemSize returns sizeof(T) if T is plain, else ErrType.
func elemSize[T any]() (int, error) {
	// A type smaller than a pointer holds no pointer (a pointer-typed
	// field, even of a zero-length array, would align it to 8): plain.
	// The size is a constant of the instantiation: []byte costs nothing.
	if sz := unsafe.Sizeof(*new(T)); sz > 0 && sz < unsafe.Sizeof(uintptr(0)) {
		return int(sz), nil
	}
	tw := typeWord((*T)(nil))
	slot := &recentPlain[(uintptr(tw)>>4)&15]
	if c := slot.Load(); c != nil && c.typ == tw {
		return c.size, c.err
	}
	var c *plainEntry
	if v, ok := plainCache.Load(tw); ok {
		c = v.(*plainEntry)
	} else {
		sz, err := elemSizeSlow[T]()
		v, _ := plainCache.LoadOrStore(tw, &plainEntry{tw, sz, err})
		c = v.(*plainEntry)
	}
	slot.Store(c)
	return c.size, c.err
}

// elemSizeSlow decides plainness: the common numeric types by a type
// switch, others with reflect.
func elemSizeSlow[T any]() (int, error) {
	switch any((*T)(nil)).(type) {
	case *byte, *int8, *int16, *uint16, *int32, *uint32, *int64, *uint64, *int, *uint,
		*float32, *float64, *complex64, *complex128, *bool, *uintptr:
		var z T
		return int(unsafe.Sizeof(z)), nil
	}
	rt := reflect.TypeFor[T]()
	if err := checkPlain(rt); err != nil {
		return 0, err
	}
	// Size 0 (struct{}, [0]int) is allowed, as MPI allows zero-size
	// datatypes: any number of elements is zero bytes.
	return int(rt.Size()), nil
}

func checkPlain(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	case reflect.Array:
		return checkPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := checkPlain(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return newErr(ErrType, "", -1, fmt.Sprintf("%v is not a plain type (it is or holds a %v)", t, t.Kind()))
}

// bytesOf views a slice of plain T as bytes.
func bytesOf[T any](buf []T, size int) (unsafe.Pointer, int) {
	return unsafe.Pointer(unsafe.SliceData(buf)), len(buf) * size
}

// ElemSize is the size in bytes of one T if T is plain, so that slices of
// it can be sent (MPI_Type_size); otherwise the error is ErrType.
func ElemSize[T any]() (int, error) { return elemSize[T]() }
