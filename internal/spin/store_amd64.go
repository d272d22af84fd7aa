//go:build amd64 && !race

package spin

import "unsafe"

// On amd64 (TSO) a plain store is a release store, and the Go compiler
// keeps stores in program order and never moves them across atomics; as
// a Go function it inlines, where an assembly store would cost a call.
func storeRelease64(p *uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(p)) = v
}
