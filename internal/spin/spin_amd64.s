#include "textflag.h"

// func pause()
TEXT ·pause(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func prefetchWrite(p uintptr)
TEXT ·prefetchWrite(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	// PREFETCHW (AX): 0F 0D /1, which Go's assembler does not name.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	RET
