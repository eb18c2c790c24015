// waitfor.h and waitfor.hpp, each included twice, compile as strict C++17.
#include "waitfor.h"
#include "waitfor.h"
#include "waitfor.hpp"
#include "waitfor.hpp"

int waitfor_header_compiles_cxx() { return WAITFOR_OK; }
