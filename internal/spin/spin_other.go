//go:build !amd64

package spin

func pause() {}
