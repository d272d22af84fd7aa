// Package spin holds the few CPU-level primitives the hot paths need and
// Go does not export: a spin-wait hint and a release store that is not a
// full fence.
package spin

import "unsafe"

// Pause hints the CPU that the caller is in a spin-wait loop (PAUSE on
// amd64). It saves power and frees pipeline resources for a sibling
// hyperthread; it makes no syscall.
func Pause() { pause() }

// StoreRelease64 stores v at p with release ordering only. On amd64 a
// plain MOV is a release store (TSO); sync/atomic's Store is an XCHG,
// which waits for exclusive ownership of the line. A ring consumer that
// hands a slot back uses this so it does not stall for a cache-line round
// trip on every message.
func StoreRelease64(p *uint64, v uint64) { storeRelease64(p, v) }

// Ptr64 views the 8 bytes at p as a *uint64.
func Ptr64(p unsafe.Pointer) *uint64 { return (*uint64)(p) }

// StoreRelease32 is StoreRelease64 for a 32-bit word.
func StoreRelease32(p *uint32, v uint32) { storeRelease32(p, v) }
