package ext

import (
	"testing"
	"unsafe"
)

func TestRegister(t *testing.T) {
	t.Cleanup(func() { handlers[FirstKind+1] = nil }) // tests may run again (-count)
	var got int
	Register(FirstKind+1, func(comm any, src, tag int, flags uint8, gen uint32, p unsafe.Pointer, n int) { got = src })
	HandlerOf(FirstKind+1)(nil, 7, 0, 0, 0, nil, 0)
	if got != 7 {
		t.Fatalf("handler not called: %d", got)
	}
	if HandlerOf(FirstKind+2) != nil || HandlerOf(200) != nil {
		t.Fatal("unregistered kinds have handlers")
	}
	for _, k := range []uint8{FirstKind - 1, NumKinds, FirstKind + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%d) did not panic", k)
				}
			}()
			Register(k, func(any, int, int, uint8, uint32, unsafe.Pointer, int) {})
		}()
	}
}

func TestHooks(t *testing.T) {
	var created, freed []any
	OnCreate(func(c any) { created = append(created, c) })
	OnFree(func(c any) { freed = append(freed, c) })
	Created("a")
	Freed("b")
	if len(created) != 1 || created[0] != "a" || len(freed) != 1 || freed[0] != "b" {
		t.Fatalf("hooks: %v %v", created, freed)
	}
}
