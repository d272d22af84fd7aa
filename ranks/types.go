package ranks

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// Plain element types are fixed-size and hold no pointers, so their bytes
// mean the same in another process: numbers, bool, and arrays and structs
// of plain types. Strings, slices, maps, pointers, interfaces, channels
// and functions are refused with ErrType.

var plainCache sync.Map // reflect.Type -> error (nil for plain)

// elemSize returns sizeof(T) if T is plain. The common numeric types are
// decided by a type switch on a nil pointer, which neither allocates nor
// locks; others are checked once with reflect and cached.
func elemSize[T any]() (int, error) {
	switch any((*T)(nil)).(type) {
	case *byte, *int8, *int16, *uint16, *int32, *uint32, *int64, *uint64, *int, *uint,
		*float32, *float64, *complex64, *complex128, *bool, *uintptr:
		var z T
		return int(unsafe.Sizeof(z)), nil
	}
	rt := reflect.TypeFor[T]()
	if v, ok := plainCache.Load(rt); ok {
		if v != nil {
			return 0, v.(error)
		}
		return int(rt.Size()), nil
	}
	err := checkPlain(rt)
	if err == nil && rt.Size() == 0 {
		err = newErr(ErrType, "", -1, "%v has size 0", rt)
	}
	if err != nil {
		plainCache.Store(rt, err)
		return 0, err
	}
	plainCache.Store(rt, nil)
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
