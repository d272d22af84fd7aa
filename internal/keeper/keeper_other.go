//go:build !amd64

package keeper

func start() (int, error) { return 0, ErrUnsupported }
