//go:build !amd64

package coll

func addF32(dst, src []float32) bool { return false }
func addF64(dst, src []float64) bool { return false }
