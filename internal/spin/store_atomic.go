//go:build !amd64 || race

package spin

import "sync/atomic"

// Elsewhere, and under the race detector (which cannot see that a plain
// store is a release store on amd64), a sequentially consistent store:
// slower, never wrong.
func storeRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
