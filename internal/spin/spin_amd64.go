package spin

//go:noescape
func pause()

//go:noescape
func prefetchWrite(p uintptr)
