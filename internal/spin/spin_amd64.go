package spin

//go:noescape
func pause()

//go:noescape
func storeRelease64(p *uint64, v uint64)
