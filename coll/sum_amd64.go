package coll

import "golang.org/x/sys/cpu"

// Sums of float32 and float64 vectors with AVX2: the reductions of large
// allreduces spend their time here, and Go does not vectorize loops
// (BenchmarkSumFloat32). Each element is added as the scalar loop adds it,
// so results are bit-identical.

//go:noescape
func addF32AVX2(dst, src *float32, n int)

//go:noescape
func addF64AVX2(dst, src *float64, n int)

var hasAVX2 = cpu.X86.HasAVX2

func addF32(dst, src []float32) bool {
	if !hasAVX2 {
		return false
	}
	addF32AVX2(&dst[0], &src[0], len(dst))
	return true
}

func addF64(dst, src []float64) bool {
	if !hasAVX2 {
		return false
	}
	addF64AVX2(&dst[0], &src[0], len(dst))
	return true
}
