#include "textflag.h"

// func addF32AVX2(dst, src *float32, n int)
// dst[i] += src[i] for i < n; 32 elements per step in four registers.
TEXT ·addF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop:
	CMPQ CX, $32
	JLT  tail
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $32, CX
	JMP     loop
tail:
	VZEROUPPER
	TESTQ CX, CX
	JEQ   done
tailloop:
	MOVSS (DI), X0
	ADDSS (SI), X0
	MOVSS X0, (DI)
	ADDQ  $4, DI
	ADDQ  $4, SI
	DECQ  CX
	JNZ   tailloop
done:
	RET

// func addF64AVX2(dst, src *float64, n int)
// dst[i] += src[i] for i < n; 16 elements per step in four registers.
TEXT ·addF64AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop:
	CMPQ CX, $16
	JLT  tail
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VADDPD  (SI), Y0, Y0
	VADDPD  32(SI), Y1, Y1
	VADDPD  64(SI), Y2, Y2
	VADDPD  96(SI), Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $16, CX
	JMP     loop
tail:
	VZEROUPPER
	TESTQ CX, CX
	JEQ   done
tailloop:
	MOVSD (DI), X0
	ADDSD (SI), X0
	MOVSD X0, (DI)
	ADDQ  $8, DI
	ADDQ  $8, SI
	DECQ  CX
	JNZ   tailloop
done:
	RET
