//go:build !amd64

package spin

func pause() {}

func prefetchWrite(p uintptr) {}
