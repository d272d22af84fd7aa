package spin

//go:noescape
func pause()
