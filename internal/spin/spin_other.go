//go:build !amd64

package spin

import "sync/atomic"

func pause() {}

// Without a per-arch release store, fall back to a sequentially
// consistent one: slower, never wrong.
func storeRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

func storeRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
