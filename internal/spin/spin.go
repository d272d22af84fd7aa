// Package spin holds the few CPU-level primitives the hot paths need and
// Go does not export: a spin-wait hint and a release store that is not a
// full fence.
package spin

// Pause hints the CPU that the caller is in a spin-wait loop (PAUSE on
// amd64). It saves power and frees pipeline resources for a sibling
// hyperthread; it makes no syscall.
func Pause() { pause() }

// StoreRelease64 stores v at p with release ordering only. On amd64 a
// plain MOV is a release store (TSO); sync/atomic's Store is an XCHG, a
// full fence that waits for the store buffer to drain. Producers publish
// ring slots and announcements with it.
func StoreRelease64(p *uint64, v uint64) { storeRelease64(p, v) }
