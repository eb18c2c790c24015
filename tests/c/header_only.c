/* waitfor.h alone, included twice, compiles as strict C99. */
#include "waitfor.h"
#include "waitfor.h"

int waitfor_header_compiles(void) { return WAITFOR_OK + (int)sizeof(waitfor_callbacks) * 0; }
